"""The planner's cases a user pays for, run for real: ours next to an earlier checkout, in the same run.

    .venv/bin/python benchmarks/triggers.py [--baseline aee9a85] [--cap 60] [--runs 1]

Cases (those of issue 39, as a user meets them):
(a) ``trigger(availableNow=True)`` against a publisher that never pauses: an endless ``rs.range_``
    served by ``rs_spark.read_stream``, ``maxRecordsPerTrigger=20000``, into ``format("noop")``;
(b) the same against the demo's sensor factory (``publisher=rs_spark.examples.sensors:readings``,
    no ``total``: it never completes);
(c) ``minRecordsPerTrigger=300``, ``maxTriggerDelay=1s``, ``processingTime`` 200 ms, against an
    endpoint that keeps at most 200 rows until Spark commits (``Retention(max_records=200)``), 1,000
    rows: the time until all 1,000 arrived.

Each case runs in a process of its own (one Spark session each) for ours (this checkout) and for
the baseline (``git worktree`` of ``--baseline`` in a temporary folder, run with this venv; the
shim jar copied from this checkout). A case that has not ended after ``--cap`` seconds is stopped
and shows as such: the baseline's (a), (b) and (c) never end.
"""

from __future__ import annotations

import argparse
import json
import os
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
}


def _run_case(case: str, cap: float) -> dict:
    """In this process: one Spark session, one query; what it read and how long it took."""
    import rs_spark
    from rs_spark import streams as rs
    from rs_spark.spark import local_session

    spark = local_session("rs_spark-bench-triggers", **{"spark.ui.enabled": "false"})
    try:
        if case == "c":
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


def _child(code: str, case: str, cap: float) -> dict:
    """One case in a process of its own, importing rs_spark from ``code``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([code, HERE]), PYSPARK_PYTHON=sys.executable)
    cmd = [
        sys.executable,
        "-c",
        f"import triggers, json; print('RESULT', json.dumps(triggers._run_case({case!r}, {cap})))",
    ]
    out = subprocess.run(cmd, env=env, cwd=code, capture_output=True, text=True, timeout=cap + 240)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"ended": False, "failed": True, "seconds": None, "rows": None, "error": out.stderr[-400:]}


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
    return f"{how} after {r['seconds']} s, {r['rows']:,} rows"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default="aee9a85", help="the earlier commit to run next to ours")
    ap.add_argument("--cap", type=float, default=60.0, help="seconds before a case that has not ended is stopped")
    ap.add_argument("--only", default="abc", help="cases to run (letters)")
    args = ap.parse_args()
    base = _baseline_checkout(args.baseline)
    try:
        print(f"| case | ours ({_rev('HEAD')}) | baseline ({args.baseline}) |\n| --- | --- | --- |")
        for case in args.only:
            ours = _child(ROOT, case, args.cap)
            theirs = _child(base, case, args.cap)
            print(f"| ({case}) {CASES[case]} | {_cell(ours)} | {_cell(theirs)} |", flush=True)
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", base], check=False)


def _rev(ref: str) -> str:
    return subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", ref], capture_output=True, text=True
    ).stdout.strip()


if __name__ == "__main__":
    main()
