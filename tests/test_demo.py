"""The README's main job, run as users run it: `python -m rs_spark demo`, in its own process; and the
brake it stops its query with (rs_spark.examples.stopping)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

import pytest

from rs_spark.examples.stopping import Brake
from rs_spark.streams.subscribers import CallbackSubscriber

from .cpu_load import CpuLoad
from .demo_check import UNDER_LOAD, assert_stopped_cleanly

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_demo_delivers_records_into_the_slow_subscriber_stops_cleanly_and_writes_the_chart(tmp_path):
    chart = tmp_path / "demo.png"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # The shortest run that still shows records through both ends: it stops once one window
    # average reached the Subscriber (a few micro-batches: the watermark must pass a window's end).
    out = subprocess.run(
        [sys.executable, "-m", "rs_spark", "demo", "--batches", "1", "--deliveries", "1", "--chart", str(chart)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, TMPDIR=str(tmp)),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    summary = re.search(
        r"(\d+) sensor records in (\d+) micro-batches \(none above 2000\); (\d+) window averages delivered to a "
        r"Subscriber taking [\d.]+ ms per row; Subscriber signalled: on_complete",
        out.stdout,
    )
    assert summary, out.stdout[-3000:]
    records, batches, delivered = map(int, summary.groups())
    assert records > 0 and batches >= 1 and delivered >= 1, summary.group(0)
    # The table (batch, read, read/s, outstanding, buffered, ms, delivered, total) says the same:
    # one row per micro-batch, its reads and deliveries add up to the summary's, and "total" is the
    # running sum of "delivered" (the chart draws these rows).
    table = [
        [int(c.replace(",", "")) for c in line.split()]
        for line in re.findall(r"^ +\d+(?: +[\d,]+){7}$", out.stdout, re.M)
    ]
    assert len(table) == batches and [r[0] for r in table] == sorted(r[0] for r in table), out.stdout[-3000:]
    assert sum(r[1] for r in table) == records and sum(r[6] for r in table) == delivered, out.stdout[-3000:]
    assert [r[7] for r in table] == [sum(r[6] for r in table[: i + 1]) for i in range(len(table))], out.stdout[-3000:]
    assert "total: delivered so far" in out.stdout  # the columns are explained under the table
    assert "stopped at the time cap" not in out.stdout
    # A normal run is quiet: no traceback, no ERROR line (the query stops at the end of a micro-batch),
    # and a replay log, so no at-most-once warning.
    assert "Traceback" not in out.stderr and not re.search(r"\bERROR\b", out.stderr), out.stderr[-5000:]
    assert "without option logPath" not in out.stderr
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    left = [p.name for p in tmp.iterdir() if p.name.startswith("rs-")]
    assert left == [], f"the demo left {left} in its temp directory"


@pytest.mark.slow
@pytest.mark.timeout(900 + 60)
def test_the_demo_from_the_editable_install_stops_cleanly_under_cpu_load(tmp_path):
    """Issue 32: from an editable install, run from an empty folder, the demo's stop aborted a
    micro-batch and pyspark's accumulator server printed an EOFError, in every run under load.
    One run here (the installed wheel's test in tests/test_wheel.py runs three), to keep the test
    command's time."""
    where = subprocess.run(
        [sys.executable, "-c", "import rs_spark; print(rs_spark.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where.startswith(os.path.join(ROOT, "rs_spark")), f"not this checkout's editable install: {where}"
    with CpuLoad(seconds=900):
        r = subprocess.run(
            [sys.executable, "-m", "rs_spark", *UNDER_LOAD],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=900,
        )
    assert r.returncode == 0, r.stderr[-3000:]
    assert_stopped_cleanly(r.stdout + r.stderr, "the run")


def test_a_held_brake_keeps_on_next_waiting_until_released():
    got: list[int] = []
    brake = Brake(CallbackSubscriber(got.append))

    class Sub:
        def request(self, n):
            pass

        def cancel(self):
            pass

    brake.on_subscribe(Sub())
    brake.on_next(1)  # not held: straight through
    brake.hold()
    t = threading.Thread(target=brake.on_next, args=(2,))
    t.start()
    assert brake.holding.wait(10), "on_next did not reach the brake"
    assert got == [1]
    brake.release()
    t.join(10)
    assert got == [1, 2] and not brake.holding.is_set()


def test_every_demo_flag_has_a_help_text(capsys):
    from rs_spark.__main__ import main

    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    options = capsys.readouterr().out.split("options:", 1)[1]
    entries = re.split(r"\n(?=  -)", options.strip("\n"))
    flags = {m.group(1): m.group(2) for e in entries if (m := re.match(r"\s*(-[-\w]+(?:, --[-\w]+)?)(.*)", e, re.S))}
    assert "--max-records-per-trigger" in " ".join(flags) and "--master" in " ".join(flags), options
    # What is left of an entry once its flag and metavar are gone is its help text.
    bare = [f for f, rest in flags.items() if not re.sub(r"^\s*(\{[^}]*\}|[A-Z_]+)?", "", rest).strip()]
    assert bare == [], f"flags without a help text: {bare}"
