"""The spark-submit example: the bursty sensor Publisher -> Spark -> Parquet, on any cluster.

    spark-submit --master spark://host:7077 --conf spark.pyspark.python=$(which python3) \\
        "$(python3 -c 'import rs_spark.examples.pipeline as m; print(m.__file__)')" \\
        --output /data/out --checkpoint /data/ckpt --log-path /data/replay --total 20000

Runs with Trigger.AvailableNow until the feed has sent ``--total`` readings, writing them to
Parquet; then prints per-sensor counts. ``--log-path`` must be readable by every executor
(a shared filesystem, or any pyarrow URI such as s3://); executors read micro-batches from it.
"""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--output", required=True, help="Parquet output directory")
    ap.add_argument("--checkpoint", required=True, help="streaming checkpoint directory")
    ap.add_argument("--log-path", required=True, help="replay log location, readable by all executors")
    ap.add_argument("--total", type=int, default=20_000, help="readings the feed sends, then completes")
    ap.add_argument("--rate", type=float, default=2000, help="readings/s between bursts")
    ap.add_argument("--burst", type=int, default=3000)
    ap.add_argument("--max-records-per-trigger", type=int, default=5000)
    ap.add_argument("--partitions", type=int, default=2, help="partitions per micro-batch")
    args = ap.parse_args(argv)

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from rs_spark.examples.sensors import SCHEMA
    from rs_spark.spark import register

    spark = SparkSession.builder.appName("rs_spark-pipeline").getOrCreate()
    register(spark)
    events = (spark.readStream.format("reactive").schema(SCHEMA)
              .option("publisher", "rs_spark.examples.sensors:readings")
              .option("publisher.total", args.total).option("publisher.rate", args.rate)
              .option("publisher.burst", args.burst).option("publisher.burst_every", 1)
              .option("maxRecordsPerTrigger", args.max_records_per_trigger)
              .option("numPartitions", args.partitions)
              .option("logPath", args.log_path).load())
    query = (events.writeStream.format("parquet").option("path", args.output)
             .option("checkpointLocation", args.checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    out = spark.read.parquet(args.output)
    total = out.count()
    distinct = out.select("seq").distinct().count()
    print(f"rs_spark pipeline: {total} readings ({distinct} distinct) in {len(batches)} micro-batches "
          f"of at most {max(batches) if batches else 0} records")
    out.groupBy("sensor").agg(F.count("*").alias("n"), F.round(F.avg("temperature"), 2).alias("avg_temp")) \
        .orderBy("sensor").show(truncate=False)
    spark.stop()
    return 0 if total == distinct == args.total else 1


if __name__ == "__main__":
    sys.exit(main())
