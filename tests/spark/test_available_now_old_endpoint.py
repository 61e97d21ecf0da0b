"""Today's ``format("reactive")`` reader under ``trigger(availableNow=True)`` of endpoints served by
build ab88d32, the last before the READY question (issue 50), run for real in processes of their own
(tests/old_build.py): such an endpoint does not say where its publisher's live edge is, so the
reader keeps its own rule and says so in one WARN line per stream; a completing backlog is read
whole, one endpoint and two as partitions.

The reader asks an endpoint at most once per stream in a run (that ask fixes the stream's target),
so the run cannot show that the line is said once however often it asks: the second test puts the
question through the reader's own :class:`LiveEdge` several times, in this process.

The reader's WARN is logged in Spark's Python worker (the streaming source's process), whose output
reaches only the stderr of the process that started Spark: the query runs in a Spark session of its
own, in a subprocess whose stderr the test reads (the suite's session would not show it)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from rs_spark import net
from rs_spark.spark.source.live_edge import LiveEdge
from tests.old_build import OldEndpoint
from tests.subscribers import Recorder
from tests.waits import wait_until

pytestmark = pytest.mark.timeout(600)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKEN = "available-now-old-endpoint"
ROWS = 2_500  # per endpoint: three micro-batches at maxRecordsPerTrigger=1000
B = 10**9  # partition b's ids start here
WARNED = "does not say where its publisher's live edge is"

_QUERIES = r"""
import json, sys, uuid
from rs_spark.spark import local_session

spark = local_session("available-now-old-endpoint", **{"spark.sql.streaming.pollingDelay": "10ms"})
token, chk = sys.argv[1], sys.argv[2]
for i, endpoint in enumerate(sys.argv[3:]):
    df = (spark.readStream.format("reactive").option("endpoint", endpoint).option("token", token)
          .option("maxRecordsPerTrigger", "1000").schema("id LONG").load())
    table = "old_" + uuid.uuid4().hex[:8]
    q = (df.writeStream.format("memory").queryName(table).option("checkpointLocation", f"{chk}/{i}")
         .trigger(availableNow=True).start())
    ended = q.awaitTermination(240)
    error = None if q.exception() is None else str(q.exception())
    if not ended:
        q.stop()
    ids = [r.id for r in spark.sql(f"select id from {table}").collect()]
    batches = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    said = {"endpoint": endpoint, "ended": ended, "error": error, "ids": ids, "batches": batches}
    print(json.dumps(said), flush=True)
"""


@pytest.fixture
def old_endpoints(old_build):
    one = OldEndpoint(old_build, TOKEN, {"one": (0, ROWS)})
    try:
        two = OldEndpoint(old_build, TOKEN, {"a": (0, ROWS), "b": (B, ROWS)})
    except BaseException:
        one.close()
        raise
    yield one, two
    for e in (one, two):
        e.close()


@pytest.mark.slow
def test_available_now_of_earlier_endpoints_reads_every_row_and_warns_once_per_stream(old_endpoints, tmp_path):
    one, two = old_endpoints
    single = one.address("one")
    partitions = f"a={two.address('a')},b={two.address('b')}"
    env = {**os.environ, "PYTHONPATH": ROOT}  # the Spark side is this checkout (its workers inherit it)
    r = subprocess.run(
        [sys.executable, "-c", _QUERIES, TOKEN, str(tmp_path / "chk"), single, partitions],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert r.returncode == 0, r.stderr[-5000:]
    runs = {x["endpoint"]: x for x in map(json.loads, r.stdout.strip().splitlines())}
    expected = {single: set(range(ROWS)), partitions: set(range(ROWS)) | set(range(B, B + ROWS))}
    for endpoint, want in expected.items():
        run = runs[endpoint]
        assert run["ended"] and run["error"] is None, run["error"]
        assert len(run["ids"]) == len(want) and set(run["ids"]) == want, (
            f"{endpoint}: read {len(run['ids'])} rows ({len(set(run['ids']))} distinct) of {len(want)} "
            f"in micro-batches of {run['batches']}"
        )
        assert all(n <= 1000 for n in run["batches"]), run["batches"]
    warned = [line for line in r.stderr.splitlines() if WARNED in line]
    assert len(warned) == 3, "\n".join(warned) or r.stderr[-5000:]
    assert sum(f"endpoint {single} does not say" in w for w in warned) == 1, warned
    for pid in ("a", "b"):
        assert sum(f"partition {pid!r} ({two.address(pid)})" in w for w in warned) == 1, warned
    assert not any(TOKEN in w for w in warned), warned


def test_the_reader_warns_once_per_stream_however_often_it_asks_an_earlier_endpoint(old_endpoints, caplog):
    one, _ = old_endpoints
    r = Recorder(10, refill=False)
    net.connect(one.address("one"), token=TOKEN).resumable().subscribe(r)
    try:
        r.wait_for(10)
        wait_until(lambda: r.s.answers_ready is False, what=lambda: f"answers_ready False, is {r.s.answers_ready}")
        edge = LiveEdge(0.5)
        with caplog.at_level(logging.WARNING, logger="rs_spark.source"):
            for _ in range(3):  # nothing asked of it, no answer awaited: left to the reader's own rule
                assert edge.ask({"p": (r.s, one.address("one"))}) == {}
        warned = [m for m in caplog.messages if WARNED in m]
        assert len(warned) == 1 and f"partition 'p' ({one.address('one')})" in warned[0], warned
    finally:
        r.s.cancel()
