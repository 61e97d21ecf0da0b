"""rsocket-js (0.0.27, pinned in interop/js/package-lock.json) as a second independent RSocket peer:
request-stream and request-channel in both directions, routing, tokens, errors, credits. The peer is
a real Node process (interop/js/peer.js) on 127.0.0.1.

rsocket-js, like rsocket-java, sends a channel's first element as the REQUEST_CHANNEL frame's data
and hands that frame to its responder as element 0: these tests fail if rs_spark drops or invents
that element (before: 999 of 1000 arrived one way, one null element too many the other)."""

from __future__ import annotations

import threading

import pytest

from rs_spark import net
from rs_spark import streams as rs

from ..js_peer import JsPeer, js_server_at
from ..subscribers import Recorder

TOKEN = "js-interop-token"

pytestmark = pytest.mark.usefixtures("rsocket_js")


@pytest.fixture
def js_server():
    with js_server_at(500, 7) as server:
        yield server


def test_a_js_channel_delivers_its_first_element_to_a_served_subscriber():
    sub = Recorder(batch=7)  # over-delivery would be a rule 1.1 error
    server = net.serve(sub, name="sink", token=TOKEN)
    peer = JsPeer("client", server.address.rsplit(":", 1)[1].split("/")[0], "sink", 1000, TOKEN)
    try:
        stats = peer.next()
        assert sub.wait_done(60).error is None, sub.error
        assert sub.items == list(range(1000))  # element 0 came in the REQUEST_CHANNEL frame
        # credits counted on the wire: one implied for element 0, then only what REQUEST_N granted
        assert stats["sent"] == 1000 and stats["requested"] <= 1000 + 7
    finally:
        peer.close()
        server.stop()


def test_an_rs_spark_channel_to_a_js_responder_neither_loses_nor_invents_an_element(js_server):
    peer, port = js_server
    sub = net.connect_subscriber(f"tcp://127.0.0.1:{port}/sink")
    rs.range_(300).subscribe(sub)
    seen = peer.next()
    sub.wait(30)
    assert seen.get("error") is None and seen["route"] == "sink"
    assert seen["received"] == list(range(300))  # no null element 0, nothing missing
    assert seen["over"] == 0  # the JS responder never received more than it requested (step 7)


def test_route_only_is_what_a_js_responder_reads_as_an_extra_empty_element(js_server):
    """The other convention, chosen explicitly, against a Java/JS responder: documented, visible."""
    peer, port = js_server
    sub = net.connect_subscriber(f"tcp://127.0.0.1:{port}/sink", channel_open="route_only")
    rs.range_(5).subscribe(sub)
    seen = peer.next()
    sub.wait(30)
    assert seen["received"] == [None, 0, 1, 2, 3, 4]


def test_an_empty_publisher_is_one_null_element_to_rsocket_js_which_has_no_empty_channel(js_server):
    """Known limit of the Java/JS convention (docs/interop.md): an empty channel opens with a
    REQUEST_CHANNEL carrying no data and COMPLETE; rs_spark servers read no element, rsocket-js
    hands its responder that frame as a null element and ignores the COMPLETE flag."""
    peer, port = js_server
    sub = net.connect_subscriber(f"tcp://127.0.0.1:{port}/sink")
    rs.empty().subscribe(sub)
    seen = peer.next()
    sub.wait(30)
    assert seen["received"] == [None]


@pytest.mark.parametrize("credits", [1, 10, 1000])
def test_js_reads_a_served_publisher_within_its_credits(credits):
    server = net.serve(rs.range_(500), name="numbers", token=TOKEN)
    port = server.address.rsplit(":", 1)[1].split("/")[0]
    peer = JsPeer("stream", port, "numbers", TOKEN, credits)
    try:
        got = peer.next()
        assert got.get("error") is None and got["received"] == list(range(500))
    finally:
        peer.close()
        server.stop()


@pytest.mark.parametrize(
    "token,route,says", [("wrong", "numbers", "wrong token"), (TOKEN, "nope", "no publisher named 'nope'")]
)
def test_js_is_refused_with_a_reason(token, route, says):
    server = net.serve(rs.range_(5), name="numbers", token=TOKEN)
    port = server.address.rsplit(":", 1)[1].split("/")[0]
    peer = JsPeer("stream", port, route, token, 10)
    try:
        got = peer.next()
        assert says in got.get("error", ""), got
        assert not got.get("received")
    finally:
        peer.close()
        server.stop()


def test_rs_spark_reads_a_js_publisher_in_order(js_server):
    _, port = js_server
    assert rs.to_list(net.connect(f"tcp://127.0.0.1:{port}/numbers"), timeout=60) == list(range(500))


def test_a_js_error_reaches_the_rs_spark_reader(js_server):
    _, port = js_server
    with pytest.raises(net.RemoteError, match="no stream named other"):
        rs.to_list(net.connect(f"tcp://127.0.0.1:{port}/other"), timeout=60)


def test_a_js_cancel_stops_the_served_publisher_within_its_credits():
    produced, closed = [], threading.Event()

    def endless():
        try:
            i = 0
            while True:
                produced.append(i)
                yield i
                i += 1
        finally:
            closed.set()

    server = net.serve(rs.defer(endless), name="endless", token=TOKEN)
    port = server.address.rsplit(":", 1)[1].split("/")[0]
    peer = JsPeer("stream", port, "endless", TOKEN, 10, 25)
    try:
        got = peer.next()
        assert got["cancelled"] and got["received"] == list(range(25)) and got["over"] == 0
        assert closed.wait(30), "the served publisher was not cancelled"
        assert len(produced) <= 30  # never more than the credits granted (3 x 10)
    finally:
        peer.close()
        server.stop()


def test_js_keepalives_hold_an_idle_stream_open_past_the_lifetime():
    """rsocket-js sends KEEPALIVE every 200 ms with a 1 s lifetime; the stream stays idle for 3 s
    (the silence is what is tested) and neither side drops the connection."""
    release = threading.Event()

    def idle_then_more():
        yield 0
        release.wait(3.0)  # not synchronisation: three lifetimes without a data frame
        yield from range(1, 5)

    server = net.serve(rs.defer(idle_then_more), name="idle", token=TOKEN)
    port = server.address.rsplit(":", 1)[1].split("/")[0]
    peer = JsPeer("stream", port, "idle", TOKEN, 10, 0, 200, 1000)
    try:
        got = peer.next(timeout=60)
        assert got.get("error") is None and got["received"] == list(range(5))
    finally:
        peer.close()
        server.stop()
