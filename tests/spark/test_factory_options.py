"""Factories get their own options only: ``publisher.*`` (``subscriber.*``) with the prefix
stripped, the rest of the key as rs_spark received it, never the token or rs_spark's options
(as Spark's Kafka connector strips ``kafka.``)."""

from __future__ import annotations

import pyarrow as pa

from rs_spark.jvm import open_publisher
from rs_spark.spark.sink.options import SinkOptions
from rs_spark.spark.sink.task_delivery import deliver_in_task
from rs_spark.spark.source.options import SourceOptions
from rs_spark.spark.source.resolve import make_publisher
from rs_spark.streams import to_list
from tests.spark import subscribers
from tests.spark.queries import wait_for_rows

TOKEN = "s3cr3t-factory-token"


def test_the_publisher_factory_gets_its_options_prefix_stripped_case_kept_without_the_token():
    opts = SourceOptions.parse(
        {
            "publisher": "tests.spark.publishers:options_as_rows",
            "publisher.Symbol": "ACME",
            "PUBLISHER.count": "5",
            "token": TOKEN,
            "maxRecordsPerTrigger": "10",
        }
    )
    assert opts.factory == {"Symbol": "ACME", "count": "5"}
    assert to_list(make_publisher(opts), timeout=10) == [("Symbol=ACME",), ("count=5",)]


def test_the_subscriber_factory_gets_its_options_prefix_stripped_case_kept_without_the_token():
    opts = SinkOptions.parse(
        {
            "subscriber": "tests.spark.subscribers:recording",
            "subscriber.outDir": "/tmp/x",
            "token": TOKEN,
            "checkpointLocation": "/tmp/chk",
        }
    )
    subscribers.RECORDED.clear()
    deliver_in_task([pa.record_batch({"id": [1, 2]})], opts)
    assert subscribers.RECORDED == [{"outDir": "/tmp/x"}]


def test_the_jvm_publisher_factory_gets_the_same_options():
    from tests.jvm.conftest import FIXTURES, build

    build()
    opts = SourceOptions.parse(
        {"jvmPublisher": "rsspark.fixtures.Feeds#longs", "publisher.count": "3", "token": TOKEN, "jvmJars": FIXTURES}
    )
    assert opts.factory == {"count": "3"}
    from rs_spark.jvm.gateway import close_shared

    try:
        pub = open_publisher(opts.jvm_publisher, [FIXTURES], opts.factory)
        rows = [v for b in to_list(pub, timeout=60) for v in pa.Table.from_batches([b]).column(0).to_pylist()]
    finally:
        close_shared()  # the JVM open_publisher started in this process (a reader process ends with it)
    assert rows == [0, 1, 2]


def test_through_spark_the_factory_gets_its_options_lower_cased_by_spark(spark):
    """Spark lower-cases option keys before a Python data source sees them (pyspark's
    CaseInsensitiveDict in pyspark/sql/worker/create_data_source.py): the case is gone there."""
    df = (
        spark.readStream.format("reactive")
        .schema("value STRING")
        .option("publisher", "tests.spark.publishers:options_as_rows")
        .option("publisher.Symbol", "ACME")
        .option("token", TOKEN)
        .option("maxRecordsPerTrigger", 10)
        .load()
    )
    q = df.writeStream.format("memory").queryName("factory_options").start()
    try:
        wait_for_rows(q)
        got = sorted(r.value for r in spark.sql("SELECT value FROM factory_options").collect())
    finally:
        q.stop()
    assert got == ["symbol=ACME"]
