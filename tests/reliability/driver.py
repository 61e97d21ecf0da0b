"""A driver program for the fault tests: reactive source -> Spark -> reactive sink (an endpoint),
with a checkpoint. Runs until killed, or for --seconds / until --stop-file exists, then stops its
queries gracefully.

One query from the flags (--source or --factory, --sink, --checkpoint, optional --log), or several
in one Spark application from --queries, a JSON list of objects with the same keys ("source" or
"factory", "sink", "checkpoint", optional "log", "schema", "options"): a SIGKILL then ends all of
them at once, so one trial exercises every mode."""

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
    w = (
        r.load()
        .writeStream.format("reactive")
        .option("endpoint", q["sink"])
        .option("checkpointLocation", q["checkpoint"])
    )
    return (w.trigger(availableNow=True) if a.available_now else w.trigger(processingTime="100 milliseconds")).start()


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
    running = [_start(spark, q, a) for q in queries]
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
