"""Misbehaving user code behind format("reactive"), with a real SparkSession.

Each case ends within a bounded time (awaitTermination / stop return; nothing hangs) with an
error that says what happened and what to do, or, where nothing is wrong to report, ends
cleanly; records the publisher did send are delivered exactly once.
"""

from __future__ import annotations

import re
import uuid

import pytest
from pyspark.errors import AnalysisException, StreamingQueryException

from .publishers import SCHEMA
from .queries import wait_for_progress

P = "tests.spark.publishers"
BOUND = 90  # seconds: "no hang" (every case here ends far sooner)


def _name():
    return "mb_" + uuid.uuid4().hex[:8]


def _df(spark, factory, schema=SCHEMA, **options):
    r = spark.readStream.format("reactive")
    if schema:
        r = r.schema(schema)
    r = r.option("publisher", f"{P}:{factory}").option("pollTimeout", "200ms")
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load()


def _start(spark, factory, available_now=True, **options):
    name = _name()
    w = _df(spark, factory, **options).writeStream.format("memory").queryName(name)
    if available_now:
        w = w.trigger(availableNow=True)
    return w.start(), name


def _error_text(exc: BaseException) -> str:
    return f"{exc}\n{getattr(exc, 'desc', '')}\n{getattr(exc, 'stackTrace', '')}"


def _fails(q) -> str:
    """The query's error text; the query must end (by failing) within BOUND."""
    try:
        with pytest.raises(StreamingQueryException) as ei:
            ended = q.awaitTermination(BOUND)
            pytest.fail(f"the query {'ended without an error' if ended else 'did not end'} within {BOUND} s")
        return _error_text(ei.value)
    finally:
        if q.isActive:
            q.stop()


def _ids(spark, name):
    return [r.id for r in spark.sql(f"select id from {name} order by id").collect()]


# -- subscribe ---------------------------------------------------------------------------------
def test_spec_1_9_publisher_raising_in_subscribe_fails_the_query_with_its_error_and_advice(spark):
    q, _ = _start(spark, "raises_in_subscribe")
    text = _fails(q)
    assert "subscribe() raised ConnectionRefusedError: broker at 10.0.0.9:9092 refused" in text
    assert "rule 1.9" in text and "on_error" in text


def test_spec_1_9_publisher_that_never_calls_on_subscribe_fails_the_query_within_bounded_time(spark):
    q, _ = _start(spark, "never_subscribes")
    text = _fails(q)
    # the bound is named: 10 s, or 20 pollTimeouts if longer
    assert re.search(r"did not call on_subscribe within 1\d s of subscribe\(\)", text), text
    assert "rule 1.9" in text and "on_subscribe(subscription)" in text


@pytest.mark.slow
def test_spec_1_9_subscribe_that_blocks_forever_does_not_hang_the_query(spark):
    q, _ = _start(spark, "blocks_in_subscribe", available_now=False)
    text = _fails(q)
    assert "did not call on_subscribe" in text and "rule 1.9" in text


# -- request / cancel ----------------------------------------------------------------------------
def test_spec_3_16_publisher_raising_in_request_fails_the_query_naming_the_rule(spark):
    q, _ = _start(spark, "raises_in_request")
    text = _fails(q)
    assert "request(1) raised RuntimeError: request(1) exploded" in text and "rule 3.16" in text


def test_spec_3_16_records_sent_before_request_raised_are_delivered_once_then_the_query_fails(spark):
    q, name = _start(spark, "raises_in_request_after", available_now=False, **{"publisher.count": 5})
    text = _fails(q)
    assert "rule 3.16" in text and "after 5 records exploded" in text
    assert _ids(spark, name) == [0, 1, 2, 3, 4]


def test_spec_3_15_publisher_raising_in_cancel_does_not_block_query_stop(spark):
    q, name = _start(spark, "raises_in_cancel", available_now=False, maxRecordsPerTrigger=50)
    wait_for_progress(q, 3, BOUND)
    q.stop()
    assert not q.isActive
    ids = _ids(spark, name)
    assert ids == list(range(len(ids)))  # in order, none lost or duplicated


@pytest.mark.slow
def test_request_that_never_returns_does_not_block_query_stop(spark):
    q, name = _start(spark, "blocks_in_request", available_now=False)
    wait_for_progress(q, 1, BOUND)
    q.stop()
    assert not q.isActive and _ids(spark, name) == []


# -- signals -------------------------------------------------------------------------------------
def test_publisher_failing_right_after_on_subscribe_fails_the_query_with_its_error(spark):
    q, _ = _start(spark, "errors_at_once")
    text = _fails(q)
    assert "PermissionError: token expired for topic trades" in text and "after 0 records" in text


def test_publisher_completing_at_once_ends_available_now_with_no_rows(spark):
    q, name = _start(spark, "completes_at_once")
    assert q.awaitTermination(BOUND) and q.exception() is None
    assert _ids(spark, name) == []


def test_silent_publisher_ends_available_now_after_poll_timeout_without_hanging(spark):
    q, name = _start(spark, "silent")
    assert q.awaitTermination(BOUND) and q.exception() is None
    assert _ids(spark, name) == []


def test_publisher_going_silent_without_completing_ends_available_now_with_what_it_sent(spark):
    q, name = _start(spark, "some_then_silent", **{"publisher.count": 7, "maxRecordsPerTrigger": 3})
    assert q.awaitTermination(BOUND) and q.exception() is None
    assert _ids(spark, name) == list(range(7))


def test_silent_publisher_keeps_a_processing_time_query_alive_and_stoppable(spark):
    q, name = _start(spark, "silent", available_now=False)
    wait_for_progress(q, 1, BOUND)
    assert q.isActive and q.exception() is None
    q.stop()
    assert not q.isActive and _ids(spark, name) == []


# -- the factory ---------------------------------------------------------------------------------
def test_factory_raising_fails_the_query_naming_the_factory_and_its_error(spark):
    q, _ = _start(spark, "factory_raises")
    text = _fails(q)
    assert "factory raised KeyError" in text and "option publisher.topic is required" in text
    assert "factory_raises" in text


def test_factory_raising_while_resolving_a_declared_schema_fails_at_load(spark):
    with pytest.raises(AnalysisException) as ei:
        _df(spark, "factory_raises", schema=None)
    assert "factory raised KeyError" in _error_text(ei.value)


@pytest.mark.parametrize("factory,shown", [("not_a_publisher", "list [1, 2, 3]"), ("returns_none", "NoneType None")])
def test_factory_returning_a_non_publisher_is_refused_saying_what_it_returned(spark, factory, shown):
    q, _ = _start(spark, factory)
    text = _fails(q)
    assert f"the factory returned {shown}, which is not a Publisher" in text


def test_factory_returning_a_mapping_of_partitions_is_refused_saying_how_to_read_partitions(spark):
    q, _ = _start(spark, "returns_partitions")
    text = _fails(q)
    assert "the factory returned a mapping of 2 partitions" in text and "['eu', 'us']" in text
    assert "option endpoint as id=address" in text and "rs_spark.read_stream" in text
