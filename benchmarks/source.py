"""Rows/s into a noop sink: format("reactive") next to hand-written Python sources and `rate`.

    .venv/bin/python benchmarks/source.py [--batches 8] [--rows 1000000]

One run, one table. Each row runs a streaming query with Trigger.AvailableNow over
``batches`` micro-batches of ``rows`` rows (3 columns: long, double, string) into
``format("noop")``; rows/s = rows / (sum of trigger times of the non-empty micro-batches),
excluding each query's first micro-batch (JVM and Python worker warm-up, 3-6 s here). Rows:
(a) reactive, a Publisher of 1M-row pyarrow RecordBatches;  (b) reactive, a Publisher of dicts;
(c) a minimal hand-written Python source yielding the same RecordBatches (the ceiling);
(d) the same source yielding tuples (what people write by hand today);  (e) Spark's `rate`;
(f) reactive, endpoint mode: the RecordBatch publisher served by rs_spark.net in this process and read
with option endpoint (Arrow codec), the endpoint keeping what it sent until Spark commits
(retention, the default), next to (f') the same with option resumable=false (no retention).
The reactive queries use pollTimeout=10s: the publishers here are finite and complete, so the
timeout never delays a micro-batch, but a short one ended AvailableNow early when a loaded
machine took longer than it to build the next 1M-row batch (a run then read 1 of 8 batches).
Without logPath, micro-batches above 1 MiB are fetched by executors from the reader process
(batchTransport=auto); ``--transport inline`` measures the old way, inside Spark's tasks.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [HERE, os.environ.get("PYTHONPATH")] if p)


def steady(progress) -> float:
    """Rows/s over the non-empty micro-batches after the first (JVM and worker warm-up)."""
    progress = [p for p in progress if p["numInputRows"]][1:]
    rows = sum(p["numInputRows"] for p in progress)
    return rows / (sum(p["durationMs"]["triggerExecution"] for p in progress) / 1000.0)


def measure(query, expected_rows: int) -> float:
    assert query.awaitTermination(600), "benchmark query did not finish"
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    assert rows == expected_rows, f"expected {expected_rows} rows, got {rows}"
    return steady(query.recentProgress)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dict-rows", type=int, default=1_000_000, help="rows per batch for (b) and (d)")
    ap.add_argument(
        "--transport",
        default="auto",
        choices=["auto", "inline", "fetch"],
        help="batchTransport of the reactive queries without logPath",
    )
    args = ap.parse_args()

    import shutil
    import tempfile

    import _baselines as base

    from rs_spark.examples.spark_log import quiet_conf
    from rs_spark.examples.stopping import stop_when_idle
    from rs_spark.spark import local_session

    work = tempfile.mkdtemp(prefix="rs-bench-source-")  # Spark's log configuration, the replay log of (a')
    spark = local_session("rs_spark-bench-source", **quiet_conf(work, "ERROR"))
    spark.dataSource.register(base.HandArrowSource)
    spark.dataSource.register(base.HandTupleSource)
    b, r, dr = args.batches, args.rows, args.dict_rows

    def reactive(factory: str, rows: int, **extra: str) -> float:
        extra.setdefault("batchTransport", args.transport)
        df = (
            spark.readStream.format("reactive")
            .schema(base.SCHEMA)
            .options(**extra)
            .option("publisher", f"_baselines:{factory}")
            .option("publisher.batches", b)
            .option("publisher.rows", rows)
            .option("maxRecordsPerTrigger", rows)
            .option("maxBufferedRecords", max(rows, 2))
            .option("pollTimeout", "10s")
            .load()
        )
        return measure(df.writeStream.format("noop").trigger(availableNow=True).start(), b * rows)

    def endpoint(rows: int, resumable: bool) -> float:
        from rs_spark import net
        from rs_spark import streams as rs

        server = net.serve(
            rs.range_(b).pipe(rs.map(lambda i: base.make_batch(i, rows))),
            name="batches",
            token="bench",
            retention=net.Retention(max_bytes=1 << 30),
        )
        try:
            df = (
                spark.readStream.format("reactive")
                .schema(base.SCHEMA)
                .option("endpoint", server.address + "?codec=arrow")
                .option("token", "bench")
                .option("resumable", str(resumable).lower())
                .option("maxRecordsPerTrigger", rows)
                .option("maxBufferedRecords", max(rows, 2))
                .option("pollTimeout", "10s")
                .option("batchTransport", args.transport)
                .load()
            )
            return measure(df.writeStream.format("noop").trigger(availableNow=True).start(), b * rows)
        finally:
            server.stop()

    def hand(fmt: str, rows: int) -> float:
        df = spark.readStream.format(fmt).option("batches", b).option("rows", rows).load()
        return measure(df.writeStream.format("noop").trigger(availableNow=True).start(), b * rows)

    def rate(rows: int) -> float:
        df = spark.readStream.format("rate").option("rowsPerSecond", rows * 4).load()
        q = df.writeStream.format("noop").trigger(processingTime="1 second").start()
        t0 = time.time()
        while len([p for p in q.recentProgress if p["numInputRows"]]) < b and time.time() - t0 < 120:
            time.sleep(0.2)
        stop_when_idle(q)  # between two batches (they take far less than the trigger's second)
        return steady(q.recentProgress)

    results = [
        ("(a) reactive: RecordBatch publisher", r, reactive("batch_publisher", r)),
        ("(a') same, with logPath (local disk)", r, reactive("batch_publisher", r, logPath=f"{work}/replay-log")),
        ("(b) reactive: dict publisher", dr, reactive("dict_publisher", dr)),
        ("(c) hand-written source, RecordBatches", r, hand("hand_arrow", r)),
        ("(d) hand-written source, tuples", dr, hand("hand_tuples", dr)),
        ("(e) Spark rate source", 0, rate(r)),
        ("(f) reactive: endpoint, retention on", r, endpoint(r, resumable=True)),
        ("(f') same, retention off (resumable=false)", r, endpoint(r, resumable=False)),
    ]
    rates = {name[:3]: v for name, _, v in results}
    print(
        f"{b} micro-batches into format('noop'), local[2], Trigger.AvailableNow; rows/s over trigger time "
        "of micro-batches 2..n"
    )
    print(f"{'source':<42} {'rows/batch':>11} {'rows/s':>13}")
    print("-" * 68)
    for name, rows, v in results:
        print(f"{name:<42} {rows if rows else '-':>11} {v:>13,.0f}")
    a, a_log, c = rates["(a)"], rates["(a'"], rates["(c)"]
    f_on, f_off = rates["(f)"], rates["(f'"]
    print(
        f"(a)/(c) = {a / c:.0%}, (a')/(c) = {a_log / c:.0%} (target >= 80%);  "
        f"(b)/(d) = {rates['(b)'] / rates['(d)']:.2f}x (target >= 1.5x);  "
        f"(f)/(f') = {f_on / f_off:.0%} (target >= 90%)"
    )
    shutil.rmtree(work, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
