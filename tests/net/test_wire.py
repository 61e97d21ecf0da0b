"""Frames, metadata and addresses; malformed and oversized frames; tokens; limits; demand pieces."""

from __future__ import annotations

import pickle
import socket
import threading

import pyarrow as pa
import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol import metadata as M
from rs_spark.net.protocol.address import parse
from rs_spark.net.protocol.bridge import InboundSubscription
from rs_spark.net.protocol.codecs import make_codec
from rs_spark.streams.drain import subscribe_with
from tests.wire import split_frames

from ..subscribers import Recorder

pytestmark = pytest.mark.timeout(60)


def _join(parts):
    return b"".join(bytes(p) for p in parts)


# -- codec ------------------------------------------------------------------------------
def test_json_numbers_with_a_fraction_keep_their_text_and_are_the_floats_they_stand_for():
    codec = make_codec("json")
    text = b'{"d": 12345678901234567890.123456789012345678, "x": 0.10, "e": 1e2, "i": 7, "n": -0.0}'
    got = codec.decode(text)
    assert got == {"d": 12345678901234567890.123456789012345678, "x": 0.1, "e": 100.0, "i": 7, "n": -0.0}
    assert (got["d"].text, got["x"].text, got["e"].text) == ("12345678901234567890.123456789012345678", "0.10", "1e2")
    assert type(got["i"]) is int and isinstance(got["x"], float) and str(got["x"]) == "0.1"
    plain = {k: v if type(v) is int else float(v) for k, v in got.items()}
    assert _join(codec.encode(got)) == _join(codec.encode(plain))  # encoded as the floats they are
    again = pickle.loads(pickle.dumps(got["d"]))
    assert again == got["d"] and again.text == got["d"].text


def test_frames_round_trip():
    f = F.decode(_join(F.encode_request(F.REQUEST_STREAM, 5, 7, metadata=b"md", data=[b"hi"], prefixed=False)))
    assert (f.type, f.stream_id, f.request_n, bytes(f.metadata), bytes(f.data)) == (
        F.REQUEST_STREAM,
        5,
        7,
        b"md",
        b"hi",
    )
    f = F.decode(_join(F.encode_payload(3, [b"x"], complete=True, prefixed=False)))
    assert f.has(F.FLAG_NEXT) and f.has(F.FLAG_COMPLETE) and bytes(f.data) == b"x" and f.metadata is None
    f = F.decode(_join(F.encode_setup(500, 2000, M.COMPOSITE, "application/json", metadata=b"m", prefixed=False)))
    assert (f.version, f.keepalive_ms, f.lifetime_ms, f.metadata_mime, f.data_mime) == (
        (1, 0),
        500,
        2000,
        M.COMPOSITE,
        "application/json",
    )
    f = F.decode(_join(F.encode_error(9, F.APPLICATION_ERROR, "ValueError: x", prefixed=False)))
    assert f.error_code == F.APPLICATION_ERROR and bytes(f.data) == b"ValueError: x"
    prefixed = _join(F.encode_request_n(1, 2**31 - 1))
    assert int.from_bytes(prefixed[:3], "big") == len(prefixed) - 3
    assert F.decode(prefixed[3:]).request_n == 2**31 - 1


@pytest.mark.parametrize(
    "raw",
    [
        b"\x00",
        b"\x00\x00\x00\x01" + bytes([F.PAYLOAD << 2 | 1, 0]) + b"\x00\x00\x09ab",
        b"\x00\x00\x00\x01\x20\x00\x00\x00",
        b"\x80\x00\x00\x01\x28\x00",
    ],
)
def test_malformed_frames_raise_frame_error(raw):
    with pytest.raises(F.FrameError):
        F.decode(raw)


def test_metadata_extensions_round_trip():
    md = M.composite(
        [(M.ROUTING, M.routing("numbers")), (M.AUTHENTICATION, M.bearer("s3cret")), ("application/x.custom", b"zz")]
    )
    assert M.route_of(M.COMPOSITE, md) == "numbers"
    assert M.token_of(M.COMPOSITE, md) == b"s3cret"
    assert M.parse_composite(md)[2] == ("application/x.custom", b"zz")
    simple = bytes([0x80]) + (4).to_bytes(2, "big") + b"user" + b"pw"
    assert M.parse_auth(simple) == ("simple", "user", b"pw")


def test_address_strings_parse_format_and_pickle():
    a = parse("tcp://127.0.0.1:7878/numbers?token=abc&codec=arrow")
    assert (a.host, a.port, a.name, a.token, a.codec) == ("127.0.0.1", 7878, "numbers", "abc", "arrow")
    assert "abc" not in str(a) and a.format(with_token=True).endswith("token=abc&codec=arrow")
    u = parse("unix:///tmp/x.sock/name")
    assert (u.path, u.name) == ("/tmp/x.sock", "name")
    for bad in ["http://x:1/a", "tcp://127.0.0.1/a", "tcp://127.0.0.1:1", "unix://rel/a", "tcp://h:1/a?tokn=1"]:
        with pytest.raises(ValueError, match="expected"):
            parse(bad)


def test_remote_publisher_pickles_with_its_token_and_codec():
    import pyarrow as pa

    batch = pa.record_batch({"x": pa.array(range(10), pa.int64())})
    s = net.serve(rs.just(batch), name="numbers", token="abc")
    try:
        pub = net.connect(s.address + "?token=abc", codec="arrow")
        again = pickle.loads(pickle.dumps(pub))
        assert again.address == s.address and "abc" not in again.address
        got = rs.to_list(again, timeout=10)  # refused without the token; not a RecordBatch without the codec
        assert len(got) == 1 and got[0].equals(batch)
    finally:
        s.stop()


def test_address_errors_never_show_the_token():
    secret = "s3cret-token"
    bad = [
        "http://x:1/a",  # no known scheme: the token was shown here before
        "tcp://127.0.0.1/a",
        "tcp://127.0.0.1:1",
        "tcp:///a",
        "unix://rel/a",
        "unix:///s.sock",
        "tcp://h:1/a?tokn=1",
    ]
    for address in bad:
        with pytest.raises(ValueError, match="expected") as ei:
            parse(address + ("&" if "?" in address else "?") + "token=" + secret)
        # a readable address shows its token redacted; any other value nothing after its first '?'
        assert secret not in str(ei.value) and ("token=***" in str(ei.value) or "?***'" in str(ei.value)), address


def test_connection_failure_says_where_and_keeps_the_os_error_as_its_cause():
    with socket.socket() as probe:  # a port nobody listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(net.ConnectionLost, match=rf"could not connect to tcp://127\.0\.0\.1:{port}") as ei:
        rs.to_list(net.connect(f"tcp://127.0.0.1:{port}/x", connect_timeout=5), timeout=10)
    assert isinstance(ei.value.__cause__, ConnectionRefusedError)


# -- servers -----------------------------------------------------------------------------
@pytest.fixture
def server():
    s = net.serve(rs.range_(100), name="numbers", limits=net.Limits(max_frame_bytes=4096, setup_timeout=0.5))
    yield s
    s.stop()


def _raw(server, frames):
    a = parse(server.address)
    sock = socket.create_connection((a.host, a.port), timeout=5)
    for fr in frames:
        sock.sendall(fr)
    return sock


def _read_all(sock, limit=5.0):
    sock.settimeout(limit)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data, True
            data += chunk
    except TimeoutError:
        return data, False


SETUP = _join(F.encode_setup(1000, 5000, M.COMPOSITE, "application/json"))


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x00\x00\x02\xff\xff",  # a 2-byte frame: shorter than a header
        b"\x00\x00\x06\x00\x00\x00\x01" + bytes([0x30 << 2, 0]),  # unknown frame type without IGNORE
        b"\x00\x00\x09\x00\x00\x00\x01" + bytes([(F.PAYLOAD << 2) | 1, 0]) + b"\x00\xff\xff",  # metadata past the end
    ],
)
def test_malformed_frame_closes_that_connection_and_the_server_keeps_serving(server, garbage):
    sock = _raw(server, [SETUP, garbage])
    data, closed = _read_all(sock)
    assert closed, "the server did not close a connection that sent a malformed frame"
    errs = [f for f in split_frames(data) if f.type == F.ERROR and f.stream_id == 0]
    assert errs and errs[0].error_code == F.CONNECTION_ERROR
    assert rs.to_list(net.connect(server.address), timeout=10) == list(range(100))


def test_oversized_frame_is_refused_before_its_body_is_read(server):
    sock = _raw(server, [SETUP, (10_000_000).to_bytes(3, "big") + b"\x00" * 16])
    data, closed = _read_all(sock)
    assert closed
    errs = [f for f in split_frames(data) if f.type == F.ERROR]
    assert errs and b"exceeds" in bytes(errs[0].data)
    assert rs.to_list(net.connect(server.address), timeout=10) == list(range(100))


def test_no_setup_within_the_setup_timeout_closes_the_connection(server):
    sock = _raw(server, [])
    _, closed = _read_all(sock, limit=5)  # setup_timeout is 0.5 s: closed long before the 5 s read limit
    assert closed


def test_too_many_streams_on_one_connection_are_refused():
    s = net.serve(rs.defer(lambda: iter(int, 1)), name="forever", limits=net.Limits(max_streams=2))
    try:
        with net.Client(s.base_address) as c:
            subs = [rs.CallbackSubscriber(lambda x: None, request_size=1) for _ in range(3)]
            for sub in subs:
                c.publisher("forever").subscribe(sub)
            with pytest.raises(net.Refused, match="too many open streams"):
                subs[2].wait(10)
    finally:
        s.stop()


def test_wrong_or_missing_token_is_refused_before_any_stream_opens():
    subscribed = []
    pub = rs.defer(lambda: subscribed.append(1) or [1, 2])
    s = net.serve(pub, name="p", token="right-token")
    try:
        with pytest.raises(net.Refused, match="requires a token"):
            rs.to_list(net.connect(s.address), timeout=10)
        with pytest.raises(net.Refused, match="wrong token"):
            rs.to_list(net.connect(s.address, token="wrong"), timeout=10)
        assert subscribed == []
        assert rs.to_list(net.connect(s.address, token="right-token"), timeout=10) == [1, 2]
        assert rs.to_list(net.connect(s.address + "?token=right-token"), timeout=10) == [1, 2]
    finally:
        s.stop()


def test_binding_beyond_loopback_requires_a_token():
    with pytest.raises(ValueError, match="token is required"):
        net.Server("tcp://0.0.0.0:0")


def test_unknown_name_is_refused_without_listing_what_is_served_and_wrong_kind_says_the_kind(server):
    with pytest.raises(net.Refused, match=r"serves no publisher named 'nope'; check the name") as err:
        rs.to_list(net.connect(server.base_address + "/nope"), timeout=10)
    assert "numbers" not in str(err.value)  # the names served are not told to whoever connects
    with pytest.raises(net.Refused, match="is a publisher, not a subscriber"):
        sub = net.connect_subscriber(server.address)
        rs.just(1).subscribe(sub)
        sub.wait(10)


def test_connection_refused_says_where_and_what_to_do():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(net.ConnectionLost, match=rf"127.0.0.1:{port}.*server is running"):
        rs.to_list(net.connect(f"tcp://127.0.0.1:{port}/x"), timeout=10)


# -- rules on the wire --------------------------------------------------------------------
class _FakeConn:
    def __init__(self):
        self.sent = []
        self.worker = self

    def submit(self, fn):
        fn()

    def send(self, frame):
        self.sent.append(F.decode(_join(frame)[3:]))
        return True

    reply = send

    def remove_stream(self, sid):
        pass


def test_spec_3_17_demand_beyond_31_bits_is_sent_in_pieces_as_credit_is_used():
    sub = rs.CallbackSubscriber(lambda x: None, request_size=1)
    inb = InboundSubscription(sub, make_codec("json"), "test stream", requester=True)
    conn = _FakeConn()
    opened = []
    inb.request(2**40)
    inb.attach(conn, 1, opener=opened.append)
    assert opened == [2**31 - 1] and conn.sent == []
    for _ in range(3):  # the peer used credits: top-ups follow, never above 2^31-1 in flight
        inb._inflight = 2**30 - 1
        with inb._wlock:
            inb._top_up_locked()
    assert [f.request_n for f in conn.sent] == [2**30] * 3
    inb.cancel()
    assert conn.sent[-1].type == F.CANCEL


class _TakesEmpty:
    """An Arrow Subscriber that asks for 0-row batches (as the delivery hub's commits do)."""

    receives_empty_batches = True

    def __init__(self):
        self.rows, self.error = [], None

    def on_subscribe(self, s):
        self.s = s
        s.request(1)

    def on_next(self, batch):
        self.rows.append(batch.num_rows)
        self.s.request(1)

    def on_error(self, e):
        self.error = e

    def on_complete(self):
        pass


@pytest.mark.parametrize("asks", [True, False])
def test_empty_arrow_batches_reach_only_a_subscriber_that_asks_and_give_their_credit_back(asks):
    """A 0-row batch costs one credit when kept, like a 1-row batch, and gives it back once taken:
    a stream of them never runs out of credit (a kept one used to keep its credit, so a Subscriber
    asking one at a time stalled after its window); the first, carried by REQUEST_CHANNEL, is taken
    like the rest. Without asking, a Subscriber sees no empty batch, as before."""
    codec = make_codec("arrow")
    sub = _TakesEmpty()
    if not asks:
        sub.receives_empty_batches = False
    inb = InboundSubscription(sub, codec, "test channel", requester=False, batch_rows=4)
    conn = _FakeConn()
    inb.attach(conn, 1)
    empty = _join(codec.encode(pa.record_batch({"id": pa.array([], pa.int64())})))
    inb.accept_first(empty)
    subscribe_with(sub, inb, start=True)
    for _ in range(20):
        inb.on_frame(F.decode(_join(F.encode_payload(1, [empty]))[3:]))
    assert sub.error is None
    assert sub.rows == ([0] * 21 if asks else [])
    granted = sum(f.request_n for f in conn.sent if f.type == F.REQUEST_N)
    assert granted >= 21 if asks else granted == 4, granted  # 20 on top of the implied first credit


def test_row_credit_is_topped_up_in_halves_of_the_window_not_per_batch():
    """A Subscriber taking one batch at a time (the delivery hub's commits) from a peer that sends
    one row a payload: credit goes back when half the window is used, never one REQUEST_N per row,
    and the peer, sending only within its credit, never runs dry."""
    codec = make_codec("arrow")
    sub = _TakesEmpty()
    inb = InboundSubscription(sub, codec, "test channel", requester=False, batch_rows=64)
    conn = _FakeConn()
    inb.attach(conn, 1)
    subscribe_with(sub, inb, start=True)
    one = _join(codec.encode(pa.record_batch({"id": pa.array([7], pa.int64())})))
    sent = 0
    for _ in range(1000):
        granted = sum(f.request_n for f in conn.sent if f.type == F.REQUEST_N)
        assert granted - sent >= 1, f"the peer ran out of credit after {sent} rows"
        inb.on_frame(F.decode(_join(F.encode_payload(1, [one]))[3:]))
        sent += 1
    assert sub.error is None and sub.rows == [1] * 1000
    grants = [f.request_n for f in conn.sent if f.type == F.REQUEST_N]
    assert len(grants) <= 1000 // 32 + 2, f"{len(grants)} REQUEST_N frames for 1000 rows: {grants[:10]}..."


def test_spec_3_9_request_zero_across_the_wire_errors_locally_and_cancels_the_source():
    closed = threading.Event()

    def gen():
        try:
            yield from range(10**6)
        finally:
            closed.set()

    s = net.serve(rs.defer(gen), name="g")
    try:
        sub = Recorder(batch=1, bad_request_after=1)
        net.connect(s.address).subscribe(sub)
        assert sub.wait_done(10) and isinstance(sub.error, ValueError) and "3.9" in str(sub.error)
        assert closed.wait(10), "the remote source was not cancelled"
    finally:
        s.stop()


def test_spec_1_1_a_remote_publisher_sending_more_than_requested_fails_the_stream():
    """A hand-written RSocket server that ignores credits: the client stops it and names rule 1.1."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    port = lsock.getsockname()[1]

    def rogue():
        c, _ = lsock.accept()
        buf = b""
        while True:
            buf += c.recv(65536)
            frames = split_frames(buf)
            req = [f for f in frames if f.type == F.REQUEST_STREAM]
            if req:
                break
        for i in range(10):
            c.sendall(_join(F.encode_payload(req[0].stream_id, [str(i).encode()])))
        # Close only once the client has: closing with its frames unread would send a reset,
        # which can discard the payloads before the client reads them.
        c.settimeout(10)
        try:
            while c.recv(65536):
                pass
        except OSError:
            pass
        c.close()

    threading.Thread(target=rogue, daemon=True).start()
    it = rs.iterate(net.connect(f"tcp://127.0.0.1:{port}/x"), prefetch=2, timeout=10)
    with pytest.raises(net.ProtocolError, match=r"rule 1\.1"):
        list(it)
    lsock.close()


def test_arrow_serving_asks_its_publisher_only_for_what_the_peer_credit_covers():
    # The served side requests several RecordBatches at once (sized by the last one's rows),
    # but never more than the subscriber's credit covers: nothing piles up on the server.
    import pyarrow as pa

    rows = 1000
    asked = []
    produced = [0]
    granted = [3]  # batches the subscriber asked for so far (raised before it asks for more)
    overasked = []  # (produced, n, granted) for every ask beyond the credit (one spare allowed)
    upstream_cancelled = threading.Event()

    class Batches:
        def subscribe(self, s):
            class Sub:
                def request(self, n):
                    asked.append(n)
                    if produced[0] + n > granted[0] + 1:
                        overasked.append((produced[0], n, granted[0]))
                    for _ in range(n):
                        produced[0] += 1
                        s.on_next(pa.record_batch({"x": pa.array(range(rows), pa.int64())}))

                def cancel(self):
                    upstream_cancelled.set()

            s.on_subscribe(Sub())

    s = net.serve(Batches(), name="b")
    try:
        sub = Recorder(batch=3, refill=False)
        net.connect(s.address, codec="arrow", batch_rows=rows).subscribe(sub)
        sub.wait_for(3, 10)
        granted[0] = 23
        sub.request(20)
        sub.wait_for(23, 10)
        sub.s.cancel()
        # The cancel runs on the server's signal thread after every ask before it, and the stream
        # asks for nothing once cancelled: what was produced is now final.
        assert upstream_cancelled.wait(10)
        assert sub.error is None and [b.num_rows for b in sub.items] == [rows] * 23
        assert not overasked, f"asks beyond the credit (produced, n, granted): {overasked}"
        assert produced[0] <= 23 + 1, f"the server took {produced[0]} batches from its publisher for a credit of 23"
        assert any(n > 1 for n in asked), f"requests were {asked}: one per batch"
    finally:
        s.stop()
