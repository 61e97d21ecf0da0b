"""End to end in Spark: JVM publishers (the JDK's SubmissionPublisher, netty-reactive-streams) feed
readStream.format("reactive"), and a Spark query writes into a JVM Subscriber."""
from __future__ import annotations

import os
import sys
import uuid

import pytest

from .conftest import ROOT, build, extra_jars

pytestmark = pytest.mark.slow  # a SparkSession and streaming queries: > 20 s together


@pytest.fixture(scope="module")
def spark():
    build()
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [ROOT, os.environ.get("PYTHONPATH")] if p)
    from pyspark.sql import SparkSession

    from rs_spark.spark import local_session

    existing = SparkSession.getActiveSession()
    session = local_session("rs_spark-jvm-tests", **{"spark.sql.streaming.pollingDelay": "10ms"})
    yield session
    if existing is None:
        session.stop()


@pytest.fixture(scope="module")
def j(spark):
    from rs_spark.spark.jvm import jvm

    return jvm(spark, extra_jars())  # the one helper call: the shim joins the running driver


def _collect(spark, df, order="value"):
    name = "q_" + uuid.uuid4().hex[:8]
    q = df.writeStream.format("memory").queryName(name).start()
    try:
        q.processAllAvailable()
        return [r[0] for r in spark.sql(f"select {order} from {name} order by {order}").collect()], q
    finally:
        q.stop()


def test_submission_publisher_feeds_read_stream(spark, j):
    from rs_spark.spark.jvm import read_jvm_stream

    df = read_jvm_stream(spark, j.rsspark.jvm.Sources.submissionLongs(5000), "value bigint",
                         batch_rows=1000, maxRecordsPerTrigger=2000)
    values, q = _collect(spark, df)
    assert values == list(range(5000))
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert max(sizes) <= 2000 and sum(sizes) == 5000


def test_netty_reactive_streams_handler_publisher_feeds_read_stream(spark, j):
    from rs_spark.spark.jvm import read_jvm_stream

    df = read_jvm_stream(spark, j.rsspark.fixtures.NettyPublishers.longs(3000), "value:int64")
    values, _ = _collect(spark, df)
    assert values == list(range(3000))


def test_a_record_publisher_with_its_declared_schema(spark, j):
    from rs_spark.spark.jvm import read_jvm_stream, schema_of

    schema = schema_of(spark, "rsspark.fixtures.Trade")
    df = read_jvm_stream(spark, j.rsspark.fixtures.Elements.trades(50), schema)
    symbols, _ = _collect(spark, df.selectExpr("symbol", "id"), order="id")
    assert len(symbols) == 50


def test_a_spark_query_writes_into_a_jvm_subscriber(spark, j):
    import rs_spark
    from rs_spark.jvm import JvmSubscriber
    from rs_spark.spark.jvm import read_jvm_stream

    collector = j.rsspark.jvm.CollectingSubscriber(256)
    sub = JvmSubscriber(collector, j, schema="id:int64,symbol:string,price:float64,buy:bool",
                        kind="rsspark.fixtures.Trade")
    df = read_jvm_stream(spark, j.rsspark.jvm.Sources.submissionLongs(2000), "value:int64")
    out = df.selectExpr("value as id", "concat('S', value) as symbol", "cast(value as double) / 2 as price", "value % 2 = 0 as buy")
    q = rs_spark.write_stream(out, sub)
    q.processAllAvailable()
    q.stop()
    assert sub.done.wait(30)
    items = list(collector.items())
    assert collector.isComplete() and collector.violation() is None
    assert sorted(t.id() for t in items) == list(range(2000))
    assert items[0].getClass().getName() == "rsspark.fixtures.Trade"
