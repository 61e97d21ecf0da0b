"""JVM publishers into Spark with TIMESTAMP_NTZ (LocalDateTime), TIMESTAMP (Instant), DATE (LocalDate)
and DECIMAL (BigDecimal): the values Spark stores equal what spark.createDataFrame makes of the same
values; a wall clock and an instant are never taken for each other; a column the shim does not carry is
refused at the start, naming the column and its Spark type. Real JVM publishers (rsspark.fixtures.Typed)
through read_jvm_stream and option jvmPublisher."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest

from .conftest import FIXTURES, build, extra_jars

pytestmark = pytest.mark.slow  # a SparkSession and streaming queries

SCHEMA = "id LONG, wall TIMESTAMP_NTZ, at TIMESTAMP, day DATE, amount DECIMAL(38,18)"
UTC = dt.UTC
MAX = Decimal("99999999999999999999.999999999999999999")


def typed_row(i: int) -> tuple:
    """rsspark.fixtures.Typed.row(i) as Python values."""
    k = i % 4
    if k == 0:
        return (
            i,
            dt.datetime(2024, 3, 10, 2, 30, 0, 123456),
            dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
            dt.date(1, 1, 1),
            MAX,
        )
    if k == 1:
        return (
            i,
            dt.datetime(1, 1, 1),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            dt.date(9999, 12, 31),
            Decimal("-99999999999999999999.999999999999999999"),  # not -MAX: Python rounds that to 28 digits
        )
    if k == 2:
        return (
            i,
            dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
            dt.datetime(1970, 1, 1, tzinfo=UTC),
            dt.date(1970, 1, 1),
            Decimal("0.000000000000000001"),
        )
    return (i, None, None, None, None)


@pytest.fixture(scope="module")
def j(spark):
    from rs_spark.spark.jvm import jvm

    build()
    return jvm(spark, extra_jars())


def _collect(spark, df):
    name = "q_" + uuid.uuid4().hex[:8]
    q = df.writeStream.format("memory").queryName(name).start()
    try:
        q.processAllAvailable()
        return spark.sql(f"select * from {name} order by id").collect()
    finally:
        q.stop()


def _expected(spark, n):
    return spark.createDataFrame([typed_row(i) for i in range(n)], SCHEMA).orderBy("id").collect()


def _failure(df) -> str:
    from pyspark.errors import StreamingQueryException

    q = df.writeStream.format("noop").start()
    try:
        with pytest.raises(StreamingQueryException) as info:
            q.awaitTermination(120)
    finally:
        q.stop()
    return str(info.value)


def test_read_jvm_stream_carries_wall_clocks_instants_dates_and_decimals_as_create_dataframe_does(spark, j):
    from rs_spark.spark.jvm import read_jvm_stream

    df = read_jvm_stream(spark, j.rsspark.fixtures.Elements.typed(8), SCHEMA, batch_rows=3)
    assert [f.dataType.simpleString() for f in df.schema.fields] == [
        "bigint",
        "timestamp_ntz",
        "timestamp",
        "date",
        "decimal(38,18)",
    ]
    rows = _collect(spark, df)
    assert rows == _expected(spark, 8)
    assert rows[0]["wall"] == dt.datetime(2024, 3, 10, 2, 30, 0, 123456)  # the wall clock, not shifted by a zone


def test_the_records_declared_schema_names_the_new_types(spark, j):
    from rs_spark.spark.jvm import read_jvm_stream, schema_of

    schema = schema_of(spark, "rsspark.fixtures.Typed")
    assert str(schema) == (
        "id: int64\nwall: timestamp[us]\nat: timestamp[us, tz=UTC]\nday: date32[day]\namount: decimal128(38, 18)"
    )
    rows = _collect(spark, read_jvm_stream(spark, j.rsspark.fixtures.Elements.typed(4), schema))
    assert rows == _expected(spark, 4)


def test_option_jvm_publisher_carries_the_same_values(spark):
    df = (
        spark.readStream.format("reactive")
        .schema(SCHEMA)
        .option("jvmPublisher", "rsspark.fixtures.Feeds#typed")
        .option("jvmJars", FIXTURES)
        .option("publisher.count", "8")
        .load()
    )
    assert _collect(spark, df) == _expected(spark, 8)


def test_an_instant_for_a_timestamp_ntz_column_fails_the_query_naming_the_field(spark, j):
    from rs_spark.spark.jvm import read_jvm_stream

    df = read_jvm_stream(spark, j.rsspark.fixtures.Elements.typed(2), "id LONG, at TIMESTAMP_NTZ")
    msg = _failure(df)
    assert "element at offset 0" in msg and "field 'at' (timestamp_ntz)" in msg, msg[:3000]
    assert "give a LocalDateTime" in msg, msg[:3000]


@pytest.mark.parametrize(
    ("ddl", "spark_type"),
    [
        ("id LONG, tags ARRAY<STRING>", "array<string>"),
        ("id LONG, tags MAP<STRING, LONG>", "map<string,bigint>"),
        ("id LONG, tags STRUCT<a: LONG>", "struct<a:bigint>"),
        ("id LONG, tags INTERVAL DAY TO SECOND", "interval day to second"),
        ("id LONG, tags INTERVAL YEAR TO MONTH", "interval year to month"),
    ],
)
def test_read_jvm_stream_refuses_a_column_it_does_not_carry_before_anything_runs(spark, j, ddl, spark_type):
    from rs_spark.jvm.schema import UnsupportedColumn
    from rs_spark.spark.jvm import read_jvm_stream

    with pytest.raises(UnsupportedColumn) as info:
        read_jvm_stream(spark, j.rsspark.fixtures.Elements.typed(2), ddl)
    msg = str(info.value)
    assert f"column 'tags' has type {spark_type} (" in msg, msg
    assert "TIMESTAMP_NTZ, DATE and DECIMAL(p,s)" in msg and "ARRAY, MAP, STRUCT" in msg, msg


def test_option_jvm_publisher_refuses_a_column_it_does_not_carry_at_the_start(spark):
    df = (
        spark.readStream.format("reactive")
        .schema("id LONG, tags ARRAY<STRING>")
        .option("jvmPublisher", "rsspark.fixtures.Feeds#typed")
        .option("jvmJars", FIXTURES)
        .load()
    )
    msg = _failure(df)
    assert "option jvmPublisher='rsspark.fixtures.Feeds#typed'" in msg, msg[:3000]
    assert "column 'tags' has type array<string> (Arrow list<element: string>)" in msg, msg[:3000]


def test_option_jvm_publisher_in_a_batch_read_refuses_it_too_and_carries_the_types(spark):
    def read(schema):
        return (
            spark.read.format("reactive")
            .schema(schema)
            .option("jvmPublisher", "rsspark.fixtures.Feeds#typed")
            .option("jvmJars", FIXTURES)
            .option("publisher.count", "8")
            .load()
        )

    assert read(SCHEMA).orderBy("id").collect() == _expected(spark, 8)
    with pytest.raises(Exception) as info:
        read("id LONG, tags MAP<STRING, LONG>").collect()
    msg = str(info.value)
    assert "column 'tags' has type map<string,bigint> (Arrow map<string, int64>)" in msg, msg[:3000]
