"""Network outages in real-time mode: the reactive-rt source's tasks (rsspark.rsocket.StreamReader)
and the real-time sink's tasks (rsspark.rt.SinkChannel) ride out a black hole and a reset between
them and their endpoints (tests/faultrelay.py), each longer than the keepalive lifetime and than a
real-time batch: every row once and in order, the query alive. Durations scaled down (lifetime 1 s,
batches of 1 s); jvm-shim's OutageTest and SinkChannelTest drive the same classes without Spark,
past the window and past reconnectTimeout."""

from __future__ import annotations

import secrets
import time
from typing import Any

import pytest

from rs_spark import net
from rs_spark.delivery import DeliveryHub
from rs_spark.net.protocol.address import parse
from rs_spark.net.zero_loss.retention import Retention
from rs_spark.spark import realtime
from tests.faultrelay import FaultRelay
from tests.waits import wait_until

from .publishers import DDL, rows
from .subscribers import Collect

LINK = {
    "keepaliveInterval": "200ms",
    "keepaliveTimeout": "1s",
    "connectTimeout": "1s",
    "reconnectBackoff": "50ms",
    "reconnectBackoffMax": "500ms",
}


def _outage_for(seconds: float, q: Any) -> None:
    """Let an outage last ``seconds`` (time passing is the fault under test), checking the query stays up."""
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        assert q.isActive and q.exception() is None, q.exception()
        time.sleep(min(0.5, max(0.0, ends - time.monotonic())))


@pytest.mark.timeout(300)
def test_a_real_time_query_rides_out_outages_of_its_source_and_of_its_sinks_hub(rt_spark, tmp_path):
    token = secrets.token_urlsafe(16)
    server = net.serve(rows(), name="rt", token=token, retention=Retention(window=120))
    address = parse(server.address).with_token(token).with_codec("arrow").format(with_token=True)
    source = FaultRelay(server.address)
    sub = Collect()
    hub = DeliveryHub(sub)
    hub_address = hub.serve()
    sink = FaultRelay(hub_address)
    df = rt_spark.readStream.format("reactive-rt").schema(DDL).option("endpoint", source.address(address))
    q = realtime.write_stream(
        df.options(**LINK).load(),
        sink.address(hub_address),
        options={**LINK, "reconnectTimeout": "60s"},
        trigger="1 second",
        checkpoint=str(tmp_path / "chk"),
    )
    try:
        wait_until(lambda: len(sub.ids) >= 100, "100 rows", 120)
        for relay, fault in ((source, "black_hole"), (source, "reset"), (sink, "black_hole"), (sink, "reset")):
            getattr(relay, fault)()
            _outage_for(3.0, q)  # three keepalive lifetimes, three real-time batches
            relay.heal()
            seen = len(sub.ids)
            wait_until(
                lambda seen=seen: len(sub.ids) >= seen + 100,
                f"rows after the {fault} of the {relay is sink and 'sink' or 'source'}",
                90,
            )
    finally:
        q.stop()
        source.close()
        sink.close()
        hub.stop()
        server.stop()
    assert sub.ids == list(range(len(sub.ids))), "a row lost or delivered twice"
