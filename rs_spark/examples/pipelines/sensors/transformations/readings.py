"""Sensor readings from a Reactive Streams Publisher, per-sensor statistics, and (given a Subscriber's address)
windowed counts and means per sensor into a Reactive Streams Subscriber.

``readings`` is a streaming table over ``format("reactive")``: the pipeline's run reads the
Publisher with Trigger.AvailableNow until it completes. ``sensor_stats`` is a materialized view.
``window_means`` is a sink, ``format("reactive")`` into the Subscriber served (``rs_spark.serve_sink``) at the
address in the environment variable ``RS_SPARK_SENSORS_MEANS`` of ``spark-pipelines`` (this file runs there), fed
by an aggregated flow over the same feed; without it the run has no sink.
Open-source pipelines write every flow into a sink in output mode append (no update, no complete), so
the aggregation is over event-time windows with a watermark: each window's rows go out once, final,
when the watermark passes the window (the last window stays open at the end of a run).
"""

import os

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import rs_spark.spark

spark = SparkSession.active()
rs_spark.spark.register(spark)  # also found without this when rs_spark is installed on the server


def sensor_feed() -> DataFrame:
    """The sensor feed as a stream: a new subscription to the (replayable) Publisher each time."""
    return (
        spark.readStream.format("reactive")
        .schema("sensor STRING, ts TIMESTAMP, temperature DOUBLE, seq LONG")
        .option("publisher", "rs_spark.examples.sensors:readings")
        .option("publisher.total", spark.conf.get("rs_spark.sensors.total", "2000"))
        .option("publisher.rate", 0)  # no quiet readings: 250 at once every 10 ms of event time (a quick clock)
        .option("publisher.burst", 250)
        .option("publisher.burst_every", 0.01)
        .option("maxRecordsPerTrigger", 500)
        .load()
    )


@dp.table(comment="Sensor readings read from a Reactive Streams Publisher, demand-driven")
def readings() -> DataFrame:
    return sensor_feed()


@dp.materialized_view(comment="Readings and mean temperature per sensor")
def sensor_stats() -> DataFrame:
    return (
        spark.read.table("readings")
        .groupBy("sensor")
        .agg(F.count("*").alias("readings"), F.round(F.avg("temperature"), 2).alias("avg_temp"))
    )


MEANS_ENDPOINT = os.environ.get("RS_SPARK_SENSORS_MEANS", "")  # not a conf: one holding ?token= did not reach us
if MEANS_ENDPOINT:
    dp.create_sink("window_means", format="reactive", options={"endpoint": MEANS_ENDPOINT})

    @dp.append_flow(target="window_means")
    def per_window() -> DataFrame:
        # The feed itself, read again (it is replayable): spark.readStream.table("readings") here failed as the
        # flow was defined (TABLE_OR_VIEW_NOT_FOUND, pyspark 4.3.0's spark-pipelines).
        return (
            sensor_feed()
            .withWatermark("ts", "0 seconds")
            .groupBy(F.window("ts", "10 milliseconds"), "sensor")
            .agg(F.count("*").alias("readings"), F.round(F.avg("temperature"), 2).alias("avg_temp"))
            .select(F.col("window.start").alias("window_start"), "sensor", "readings", "avg_temp")
        )
