"""The demo pipeline: a bursty sensor Publisher -> Spark (windowed average) -> console.

Backpressure made visible: each micro-batch asks the publisher for at most
``--max-records-per-trigger`` records, so bursts queue up in the publisher's bounded buffer
and drain over the following batches instead of flooding Spark. A one-line live display
shows rows/s, demand outstanding, buffered elements and batch time; a table sums it up.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any, Dict, List


def _metrics(progress: Dict[str, Any]) -> Dict[str, Any]:
    lo = progress["sources"][0].get("latestOffset") or "{}"
    return json.loads(lo) if isinstance(lo, str) else dict(lo)


def run_demo(args: Any) -> int:
    from pyspark.sql import functions as F

    from .examples.sensors import SCHEMA
    from .spark import local_session

    spark = local_session("rs_spark-demo", master=args.master, **{"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    reader = (spark.readStream.format("reactive").schema(SCHEMA)
              .option("maxRecordsPerTrigger", args.max_records_per_trigger)
              .option("pollTimeout", "200ms")
              .option("publisher.rate", args.rate).option("publisher.burst", args.burst))
    reader = reader.option("endpoint", args.endpoint) if args.endpoint else reader.option("publisher", args.publisher)
    events = reader.load()
    averages = (events.withWatermark("ts", "10 seconds")
                .groupBy(F.window("ts", "5 seconds"), "sensor")
                .agg(F.count("*").alias("n"), F.round(F.avg("temperature"), 2).alias("avg_temp")))
    query = (averages.writeStream.outputMode("update").format("memory").queryName("sensor_averages")
             .trigger(processingTime=args.trigger).start())
    rows: List[Dict[str, Any]] = []
    seen = -1
    start = time.time()
    try:
        while time.time() - start < args.seconds and query.isActive:
            p = query.lastProgress
            if p and p["batchId"] != seen:
                seen = p["batchId"]
                m = _metrics(p)
                row = {"batch": p["batchId"], "rows": p["numInputRows"],
                       "rows_per_s": p.get("processedRowsPerSecond") or 0.0,
                       "outstanding": m.get("outstandingDemand", 0), "buffered": m.get("bufferedElements", 0),
                       "ms": p["durationMs"].get("triggerExecution", 0)}
                rows.append(row)
                sys.stdout.write(f"\rbatch {row['batch']:>4}  rows {row['rows']:>6}  {row['rows_per_s']:>9,.0f} rows/s  "
                                 f"demand outstanding {row['outstanding']:>6}  buffered {row['buffered']:>6}  "
                                 f"batch {row['ms']:>5} ms   ")
                sys.stdout.flush()
            time.sleep(0.2)
        if query.exception():
            print(f"\nquery failed: {query.exception()}", file=sys.stderr)
            return 1
    finally:
        query.stop()
    print()
    print(f"{'batch':>5} {'rows':>7} {'rows/s':>10} {'outstanding':>12} {'buffered':>9} {'ms':>6}")
    for r in rows:
        print(f"{r['batch']:>5} {r['rows']:>7} {r['rows_per_s']:>10,.0f} {r['outstanding']:>12} "
              f"{r['buffered']:>9} {r['ms']:>6}")
    total = sum(r["rows"] for r in rows)
    print(f"{total} sensor records in {len(rows)} micro-batches; none exceeded "
          f"{args.max_records_per_trigger} records")
    print("latest 5-second windows:")
    spark.sql("select window.start, sensor, n, avg_temp from sensor_averages "
              "order by window.start desc, sensor limit 8").show(truncate=False)
    spark.stop()
    return 0
