"""The spark-submit example: the bursty sensor Publisher -> Spark -> Parquet -> a Subscriber.

    spark-submit --master spark://host:7077 --conf spark.pyspark.python=$(which python3) \\
        "$(python3 -c 'import rs_spark.examples.pipeline as m; print(m.__file__)')" \\
        --output /data/out --checkpoint /data/ckpt --log-path /data/replay --total 20000

Two queries, both with Trigger.AvailableNow. The first reads the sensor Publisher
(``format("reactive")``) until it has sent ``--total`` readings (``--rate`` makes them available
at once; AvailableNow reads a feed to its live edge) and writes them to Parquet;
``--log-path`` must be readable by every executor (a shared filesystem, or any pyarrow URI
such as s3://): executors read micro-batches from it. The second streams the Parquet files'
readings at or above ``--hot`` degrees into a Reactive Streams Subscriber in this driver
process (``format("reactive")`` sink through :func:`rs_spark.write_stream`), which checks it
got them once each. Prints per-sensor counts; exits non-zero if anything is missing.
"""

from __future__ import annotations

import argparse
import sys


def parser() -> argparse.ArgumentParser:
    """The job's command line (also checked against docker/compose.yaml by the tests)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--output", required=True, help="Parquet output directory")
    ap.add_argument("--checkpoint", required=True, help="streaming checkpoint directory")
    ap.add_argument("--log-path", required=True, help="replay log location, readable by all executors")
    ap.add_argument("--total", type=int, default=20_000, help="readings the feed sends, then completes")
    ap.add_argument(
        "--rate",
        type=float,
        default=100_000,
        help="readings/s between bursts (fast enough that every reading is there when the AvailableNow run asks: "
        "a slower feed is read to its live edge, see docs/source.md)",
    )
    ap.add_argument("--burst", type=int, default=3000)
    ap.add_argument("--max-records-per-trigger", type=int, default=5000)
    ap.add_argument("--partitions", type=int, default=2, help="partitions per micro-batch")
    ap.add_argument("--hot", type=float, default=28.0, help="readings at or above this go to the Subscriber")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from rs_spark.examples.sensors import SCHEMA
    from rs_spark.spark import register

    spark = SparkSession.builder.appName("rs_spark-pipeline").getOrCreate()
    register(spark)
    events = (
        spark.readStream.format("reactive")
        .schema(SCHEMA)
        .option("publisher", "rs_spark.examples.sensors:readings")
        .option("publisher.total", args.total)
        .option("publisher.rate", args.rate)
        .option("publisher.burst", args.burst)
        .option("publisher.burst_every", 1)
        .option("maxRecordsPerTrigger", args.max_records_per_trigger)
        .option("numPartitions", args.partitions)
        .option("logPath", args.log_path)
        .load()
    )
    query = (
        events.writeStream.format("parquet")
        .option("path", args.output)
        .option("checkpointLocation", args.checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    out = spark.read.parquet(args.output)
    total = out.count()
    distinct = out.select("seq").distinct().count()
    print(
        f"rs_spark pipeline: {total} readings ({distinct} distinct) in {len(batches)} micro-batches "
        f"of at most {max(batches) if batches else 0} records"
    )
    out.groupBy("sensor").agg(F.count("*").alias("n"), F.round(F.avg("temperature"), 2).alias("avg_temp")).orderBy(
        "sensor"
    ).show(truncate=False)

    hot_seqs = _hot_readings_to_a_subscriber(spark, out.schema, args)
    expected = out.where(F.col("temperature") >= args.hot).count()
    print(
        f"rs_spark pipeline: the Subscriber received {len(hot_seqs)} hot readings ({len(set(hot_seqs))} "
        f"distinct; Parquet has {expected} at >= {args.hot})"
    )
    spark.stop()
    return 0 if total == distinct == args.total and len(hot_seqs) == len(set(hot_seqs)) == expected else 1


def _hot_readings_to_a_subscriber(spark, schema, args) -> list:
    """Stream the hot readings into a Subscriber living in this process; return their seqs."""
    import threading

    from pyspark.sql import functions as F

    import rs_spark
    from rs_spark.streams import CallbackSubscriber

    seqs: list = []
    ended = threading.Event()
    failure: list = []

    # A slow-ish consumer with bounded demand: it requests 256 readings at a time, and the
    # query's commits wait for it (backpressure from a Subscriber into Spark).
    def failed(e: BaseException) -> None:
        failure.append(e)
        ended.set()

    sub = CallbackSubscriber(lambda r: seqs.append(r["seq"]), on_error=failed, on_complete=ended.set, request_size=256)
    hot = spark.readStream.schema(schema).parquet(args.output).where(F.col("temperature") >= args.hot)
    query = rs_spark.write_stream(
        hot,
        sub,
        checkpoint=args.checkpoint.rstrip("/") + "-hot",
        trigger={"availableNow": True},
        query_name="hot_readings",
    )
    query.awaitTermination()
    if not ended.wait(60):
        raise RuntimeError("the Subscriber got no on_complete within 60 s of the query's end")
    if failure:
        raise RuntimeError(f"the Subscriber got on_error: {failure[0]}")
    return seqs


if __name__ == "__main__":
    sys.exit(main())
