"""Spark with rsocket-js on both ends: a query reads an rsocket-js publisher through
``option("endpoint", ...)`` and its rows reach an rsocket-js Subscriber (through ``write_stream``,
whose Subscriber is ``net.connect_subscriber`` to the JS responder), exactly once and in order."""

from __future__ import annotations

import uuid

import pytest

import rs_spark
from rs_spark import net

from ..js_peer import js_server_at

pytestmark = pytest.mark.usefixtures("rsocket_js")


@pytest.fixture
def js_server():
    with js_server_at(300, 10) as server:
        yield server


def _source(spark, port):
    return (
        spark.readStream.format("reactive")
        .schema("value LONG")
        .option("endpoint", f"tcp://127.0.0.1:{port}/numbers")
        .option("maxRecordsPerTrigger", 120)
        .option("pollTimeout", "300ms")
        .load()
    )


def test_spark_reads_an_rsocket_js_publisher_exactly_once_in_order(spark, js_server):
    _, port = js_server
    name = "js_" + uuid.uuid4().hex[:8]
    q = _source(spark, port).writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    try:
        assert q.awaitTermination(120) and q.exception() is None
        assert [r[0] for r in spark.sql(f"select value from {name}").collect()] == list(range(300))
        assert max(p["numInputRows"] for p in q.recentProgress) <= 120  # demand paced the JS publisher
    finally:
        q.stop()


def test_a_querys_rows_reach_an_rsocket_js_subscriber(spark, js_server, tmp_path):
    peer, port = js_server
    sink = net.connect_subscriber(f"tcp://127.0.0.1:{port}/sink")
    q = rs_spark.write_stream(
        _source(spark, port), sink, trigger={"availableNow": True}, checkpoint=str(tmp_path / "ckpt")
    )
    try:
        assert q.awaitTermination(120) and q.exception() is None
    finally:
        q.stop()
    seen = peer.next()  # the JS responder reports when its channel completed
    assert seen.get("error") is None and seen["route"] == "sink" and seen["over"] == 0
    assert seen["received"] == [{"value": i} for i in range(300)]
