"""Network outages under real Spark queries (tests/faultrelay.py: a real TCP relay that black-holes or
resets): the query reads (or writes) on after the heal, every row once and in order, and stays alive
meanwhile. The single reader rides out a 75 s black hole: longer than the fixed bound before this
(keepalive lifetime + 60 s of tries), within the endpoint's 120 s window. Keepalives are scaled down
(lifetime 2 s, or 1 s) so outages are noticed quickly; the partitioned reader and the sink are driven
through shorter outages here, and in-process in tests/spark/test_outage_reader.py and
tests/delivery/test_commit_outage.py."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

import rs_spark
from rs_spark import net
from rs_spark.delivery import DeliveryHub
from rs_spark.net.zero_loss.retention import Retention
from tests.faultrelay import FaultRelay
from tests.realtime.subscribers import Collect
from tests.waits import wait_until

from .publishers import LiveCounter

TOKEN = "outage-spark-test"
LINK = {
    "keepaliveInterval": "500ms",
    "keepaliveTimeout": "2s",
    "reconnectBackoff": "100ms",
    "reconnectBackoffMax": "2s",
}


def _source_metrics(q: Any) -> dict:
    p = q.lastProgress
    m = p and p["sources"][0].get("latestOffset")
    m = json.loads(m) if isinstance(m, str) else m
    return m or {}


def _alive(q: Any) -> None:
    assert q.isActive and q.exception() is None, q.exception()


def _outage_for(seconds: float, q: Any) -> None:
    """Let an outage last ``seconds`` (time passing is the fault under test), checking the query stays up."""
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        _alive(q)
        time.sleep(min(1.0, max(0.0, ends - time.monotonic())))


@pytest.fixture
def progress_every_second(spark):
    """Progress reports of triggers that found no new rows once a second, not every 10 s (Spark's default)."""
    key = "spark.sql.streaming.noDataProgressEventInterval"
    old = spark.conf.get(key, None)
    spark.conf.set(key, "1000")
    yield
    if old is None:
        spark.conf.unset(key)
    else:
        spark.conf.set(key, old)


@pytest.mark.timeout(400)
def test_a_query_rides_out_resets_and_a_black_hole_longer_than_the_old_60_s_bound(
    spark, tmp_path, progress_every_second
):
    server = net.serve(LiveCounter(), name="ids", token=TOKEN, retention=Retention(window=120))
    relay = FaultRelay(server.address)
    sub = Collect()
    df = (
        spark.readStream.format("reactive")
        .option("endpoint", relay.address(server.address))
        .option("token", TOKEN)
        .options(**LINK, maxRecordsPerTrigger="200", pollTimeout="100ms")
        .schema("id LONG")
        .load()
    )
    q = rs_spark.write_stream(df, sub, checkpoint=str(tmp_path / "chk"), trigger={"processingTime": "200 milliseconds"})
    try:
        wait_until(lambda: len(sub.ids) >= 200, "200 rows", 120)
        relay.black_hole()  # shorter than the keepalive lifetime: the connection survives it
        _outage_for(1.0, q)
        relay.heal()
        seen = len(sub.ids)
        wait_until(lambda: len(sub.ids) >= seen + 200, "rows after a 1 s black hole", 60)
        assert server.stats().streams[0].resumes == 0
        relay.reset()  # every connection reset, new ones refused
        _outage_for(3.0, q)
        relay.heal()
        seen = len(sub.ids)
        wait_until(lambda: len(sub.ids) >= seen + 200, "rows after a 3 s reset", 60)
        relay.black_hole()
        _outage_for(5.0, q)
        outage = wait_until(lambda: _source_metrics(q).get("outage"), "the outage in the query's progress", 30)
        assert outage["endpoint"] == f"remote publisher {relay.address(server.address)}" and TOKEN not in str(outage)
        _outage_for(70.0, q)  # 75 s in all: longer than the old bound (lifetime + 60 s), within the 120 s window
        late = _source_metrics(q)["outage"]
        assert late["seconds"] >= 60 and late["attempts"] >= 5 and late["givesUpInSeconds"] > 0, late
        in_hole = len(sub.ids)
        relay.heal()
        wait_until(lambda: len(sub.ids) >= in_hole + 200, "rows after a 75 s black hole", 60)
        wait_until(lambda: "outage" not in _source_metrics(q), "the outage to leave the progress", 30)
        _alive(q)
    finally:
        q.stop()
        relay.close()
        server.stop()
    assert sub.ids == list(range(len(sub.ids))), "a row lost or delivered twice"


B = 10**9  # partition b's ids start here: each partition's rows are told apart by their ids


@pytest.mark.timeout(300)
def test_partitions_read_by_executors_ride_out_a_black_hole_and_a_reset(spark, tmp_path):
    servers = {
        "a": net.serve(LiveCounter(), name="a", token=TOKEN, retention=Retention(window=120)),
        "b": net.serve(LiveCounter(B), name="b", token=TOKEN, retention=Retention(window=120)),
    }
    relays = {p: FaultRelay(s.address) for p, s in servers.items()}
    sub = Collect()
    df = (
        spark.readStream.format("reactive")
        .option("endpoint", ",".join(f"{p}={relays[p].address(s.address)}" for p, s in servers.items()))
        .option("token", TOKEN)
        .options(**LINK, maxRecordsPerTrigger="400", pollTimeout="100ms")
        .schema("id LONG")
        .load()
    )
    q = rs_spark.write_stream(df, sub, checkpoint=str(tmp_path / "chk"), trigger={"processingTime": "200 milliseconds"})

    def each(p: str) -> list[int]:
        return [i for i in sub.ids if (i >= B) == (p == "b")]

    try:
        wait_until(lambda: len(each("a")) >= 200 and len(each("b")) >= 200, "rows of both partitions", 120)
        relays["a"].black_hole()
        relays["b"].reset()
        _outage_for(5.0, q)
        relays["a"].heal()
        relays["b"].heal()
        seen = {p: len(each(p)) for p in "ab"}
        wait_until(
            lambda: all(len(each(p)) >= seen[p] + 200 for p in "ab"), "rows of both partitions after the outage", 90
        )
        _alive(q)
    finally:
        q.stop()
        for r in relays.values():
            r.close()
        for s in servers.values():
            s.stop()
    a, b = each("a"), each("b")
    assert a == list(range(len(a))) and b == list(range(B, B + len(b))), "a row lost or delivered twice"


@pytest.mark.timeout(300)
def test_a_sink_whose_hub_is_unreachable_retries_the_commit_without_a_duplicate(spark, tmp_path):
    sub = Collect()
    hub = DeliveryHub(sub)
    address = hub.serve()
    relay = FaultRelay(address)
    df = rs_spark.read_stream(spark, LiveCounter(), schema="id LONG", options={"maxRecordsPerTrigger": 200})
    q = rs_spark.write_stream(
        df,
        relay.address(address),
        options={**LINK, "keepaliveTimeout": "1s", "reconnectBackoffMax": "500ms", "reconnectTimeout": "60s"},
        checkpoint=str(tmp_path / "chk"),
        trigger={"processingTime": "200 milliseconds"},
    )
    try:
        wait_until(lambda: len(sub.ids) >= 400, "400 rows", 120)
        relay.black_hole()
        _outage_for(4.0, q)  # four keepalive lifetimes: commits' connections are lost and tried again
        relay.heal()
        seen = len(sub.ids)
        wait_until(lambda: len(sub.ids) >= seen + 400, "rows after a black hole", 60)
        relay.reset()
        _outage_for(3.0, q)
        relay.heal()
        seen = len(sub.ids)
        wait_until(lambda: len(sub.ids) >= seen + 400, "rows after a reset", 60)
        _alive(q)
    finally:
        q.stop()
        relay.close()
        hub.stop()
    assert sub.ids == list(range(len(sub.ids))), "a row lost or delivered twice"
    assert hub.stats().batches_delivered > 0


@pytest.mark.timeout(300)
def test_beyond_the_window_a_query_fails_with_the_data_loss_fail_on_data_loss_reports(spark, tmp_path):
    server = net.serve(LiveCounter(), name="ids", token=TOKEN, retention=Retention(window=2))
    relay = FaultRelay(server.address)
    sub = Collect()
    df = (
        spark.readStream.format("reactive")
        .option("endpoint", relay.address(server.address))
        .option("token", TOKEN)
        .options(**{**LINK, "keepaliveTimeout": "1s"}, maxRecordsPerTrigger="200", pollTimeout="100ms")
        .schema("id LONG")
        .load()
    )
    q = rs_spark.write_stream(df, sub, checkpoint=str(tmp_path / "chk"), trigger={"processingTime": "200 milliseconds"})
    try:
        wait_until(lambda: len(sub.ids) >= 200, "200 rows", 120)
        relay.black_hole()
        wait_until(lambda: not q.isActive, "the query to fail once the window ended", 60)
        text = str(q.exception())
        assert "DataLossError" in text and "cannot resume stream" in text and "the endpoint's window" in text, text
        assert "Set failOnDataLoss=false" in text and TOKEN not in text
        wait_until(sub.failed.is_set, "on_error at the Subscriber")
    finally:
        q.stop()
        relay.close()
        server.stop()
    assert sub.ids == list(range(len(sub.ids)))
