"""A driver program for the fault tests: reactive source -> Spark -> reactive sink (an endpoint),
with a checkpoint. Runs until killed, or for --seconds / until --stop-file exists, then stops its
queries gracefully.

One query from the flags (--source or --factory, --sink, --checkpoint, optional --log), or several
in one Spark application from --queries, a JSON list of objects with the same keys ("source" or
"factory", "sink", "checkpoint", optional "log", "schema", "options", "trigger" (a processing time),
"write_stream" (true: started with rs_spark.write_stream)): a SIGKILL then ends all of them at
once, so one trial exercises every mode."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def _start(spark, q: dict, a: argparse.Namespace):
    schema = q.get("schema") or ("id LONG, name STRING, price DOUBLE" if q.get("factory") else "id LONG")
    r = spark.readStream.format("reactive").schema(schema)
    if q.get("factory"):
        r = r.option("publisher", q["factory"]).option("publisher.count", str(q.get("count", a.count)))
    else:
        r = r.option("endpoint", q["source"])
    if q.get("log"):
        r = r.option("logPath", q["log"])
    options = {
        "maxRecordsPerTrigger": "300",
        "pollTimeout": "100ms",
        "failOnDataLoss": a.fail_on_data_loss,
        **q.get("options", {}),
    }
    if "," not in (q.get("source") or ""):  # one reader: its rows split over two tasks (partitions plan their own)
        options.setdefault("numPartitions", "2")
    for k, v in options.items():
        r = r.option(k, str(v))
    trigger = {"availableNow": True} if a.available_now else {"processingTime": q.get("trigger", "100 milliseconds")}
    if q.get("write_stream"):  # rs_spark.write_stream into the Subscriber served at q["sink"]
        import rs_spark

        return rs_spark.write_stream(r.load(), q["sink"], checkpoint=q["checkpoint"], trigger=trigger)
    w = r.load().writeStream.format("reactive").option("endpoint", q["sink"])
    return w.option("checkpointLocation", q["checkpoint"]).trigger(**trigger).start()


def _start_all(spark, queries: list[dict], a: argparse.Namespace) -> list:
    """Start the queries one right after another; with --wave N, N at a time, each wave once every
    query of the previous one planned its first micro-batch (Spark gives the Python process it starts
    for each query's source 10 s to connect back, which eight at once on two busy cores can exceed)."""
    running: list = []
    wave = a.wave or len(queries)
    for i in range(0, len(queries), wave):
        started = [_start(spark, q, a) for q in queries[i : i + wave]]
        running += started
        while any(q.isActive and not q.recentProgress for q in started):
            time.sleep(0.1)
    return running


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", help="endpoint of the publisher (or --factory)")
    ap.add_argument("--factory", help="publisher factory, e.g. tests.spark.publishers:counter")
    ap.add_argument("--count", default="1000", help="records for --factory")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--available-now", action="store_true")
    ap.add_argument("--fail-on-data-loss", default="true")
    ap.add_argument("--sink")
    ap.add_argument("--checkpoint")
    ap.add_argument("--log", default=None, help="logPath (none: the publisher or endpoint replays)")
    ap.add_argument("--queries", default=None, help="JSON list of queries (see the module docstring)")
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--stop-file", default=None, help="stop the queries gracefully once this file exists")
    ap.add_argument("--wave", type=int, default=0, help="start the queries this many at a time (0: all at once)")
    a = ap.parse_args()
    queries = (
        json.loads(a.queries)
        if a.queries
        else [{"source": a.source, "factory": a.factory, "sink": a.sink, "checkpoint": a.checkpoint, "log": a.log}]
    )
    from rs_spark.spark import local_session

    spark = local_session(
        "rs_spark-faults",
        master=a.master,
        **{
            "spark.executor.memory": "512m",
            "spark.executor.cores": "1",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.streaming.pollingDelay": "10ms",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    running = _start_all(spark, queries, a)
    print("STARTED", flush=True)
    t0 = time.time()
    while (
        all(q.isActive for q in running)
        and (not a.seconds or time.time() - t0 < a.seconds)
        and not (a.stop_file and os.path.exists(a.stop_file))
    ):
        time.sleep(0.1)
    failed = [q.exception() for q in running if q.exception()]
    if failed:
        print(f"FAILED {failed[0]}", file=sys.stderr, flush=True)
        return 1
    for q in running:
        q.stop()
    print("STOPPED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
