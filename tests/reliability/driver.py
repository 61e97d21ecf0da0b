"""A driver program for the fault tests: reactive source (an endpoint) -> Spark -> reactive sink
(an endpoint), with a checkpoint and a replay log. Runs until killed, or for --seconds then
stops the query gracefully."""

from __future__ import annotations

import argparse
import os
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", help="endpoint of the publisher (or --factory)")
    ap.add_argument("--factory", help="publisher factory, e.g. tests.spark.publishers:counter")
    ap.add_argument("--count", default="1000", help="records for --factory")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--available-now", action="store_true")
    ap.add_argument("--fail-on-data-loss", default="true")
    ap.add_argument("--sink", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--stop-file", default=None, help="stop the query gracefully once this file exists")
    a = ap.parse_args()
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
    r = spark.readStream.format("reactive").schema("id LONG, name STRING, price DOUBLE" if a.factory else "id LONG")
    r = (
        r.option("publisher", a.factory).option("publisher.count", a.count)
        if a.factory
        else r.option("endpoint", a.source)
    )
    df = (
        r.option("logPath", a.log)
        .option("maxRecordsPerTrigger", "300")
        .option("pollTimeout", "100ms")
        .option("numPartitions", "2")
        .option("failOnDataLoss", a.fail_on_data_loss)
        .load()
    )
    w = df.writeStream.format("reactive").option("endpoint", a.sink).option("checkpointLocation", a.checkpoint)
    q = (w.trigger(availableNow=True) if a.available_now else w.trigger(processingTime="100 milliseconds")).start()
    print("STARTED", flush=True)
    t0 = time.time()
    while (
        q.isActive
        and (not a.seconds or time.time() - t0 < a.seconds)
        and not (a.stop_file and os.path.exists(a.stop_file))
    ):
        time.sleep(0.1)
    if q.exception():
        print(f"FAILED {q.exception()}", file=sys.stderr, flush=True)
        return 1
    q.stop()
    print("STOPPED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
