"""Misbehaving user code behind the source: each case ends within bounded time (no hang) with
an error that says what happened, or, where nothing is wrong to report, ends cleanly."""

from __future__ import annotations

import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def spark():
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [ROOT, os.environ.get("PYTHONPATH")] if p)
    from rs_spark.spark import local_session

    s = local_session("rs_spark-misbehaving", **{"spark.sql.streaming.pollingDelay": "10ms"})
    yield s


def run(spark, factory, name):
    df = (
        spark.readStream.format("reactive")
        .schema("id LONG")
        .option("publisher", f"tests.reliability.bad_publishers:{factory}")
        .option("pollTimeout", "200ms")
        .load()
    )
    q = df.writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    try:
        assert q.awaitTermination(60), f"{factory}: the query did not end within 60 s"
    finally:
        if q.isActive:
            q.stop()
    return spark.sql(f"select count(*) from {name}").collect()[0][0]


def test_publisher_raising_in_subscribe_fails_the_query_with_its_error(spark):
    with pytest.raises(Exception, match="ConnectionRefusedError: broker at 10.0.0.9:9092 refused"):
        run(spark, "raises_in_subscribe", "m_sub")


def test_spec_3_16_publisher_raising_in_request_fails_the_query_naming_the_rule(spark):
    with pytest.raises(Exception, match=r"request\(1\) raised RuntimeError.*rule 3.16"):
        run(spark, "raises_in_request", "m_req")


def test_factory_raising_fails_the_query_with_its_error(spark):
    with pytest.raises(Exception, match="option publisher.topic is required"):
        run(spark, "factory_raises", "m_fac")


def test_factory_returning_a_non_publisher_is_refused_saying_so(spark):
    with pytest.raises(Exception, match="which is not a Publisher"):
        run(spark, "not_a_publisher", "m_np")


def test_publisher_that_never_signals_ends_available_now_without_hanging(spark):
    assert run(spark, "silent", "m_silent") == 0


def test_spec_1_9_publisher_that_never_calls_on_subscribe_fails_the_query_within_bounded_time(spark):
    with pytest.raises(Exception, match=r"did not call on_subscribe within 1\d s of subscribe\(\).*rule 1.9"):
        run(spark, "never_subscribes", "m_never")
