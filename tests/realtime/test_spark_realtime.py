"""Real-time mode end to end on local Spark: a Publisher served by rs_spark.net (or a JVM publisher)
-> format("reactive-rt") -> the shim's ForeachWriter -> a Subscriber served by the delivery hub.

Batches last 1 s here (conftest), so each query crosses several real-time batches."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from pyspark.errors import AnalysisException, IllegalArgumentException
from pyspark.sql import functions as F

import rs_spark
from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net.protocol.address import parse
from rs_spark.net.zero_loss.retention import Retention
from rs_spark.spark import realtime
from tests.subscribers import Recorder
from tests.waits import wait_until

from .publishers import DDL, rows
from .subscribers import Collect


def _batch_id(q: Any) -> int:
    p = q.lastProgress
    return -1 if p is None else int(p["batchId"])


def _serve(publisher: Any) -> tuple[Any, str]:
    token = secrets.token_urlsafe(16)
    server = net.serve(publisher, name="rt", token=token, retention=Retention(window=120))
    return server, parse(server.address).with_token(token).with_codec("arrow").format(with_token=True)


def _stop(q: Any, sub: Collect) -> None:
    q.stop()
    wait_until(lambda: sub.completed.is_set() or sub.failed.is_set(), "the Subscriber's terminal signal")


def test_rows_arrive_in_order_across_real_time_batches_and_stop_completes_the_subscriber(rt_spark, tmp_path):
    pub = rows()
    sub = Collect()
    df = realtime.read_stream(rt_spark, pub, schema=DDL)
    q = realtime.write_stream(df, sub, trigger="1 second", checkpoint=str(tmp_path / "chk"))
    try:
        wait_until(lambda: _batch_id(q) >= 2 and len(sub.ids) >= 50, "three real-time batches and 50 rows", 90)
    finally:
        _stop(q, sub)
    assert sub.completed.is_set(), sub.error
    assert sub.ids == list(range(len(sub.ids)))


def test_spec_1_1_the_publisher_never_sees_more_than_max_in_flight_rows_requested(rt_spark, tmp_path):
    pub = rows()
    sub = Collect()
    df = realtime.read_stream(rt_spark, pub, schema=DDL, options={"maxInFlight": 4})
    q = realtime.write_stream(df, sub, trigger="1 second", checkpoint=str(tmp_path / "chk"))
    try:
        wait_until(lambda: _batch_id(q) >= 1 and len(sub.ids) >= 200, "two batches and 200 rows", 90)
    finally:
        _stop(q, sub)
    assert sub.ids == list(range(len(sub.ids)))
    assert pub.requested >= 200
    assert pub.max_outstanding <= 4, f"the publisher had {pub.max_outstanding} rows requested and not yet emitted"


def test_stopping_the_query_cancels_the_publisher(rt_spark, tmp_path):
    pub = rows()
    sub = Collect()
    df = realtime.read_stream(rt_spark, pub, schema=DDL)
    q = realtime.write_stream(df, sub, trigger="1 second", checkpoint=str(tmp_path / "chk"))
    wait_until(lambda: len(sub.ids) >= 10, "10 rows")
    assert not pub.cancelled.is_set()
    _stop(q, sub)
    wait_until(pub.cancelled.is_set, "cancel() at the publisher after the query stopped")


def test_the_publishers_error_fails_the_query_and_reaches_the_subscriber(rt_spark, tmp_path):
    pub = rows(fail_after=5, message="kaput")
    sub = Collect()
    df = realtime.read_stream(rt_spark, pub, schema=DDL)
    q = realtime.write_stream(df, sub, trigger="1 second", checkpoint=str(tmp_path / "chk"))
    wait_until(lambda: not q.isActive, "the query to fail", 90)
    assert "kaput at row 5" in str(q.exception())
    wait_until(sub.failed.is_set, "on_error at the Subscriber")
    assert "kaput at row 5" in str(sub.error)
    # The failed batch's rows not yet delivered are dropped (a restarted query reads them again).
    assert sub.ids == list(range(len(sub.ids))) and len(sub.ids) <= 5


def test_a_restarted_query_resumes_from_its_checkpoint_without_loss_or_duplicates(rt_spark, tmp_path):
    pub = rows()
    server, address = _serve(pub)
    chk, ledger = str(tmp_path / "chk"), str(tmp_path / "ledger.json")
    try:
        first = Collect()
        df = realtime.read_stream(rt_spark, endpoint=address, schema=DDL, options={"cancelOnStop": False})
        q = realtime.write_stream(df, first, trigger="1 second", checkpoint=chk, ledger=ledger)
        wait_until(lambda: _batch_id(q) >= 1 and len(first.ids) >= 30, "two batches and 30 rows", 90)
        _stop(q, first)  # mid-batch: its rows so far reached the Subscriber, Spark committed none of them
        assert not pub.cancelled.is_set(), "cancelOnStop=false still cancelled the stream"
        seen = len(first.ids)
        second = Collect(shared=first)
        df = realtime.read_stream(rt_spark, endpoint=address, schema=DDL, options={"cancelOnStop": False})
        q = realtime.write_stream(df, second, trigger="1 second", checkpoint=chk, ledger=ledger)
        wait_until(lambda: len(first.ids) >= seen + 30, "30 more rows after the restart", 90)
        _stop(q, second)
    finally:
        server.stop()
    assert first.ids == list(range(len(first.ids))), "rows lost or delivered twice across the restart"


def test_micro_batches_read_the_same_source_in_order(rt_spark, tmp_path):
    pub = rows()
    sub = Collect()
    df = realtime.read_stream(rt_spark, pub, schema=DDL, options={"maxInFlight": 16})
    q = realtime.write_stream(df, sub, trigger={"processingTime": "200 milliseconds"}, checkpoint=str(tmp_path / "c"))
    try:
        wait_until(lambda: _batch_id(q) >= 2 and len(sub.ids) >= 50, "three micro-batches and 50 rows", 90)
    finally:
        _stop(q, sub)
    assert sub.ids == list(range(len(sub.ids)))
    assert pub.max_outstanding <= 16


def test_a_jvm_publisher_is_read_in_real_time_mode(rt_spark, tmp_path):
    sub = Collect(field="value")
    df = realtime.read_stream(rt_spark, jvm_publisher="rsspark.jvm.Sources#submissionEndless", schema="value LONG")
    q = realtime.write_stream(df, sub, trigger="1 second", checkpoint=str(tmp_path / "chk"))
    try:
        wait_until(lambda: _batch_id(q) >= 1 and len(sub.ids) >= 100, "two batches and 100 rows", 90)
    finally:
        _stop(q, sub)
    assert sub.ids == list(range(len(sub.ids)))


@pytest.mark.parametrize("option", ["publisher", "numPartitions"])
def test_options_of_the_python_source_that_do_not_apply_are_refused_saying_why(rt_spark, tmp_path, option):
    sub = Collect()
    df = (
        rt_spark.readStream.format("reactive-rt")
        .schema(DDL)
        .option("endpoint", "tcp://127.0.0.1:1/x")
        .option(option, "x")
        .load()
    )
    q = realtime.write_stream(df, sub, trigger="1 second", checkpoint=str(tmp_path / "chk"))
    wait_until(lambda: not q.isActive, "the query to fail", 60)
    assert f"has no option '{option}'" in str(q.exception())
    wait_until(sub.failed.is_set, "on_error at the Subscriber")


def test_every_type_crosses_real_time_mode_as_pyspark_makes_and_collects_it(rt_spark, tmp_path):
    """A Python Publisher's rows of the type matrix (tests/spark/type_rows.py: TIMESTAMP, DATE, DECIMAL(38,18)
    extremes, MAP, VARIANT, ...) through the shim's real-time source and sink reach the Subscriber as the rows
    pyspark's createDataFrame and collect() make of them."""
    from tests.spark import type_rows

    struct, values = type_rows.without()
    _assert_rows_cross_as_collect_gives(rt_spark, tmp_path, struct, values)


def test_maps_nested_in_arrays_and_structs_cross_real_time_mode(rt_spark, tmp_path):
    """The shim's Arrow check once refused every map vector (Arrow Java 19's type check of a list); maps at
    any depth, empty and null ones and null values included, reach the Subscriber as collect() gives them."""
    ddl = "id LONG, tags ARRAY<MAP<STRING, BIGINT>>, box STRUCT<m: MAP<STRING, STRING>>"
    values = [
        (1, [{"a": 1, "b": None}, {}], {"m": {"é": "x"}}),
        (2, None, {"m": None}),
        (3, [None], None),
    ]
    struct = rt_spark.createDataFrame([], ddl).schema
    _assert_rows_cross_as_collect_gives(rt_spark, tmp_path, struct, values)


def _assert_rows_cross_as_collect_gives(rt_spark, tmp_path, struct, values):
    """``values`` as dicts from a Python Publisher, through the real-time source and sink into a
    Subscriber taking Rows: the Rows pyspark's createDataFrame and collect() make of them."""
    from tests.spark import type_rows
    from tests.subscribers import Recorder

    sub = Recorder()
    df = realtime.read_stream(
        rt_spark, rs.from_iterable([dict(zip(struct.names, v, strict=True)) for v in values]), schema=struct
    )
    q = realtime.write_stream(df, sub, trigger="1 second", checkpoint=str(tmp_path / "chk"), elements="rows")
    try:
        wait_until(lambda: len(sub.items) >= len(values) or not q.isActive, "every row", 90)
        assert q.exception() is None, q.exception()
    finally:
        q.stop()
    want = sorted(type_rows.canon(r) for r in type_rows.collected(rt_spark, struct, values))
    assert sorted(type_rows.canon(r) for r in sub.items) == want


def test_the_real_time_sink_under_micro_batches_in_append_mode_delivers_in_order(rt_spark, tmp_path):
    sub = Collect()
    df = realtime.read_stream(rt_spark, rows(), schema=DDL, options={"maxInFlight": 16})
    q = realtime.write_stream(
        df, sub, trigger={"processingTime": "200 milliseconds"}, output_mode="append", checkpoint=str(tmp_path / "c")
    )
    try:
        wait_until(lambda: _batch_id(q) >= 1 and len(sub.ids) >= 20, "two micro-batches and 20 rows", 90)
    finally:
        _stop(q, sub)
    assert sub.completed.is_set(), sub.error
    assert sub.ids == list(range(len(sub.ids)))


def test_the_real_time_sink_under_micro_batches_in_complete_mode_delivers_each_batch_whole(rt_spark, tmp_path):
    """A count per ``id // 20`` of 60 rows (a micro-batch of at most 16 rows changes one or two of the three keys):
    each micro-batch delivers the whole result so far, every key seen (its counts add up to every row read up to
    that batch), in batchId order, until a batch holds all 60."""
    rec = Recorder()
    df = realtime.read_stream(rt_spark, rows(count=60), schema=DDL, options={"maxInFlight": 16})
    counts = df.groupBy(F.floor(F.col("id") / 20).alias("k")).count()
    q = realtime.write_stream(
        counts, rec, trigger={"processingTime": "200 milliseconds"}, output_mode="complete", checkpoint=str(tmp_path)
    )
    results: dict[int, dict] = {}

    def whole() -> bool:
        results.clear()
        for bid, r in zip(list(rec.batch_ids), list(rec.items), strict=False):
            results.setdefault(bid, {})[r["k"]] = r["count"]
        read = sum(p["numInputRows"] for p in q.recentProgress)  # the batch's progress follows its rows
        return read == 60 and any(sum(c.values()) == 60 for c in results.values())

    try:
        wait_until(whole, "a completed micro-batch whose result counts all 60 rows", 90)
    finally:
        q.stop()
    assert rec.wait_done(30).completed, rec.error
    assert rec.batch_ids == sorted(rec.batch_ids)
    read = 0
    for p in sorted(q.recentProgress, key=lambda p: p["batchId"]):
        read += p["numInputRows"]
        if p["batchId"] in results:  # a batch Spark completed delivered its whole result
            assert sum(results[p["batchId"]].values()) == read, (p["batchId"], results)
    assert read == 60 and set(results[max(results)]) == {0, 1, 2}


@pytest.mark.parametrize(
    "mode, sink",
    [
        ("append", "datasources.v2.python.PythonTable"),  # format("reactive")
        ("update", "streaming.sources.ForeachBatchSink"),  # write_stream's update route
        ("complete", "datasources.v2.python.PythonTable"),
    ],
)
def test_write_stream_in_real_time_mode_is_refused_by_spark_at_start_and_the_subscriber_told(rt_spark, mode, sink):
    rec = Recorder()
    df = rt_spark.readStream.format("reactive-rt").schema(DDL).option("endpoint", "tcp://127.0.0.1:1/x").load()
    if mode == "complete":
        df = df.groupBy((F.col("id") % 3).alias("k")).count()
    with pytest.raises(IllegalArgumentException, match=f"OPERATOR_OR_SINK_NOT_IN_ALLOWLIST.*{sink}"):
        rs_spark.write_stream(df, rec, trigger={"realTime": "1 second"}, output_mode=mode)
    assert rec.wait_done(30).error is not None and rec.items == []


@pytest.mark.parametrize("mode", ["append", "complete"])
def test_the_real_time_sink_in_real_time_mode_takes_update_only(rt_spark, tmp_path, mode):
    sub = Collect()
    df = rt_spark.readStream.format("reactive-rt").schema(DDL).option("endpoint", "tcp://127.0.0.1:1/x").load()
    if mode == "complete":
        df = df.groupBy((F.col("id") % 3).alias("k")).count()
    with pytest.raises(AnalysisException, match=f"The output mode {mode.capitalize()} is not supported"):
        realtime.write_stream(df, sub, trigger="1 second", output_mode=mode, checkpoint=str(tmp_path / "chk"))
    wait_until(sub.failed.is_set, "on_error at the Subscriber")
