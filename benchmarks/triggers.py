"""The planner's cases a user pays for, run for real: ours next to an earlier checkout, in the same run.

    .venv/bin/python benchmarks/triggers.py [--baseline REV] [--cap 60] [--only abcdef]

Cases (those of issue 39, as a user meets them):
(a) ``trigger(availableNow=True)`` against a publisher that never pauses: an endless ``rs.range_``
    served by ``rs_spark.read_stream``, ``maxRecordsPerTrigger=20000``, into ``format("noop")``;
(b) the same against the demo's sensor factory (``publisher=rs_spark.examples.sensors:readings``,
    no ``total``: it never completes);
(c) ``minRecordsPerTrigger=300``, ``maxTriggerDelay=1s``, ``processingTime`` 200 ms, against an
    endpoint that keeps at most 200 rows until Spark commits (``Retention(max_records=200)``), 1,000
    rows: the time until all 1,000 arrived.

Then issue 50's link cases: (d), (e), (f) ``trigger(availableNow=True)`` against a finite backlog
(20,000 rows of ``from_iterable``, all ready at once) served by ``rs_spark.net`` in another process,
read with ``maxRecordsPerTrigger=5000`` through ``tests/faultrelay.py`` delaying each direction by 0,
100 and 300 ms, into ``format("noop")``: the rows the run read before it ended, and its seconds.

Each case runs in a process of its own (one Spark session each) for ours (this checkout) and for
the baseline (``git worktree`` of ``--baseline`` in a temporary folder, run with this venv; the
shim jar copied from this checkout). Without ``--baseline`` each case has its own: aee9a85 (before
the planner) for (a)-(c), ab88d32 (where issue 50 was found) for (d)-(f). A link case's endpoint is
served by the checkout under test (its own ``rs_spark.net``), a fresh process per run, behind a fresh
relay of this checkout. A case that has not ended after ``--cap`` seconds is stopped and shows as
such: the aee9a85 baseline's (a), (b) and (c) never end.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CASES = {
    "a": "availableNow, endless rs.range_ (endpoint), maxRecordsPerTrigger=20000",
    "b": "availableNow, sensor factory without total",
    "c": "minRecordsPerTrigger=300 at a 200-row retention bound, 1,000 rows",
    "d": "availableNow, 20,000-row backlog served by another process, no delay, maxRecordsPerTrigger=5000",
    "e": "availableNow, the same through a link of 100 ms each way",
    "f": "availableNow, the same through a link of 300 ms each way",
}
BASELINES = {"a": "aee9a85", "b": "aee9a85", "c": "aee9a85", "d": "ab88d32", "e": "ab88d32", "f": "ab88d32"}
LINK_DELAY = {"d": 0.0, "e": 0.1, "f": 0.3}  # seconds each way
BACKLOG = 20_000
LINK_MAX = 5_000  # maxRecordsPerTrigger of the link cases


def _run_case(case: str, cap: float, endpoint: str | None = None, token: str | None = None) -> dict:
    """In this process: one Spark session, one query; what it read and how long it took. A link case
    reads ``endpoint`` (the relay in front of the served backlog) with ``token``."""
    import rs_spark
    from rs_spark import streams as rs
    from rs_spark.spark import local_session

    spark = local_session("rs_spark-bench-triggers", **{"spark.ui.enabled": "false"})
    try:
        if case in LINK_DELAY:
            df = (
                spark.readStream.format("reactive")
                .option("endpoint", endpoint)
                .option("token", token)
                .option("maxRecordsPerTrigger", str(LINK_MAX))
                .schema("id LONG")
                .load()
            )
            w = df.writeStream.format("noop").trigger(availableNow=True)
        elif case == "c":
            from rs_spark.net import Retention

            df = rs_spark.read_stream(
                spark,
                rs.range_(1000).pipe(rs.map(lambda i: {"id": i})),
                schema="id LONG",
                retention=Retention(max_records=200),
                options={"minRecordsPerTrigger": 300, "maxTriggerDelay": "1s", "pollTimeout": "100ms"},
            )
            w = df.writeStream.format("memory").queryName("c_rows").trigger(processingTime="200 milliseconds")
        elif case == "a":
            df = rs_spark.read_stream(
                spark,
                rs.range_(10**12).pipe(rs.map(lambda i: {"id": i})),
                schema="id LONG",
                options={"maxRecordsPerTrigger": 20000},
            )
            w = df.writeStream.format("noop").trigger(availableNow=True)
        else:
            r = spark.readStream.format("reactive").schema("sensor STRING, ts TIMESTAMP, temperature DOUBLE, seq LONG")
            df = (
                r.option("publisher", "rs_spark.examples.sensors:readings")
                .option("maxRecordsPerTrigger", "20000")
                .load()
            )
            w = df.writeStream.format("noop").trigger(availableNow=True)
        return _measure(spark, w.start(), case, cap)
    finally:
        spark.stop()


def _measure(spark, q, case: str, cap: float) -> dict:
    t0 = time.monotonic()
    ended = False
    while time.monotonic() - t0 < cap:
        if case == "c":
            if spark.sql("select count(*) from c_rows").collect()[0][0] >= 1000:
                ended = True
                break
            q.awaitTermination(0.2)
        elif q.awaitTermination(0.5):
            ended = True
            break
    seconds = time.monotonic() - t0
    if case == "c":
        rows = spark.sql("select count(*) from c_rows").collect()[0][0]
    else:
        rows = sum(p["numInputRows"] for p in q.recentProgress)
    failed = q.exception() is not None if not q.isActive else False
    q.stop()
    return {"ended": ended and not failed, "failed": failed, "seconds": round(seconds, 1), "rows": rows}


def _env(code: str) -> dict:
    """The environment of a process importing rs_spark from ``code`` (and this folder's scripts)."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join([code, HERE]), PYSPARK_PYTHON=sys.executable)


def _child(code: str, case: str, cap: float) -> dict:
    """One case in a process of its own, importing rs_spark from ``code``; a link case's backlog is
    served by ``code`` too, in another process, behind a relay of this checkout."""
    if case in LINK_DELAY:
        with _Backlog(code, LINK_DELAY[case]) as backlog:
            return _case_process(code, f"{case!r}, {cap}, {backlog.endpoint!r}, {backlog.token!r}", cap)
    return _case_process(code, f"{case!r}, {cap}", cap)


def _case_process(code: str, args: str, cap: float) -> dict:
    cmd = [sys.executable, "-c", f"import triggers, json; print('RESULT', json.dumps(triggers._run_case({args})))"]
    out = subprocess.run(cmd, env=_env(code), cwd=code, capture_output=True, text=True, timeout=cap + 240)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"ended": False, "failed": True, "seconds": None, "rows": None, "error": out.stderr[-400:]}


def _serve_backlog(rows: int) -> None:
    """In this process: serve ``rows`` rows ``{"id": i}`` of ``from_iterable``, all ready at once, with
    the token read from stdin's first line; print the address, serve until stdin closes."""
    from rs_spark import net
    from rs_spark import streams as rs

    token = sys.stdin.readline().strip()
    server = net.serve(rs.from_iterable([{"id": i} for i in range(rows)]), name="backlog", token=token)
    print(server.address, flush=True)
    sys.stdin.read()  # until the benchmark closes our stdin
    server.stop()


class _Backlog:
    """The link cases' endpoint: ``BACKLOG`` rows served by ``code`` in a process of its own, reached
    through a relay (tests/faultrelay.py of this checkout) that delays each direction by ``delay`` s."""

    def __init__(self, code: str, delay: float) -> None:
        sys.path.insert(0, ROOT)
        from tests.faultrelay import FaultRelay

        self.token = secrets.token_urlsafe()
        cmd = [sys.executable, "-c", f"import triggers; triggers._serve_backlog({BACKLOG})"]
        self.proc = subprocess.Popen(
            cmd, env=_env(code), cwd=code, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(self.token + "\n")
        self.proc.stdin.flush()
        address = self.proc.stdout.readline().strip()
        if not address:
            self.close()
            raise RuntimeError(f"the backlog's process (in {code}) ended without serving")
        self.relay = FaultRelay(address, delay=delay)
        self.endpoint = self.relay.address(address)

    def close(self) -> None:
        if getattr(self, "relay", None) is not None:
            self.relay.close()
        if self.proc.stdin is not None:
            self.proc.stdin.close()  # the process stops its server and exits
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(30)

    def __enter__(self) -> _Backlog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _baseline_checkout(rev: str) -> str:
    where = tempfile.mkdtemp(prefix="rs_spark-baseline-")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "-q", "--detach", where, rev], check=True)
    jars = os.path.join("rs_spark", "jvm", "jars")
    shutil.copytree(os.path.join(ROOT, jars), os.path.join(where, jars), dirs_exist_ok=True)
    return where


def _cell(r: dict) -> str:
    if r.get("rows") is None:
        return "error: " + r.get("error", "?").strip().splitlines()[-1][:80] if r.get("error") else "error"
    how = "ended" if r["ended"] else ("failed" if r["failed"] else "still running")
    return f"{how} after {r['seconds']} s, {r['rows']:,} row{'' if r['rows'] == 1 else 's'}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--baseline", default=None, help="the earlier commit to run next to ours (default: each case's, see above)"
    )
    ap.add_argument("--cap", type=float, default=60.0, help="seconds before a case that has not ended is stopped")
    ap.add_argument("--only", default="".join(CASES), help="cases to run (letters)")
    args = ap.parse_args()
    unknown = sorted(set(args.only) - set(CASES))
    if unknown:
        ap.error(f"--only: no case {', '.join(unknown)} (cases: {''.join(CASES)})")
    revs = {case: args.baseline or BASELINES[case] for case in args.only}
    bases: dict[str, str] = {}
    try:
        for rev in dict.fromkeys(revs.values()):
            bases[rev] = _baseline_checkout(rev)
        print(f"| case | ours ({_rev('HEAD')}) | baseline |\n| --- | --- | --- |")
        for case in args.only:
            ours = _child(ROOT, case, args.cap)
            theirs = _child(bases[revs[case]], case, args.cap)
            print(f"| ({case}) {CASES[case]} | {_cell(ours)} | {revs[case]}: {_cell(theirs)} |", flush=True)
    finally:
        for base in bases.values():
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", base], check=False)


def _rev(ref: str) -> str:
    return subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", ref], capture_output=True, text=True
    ).stdout.strip()


if __name__ == "__main__":
    main()
