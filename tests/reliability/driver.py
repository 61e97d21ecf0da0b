"""A driver program for the fault tests: reactive source (an endpoint) -> Spark -> reactive sink
(an endpoint), with a checkpoint and a replay log. Runs until killed, or for --seconds then
stops the query gracefully."""
from __future__ import annotations

import argparse
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--sink", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--seconds", type=float, default=0)
    a = ap.parse_args()
    from rs_spark.spark import local_session

    spark = local_session("rs_spark-faults", **{"spark.ui.showConsoleProgress": "false",
                                                "spark.sql.streaming.pollingDelay": "10ms"})
    spark.sparkContext.setLogLevel("ERROR")
    df = (spark.readStream.format("reactive").schema("id LONG").option("endpoint", a.source)
          .option("logPath", a.log).option("maxRecordsPerTrigger", "300").option("pollTimeout", "100ms").load())
    q = (df.writeStream.format("reactive").option("endpoint", a.sink).option("checkpointLocation", a.checkpoint)
         .trigger(processingTime="100 milliseconds").start())
    print("STARTED", flush=True)
    t0 = time.time()
    while q.isActive and (not a.seconds or time.time() - t0 < a.seconds):
        time.sleep(0.1)
    if q.exception():
        print(f"FAILED {q.exception()}", file=sys.stderr, flush=True)
        return 1
    q.stop()
    print("STOPPED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
