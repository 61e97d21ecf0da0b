"""Endpoint mode: the source reads a Publisher served by another process over rs_spark.net."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException

import rs_spark
from rs_spark import streams as rs
from rs_spark.net import serve
from rs_spark.spark.source.read_stream import stop_served
from tests.waits import wait_until

SCHEMA = "id LONG, name STRING"


def _drain(spark, df, expect, **trigger):
    name = "q_" + uuid.uuid4().hex[:8]
    q = df.writeStream.format("memory").queryName(name).trigger(**(trigger or {"processingTime": "200 ms"})).start()
    try:
        q.processAllAvailable() if not trigger else q.awaitTermination(120)
        return [tuple(r) for r in spark.sql(f"select * from {name} order by id").collect()], q
    finally:
        q.stop()


def test_read_stream_serves_an_in_memory_publisher_from_this_process(spark):
    produced = []

    def gen():
        for i in range(500):
            produced.append(i)
            yield {"id": i, "name": f"n{i}"}

    df = rs_spark.read_stream(
        spark, rs.defer(gen), schema=SCHEMA, options={"maxRecordsPerTrigger": 200, "pollTimeout": "10s"}
    )
    rows, q = _drain(spark, df, 500, availableNow=True)
    assert rows == [(i, f"n{i}") for i in range(500)]
    assert all(p["numInputRows"] <= 200 for p in q.recentProgress)
    assert stop_served() >= 1


def test_endpoint_option_with_a_token_and_arrow_batches(spark):
    def batches():
        for b in range(4):
            yield pa.RecordBatch.from_pydict({"id": list(range(b * 250, b * 250 + 250)), "name": ["a"] * 250})

    server = serve(rs.defer(batches), name="batches", token="t0ken")
    try:
        df = (
            spark.readStream.format("reactive")
            .schema(SCHEMA)
            .option("endpoint", server.address + "?codec=arrow")
            .option("token", "t0ken")
            .option("maxRecordsPerTrigger", 400)
            .option("pollTimeout", "300ms")
            .load()
        )
        rows, q = _drain(spark, df, 1000, availableNow=True)
        assert [r[0] for r in rows] == list(range(1000))
        assert max(p["numInputRows"] for p in q.recentProgress) <= 400
        # Every row is acknowledged, the last micro-batch's too (after the stream's end reached the
        # reader): the finished stream ends on the endpoint, which keeps nothing.
        wait_until(lambda: server.stats().streams == (), what=lambda: f"the stream to end: {server.stats()}")
        stats = server.stats()
        assert (stats.expired_streams, stats.lost_records, stats.discarded_records) == (0, 0, 0), stats
    finally:
        server.stop()


def test_endpoint_with_a_wrong_token_fails_the_query_saying_why(spark):
    server = serve(rs.range_(3), name="secret", token="right")
    try:
        df = (
            spark.readStream.format("reactive")
            .schema("value LONG")
            .option("endpoint", server.address)
            .option("token", "wrong")
            .option("pollTimeout", "300ms")
            .load()
        )
        q = df.writeStream.format("memory").queryName("q_" + uuid.uuid4().hex[:8]).start()
        with pytest.raises(StreamingQueryException) as ei:
            q.awaitTermination(120)
        assert "token" in str(ei.value).lower() or "auth" in str(ei.value).lower()
    finally:
        server.stop()
