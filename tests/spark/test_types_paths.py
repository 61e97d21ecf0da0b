"""The type matrix through real queries: every path gives the rows pyspark makes of the same rows.

One row per Spark SQL type with edge values (tests/spark/type_rows.py), read by each source path
and written by each sink path, compared with what pyspark itself makes of the same rows: by
``type_rows.canon`` (``repr``, map keys sorted), so NaN equals NaN and -0.0 is not 0.0. The shared
session runs in this process's zone (UTC here); ``test_types_zone.py`` runs the same paths in
America/New_York.
"""

from __future__ import annotations

import uuid

import pytest

import rs_spark
from rs_spark import streams as rs

from ..subscribers import Recorder
from . import type_rows

FACTORY = "tests.spark.type_rows:publisher"


def _collected(spark) -> list:
    return type_rows.collected(spark)


def _expected(spark, copies: int = 1) -> list[str]:
    return sorted(type_rows.canon(r) for r in _collected(spark) * copies)


def _drain(df) -> list[str]:
    name = f"types_{uuid.uuid4().hex[:8]}"
    q = df.writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    try:
        assert q.awaitTermination(180), "the query did not end within 180 s"
        assert q.exception() is None, q.exception()
        return sorted(type_rows.canon(r) for r in df.sparkSession.table(name).collect())
    finally:
        q.stop()


def test_a_publisher_in_this_process_gives_what_create_dataframe_gives(spark):
    df = rs_spark.read_stream(spark, rs.from_iterable(type_rows.dict_rows()), schema=type_rows.SCHEMA)
    assert _drain(df) == _expected(spark)


def test_publishers_in_this_process_as_partitions_give_what_create_dataframe_gives(spark):
    pubs = {"a": rs.from_iterable(type_rows.dict_rows()), "b": rs.from_iterable(type_rows.rows())}
    df = rs_spark.read_stream(spark, pubs, schema=type_rows.SCHEMA)
    assert _drain(df) == _expected(spark, copies=2)


def test_a_factory_gives_what_create_dataframe_gives(spark):
    df = spark.readStream.format("reactive").schema(type_rows.SCHEMA).option("publisher", FACTORY).load()
    assert _drain(df) == _expected(spark)


def test_a_batch_read_gives_what_create_dataframe_gives(spark):
    df = spark.read.format("reactive").schema(type_rows.SCHEMA).option("publisher", FACTORY).load()
    assert sorted(type_rows.canon(r) for r in df.collect()) == _expected(spark)


@pytest.mark.parametrize("elements", ["rows", "dicts", "tuples"])
def test_a_subscriber_gets_what_collect_gives(spark, tmp_path, elements):
    df = spark.readStream.format("reactive").schema(type_rows.SCHEMA).option("publisher", FACTORY).load()
    r = Recorder()
    q = rs_spark.write_stream(df, r, checkpoint=str(tmp_path / "cp"), trigger={"availableNow": True}, elements=elements)
    assert q.awaitTermination(180)
    r.wait_done()
    assert r.completed, r.error
    collected = _collected(spark)
    want = {
        "rows": [type_rows.canon(x) for x in collected],
        "dicts": [type_rows.canon(x.asDict(recursive=True)) for x in collected],
        "tuples": [type_rows.canon(tuple(x)) for x in collected],
    }[elements]
    assert sorted(type_rows.canon(x) for x in r.items) == sorted(want)
