"""Sensor readings from a Reactive Streams Publisher, and per-sensor statistics.

``readings`` is a streaming table over ``format("reactive")``: the pipeline's run reads the
Publisher with Trigger.AvailableNow until it completes. ``sensor_stats`` is a materialized view.
"""

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import rs_spark.spark

spark = SparkSession.active()
rs_spark.spark.register(spark)  # also found without this when rs_spark is installed on the server


@dp.table(comment="Sensor readings read from a Reactive Streams Publisher, demand-driven")
def readings() -> DataFrame:
    return (
        spark.readStream.format("reactive")
        .schema("sensor STRING, ts TIMESTAMP, temperature DOUBLE, seq LONG")
        .option("publisher", "rs_spark.examples.sensors:readings")
        .option("publisher.total", spark.conf.get("rs_spark.sensors.total", "2000"))
        .option("publisher.rate", 100000)
        .option("maxRecordsPerTrigger", 500)
        .load()
    )


@dp.materialized_view(comment="Readings and mean temperature per sensor")
def sensor_stats() -> DataFrame:
    return (
        spark.read.table("readings")
        .groupBy("sensor")
        .agg(F.count("*").alias("readings"), F.round(F.avg("temperature"), 2).alias("avg_temp"))
    )
