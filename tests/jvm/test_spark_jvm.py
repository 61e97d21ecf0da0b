"""End to end in Spark: JVM publishers (the JDK's SubmissionPublisher, netty-reactive-streams) feed
readStream.format("reactive"), and a Spark query writes into a JVM Subscriber."""

from __future__ import annotations

import uuid

import pytest

from tests.waits import wait_until

from .conftest import build, extra_jars

pytestmark = pytest.mark.slow  # a SparkSession and streaming queries: > 20 s together


@pytest.fixture(scope="module")
def j(spark):
    from rs_spark.spark.jvm import jvm

    build()
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

    df = read_jvm_stream(
        spark,
        j.rsspark.jvm.Sources.submissionLongs(5000),
        "value bigint",
        batch_rows=1000,
        options={"maxRecordsPerTrigger": 2000},
    )
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
    sub = JvmSubscriber(
        collector, j, schema="id:int64,symbol:string,price:float64,buy:bool", kind="rsspark.fixtures.Trade"
    )
    df = read_jvm_stream(spark, j.rsspark.jvm.Sources.submissionLongs(2000), "value:int64")
    out = df.selectExpr(
        "value as id", "concat('S', value) as symbol", "cast(value as double) / 2 as price", "value % 2 = 0 as buy"
    )
    q = rs_spark.write_stream(out, sub)
    q.processAllAvailable()
    q.stop()
    assert sub.done.wait(30)
    items = list(collector.items())
    assert collector.isComplete() and collector.violation() is None
    assert sorted(t.id() for t in items) == list(range(2000))
    assert items[0].getClass().getName() == "rsspark.fixtures.Trade"


# -- option jvmPublisher: the reader process builds the JVM publisher in a JVM of its own ----------


def _jvm_reader(spark, spec, schema="value LONG", **options):
    from .conftest import FIXTURES

    r = spark.readStream.format("reactive").option("jvmPublisher", spec).option("jvmJars", FIXTURES)
    if schema:
        r = r.schema(schema)
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load()


def test_jvm_publisher_option_reads_a_submission_publisher_with_options_only(spark):
    df = _jvm_reader(spark, "rsspark.fixtures.Feeds#longs", **{"publisher.count": 20_000, "maxRecordsPerTrigger": 8000})
    values, q = _collect(spark, df)
    assert values == list(range(20_000))
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert max(sizes) <= 8000 and sum(sizes) == 20_000


def test_jvm_publisher_option_encodes_records_into_the_given_columns(spark):
    df = _jvm_reader(
        spark,
        "rsspark.fixtures.Feeds#trades",
        "id LONG, symbol STRING, price DOUBLE, buy BOOLEAN",
        **{"publisher.count": 30},
    )
    rows, _ = _collect(spark, df.selectExpr("concat(id, ':', symbol, ':', price, ':', buy) as r", "id"), order="id")
    assert len(rows) == 30


def test_jvm_publisher_option_errors_fail_the_query_naming_option_and_value(spark):
    from pyspark.errors import StreamingQueryException

    df = _jvm_reader(spark, "com.nope.Missing#feed")
    q = df.writeStream.format("noop").start()
    try:
        with pytest.raises(StreamingQueryException) as info:
            q.awaitTermination(60)
    finally:
        q.stop()
    msg = str(info.value)
    assert "option jvmPublisher='com.nope.Missing#feed'" in msg and "jvmJars" in msg, msg[:2000]


def test_jvm_publisher_option_without_a_schema_says_how_to_give_one(spark):
    with pytest.raises(Exception, match="jvmPublisher=.*needs a schema"):
        _jvm_reader(spark, "rsspark.fixtures.Feeds#longs", schema=None)


def test_jvm_publisher_option_in_a_batch_read(spark):
    from .conftest import FIXTURES

    df = (
        spark.read.format("reactive")
        .schema("value LONG")
        .option("jvmPublisher", "rsspark.fixtures.Feeds#longs")
        .option("jvmJars", FIXTURES)
        .option("publisher.count", "3000")
        .load()
    )
    assert sorted(r[0] for r in df.collect()) == list(range(3000))


def test_a_committable_jvm_publisher_hears_each_committed_position_once_in_order(spark, tmp_path):
    """rsspark.jvm.Committable: the JVM publisher is told, after Spark committed each micro-batch,
    the position it ends at (rows since the subscription), never more than was read."""
    commits = tmp_path / "commits"
    df = _jvm_reader(
        spark,
        "rsspark.fixtures.Feeds#committableLongs",
        **{"publisher.count": 3000, "publisher.commits": str(commits), "maxRecordsPerTrigger": 500},
    )
    name = "q_" + uuid.uuid4().hex[:8]
    q = df.writeStream.format("memory").queryName(name).trigger(processingTime="50 milliseconds").start()
    try:
        wait_until(lambda: commits.exists() and len(commits.read_text().split()) >= 3, what="3 commits", timeout=120)
    finally:
        q.stop()
    positions = [int(x) for x in commits.read_text().split()]
    read = spark.sql(f"select count(*) from {name}").first()[0]
    assert positions == sorted(set(positions)), positions  # increasing, each once
    assert positions[0] > 0 and positions[-1] <= read
