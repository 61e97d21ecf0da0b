"""RSocket over WebSocket: ws:// and wss:// end to end, the standard mapping (one frame per
binary message, no length prefix) checked with a hand-written client, refusals, limits, and
rs_spark.tck on a publisher served over ws://."""

from __future__ import annotations

import itertools
import os
import socket
import struct
import threading

import pyarrow as pa
import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol import metadata as M
from rs_spark.net.protocol.address import parse
from rs_spark.net.protocol.websocket import encode_frame, mask
from rs_spark.net.protocol.ws_handshake import accept_value, client_handshake
from rs_spark.tck import PublisherVerification, Timeouts

from ..waits import wait_until

pytestmark = pytest.mark.timeout(120)

BATCH = pa.record_batch({"x": pa.array(range(65536), pa.int64())})
_names = itertools.count()


@pytest.fixture(scope="module")
def server():
    s = net.Server("ws://127.0.0.1:0", limits=net.Limits(setup_timeout=1.0, max_frame_bytes=1 << 20))
    s.add_publisher("numbers", rs.range_(5000))
    s.add_publisher("arrow", rs.defer(lambda: iter([BATCH] * 20)))
    yield s
    s.stop()


def _join(parts):
    return b"".join(bytes(p) for p in parts)


def test_ws_stream_end_to_end_json_and_arrow(server):
    assert server.address.startswith("ws://127.0.0.1:")
    assert rs.to_list(net.connect(server.address_of("numbers")), timeout=30, request_size=64) == list(range(5000))
    got = rs.to_list(net.connect(server.address_of("arrow"), codec="arrow"), timeout=30, request_size=2)
    assert sum(b.num_rows for b in got) == 20 * 65536 and got[-1].column("x")[65535].as_py() == 65535


def test_ws_channel_feeds_a_served_subscriber():
    results = []
    done = threading.Event()
    s = net.serve(
        lambda: rs.CallbackSubscriber(results.append, on_complete=done.set, request_size=8),
        name="sink",
        bind="ws://127.0.0.1:0",
    )
    try:
        rs.range_(1000).subscribe(net.connect_subscriber(s.address))
        assert done.wait(30) and results == list(range(1000))
    finally:
        s.stop()


def test_wss_is_websocket_over_tls(tls):
    sctx, cctx = tls
    s = net.Server("ws://127.0.0.1:0", token="t", ssl=sctx)
    try:
        s.add_publisher("n", rs.range_(300))
        assert s.address.startswith("wss://")
        assert rs.to_list(net.connect(s.address_of("n"), token="t", ssl=cctx), timeout=30) == list(range(300))
    finally:
        s.stop()


class _RawWs:
    """A minimal WebSocket client of our own: RSocket frames in, RSocket frames out."""

    def __init__(self, address: str) -> None:
        a = parse(address)
        self.sock = socket.create_connection((a.host, a.port), timeout=10)
        self.rest = client_handshake(self.sock, f"{a.host}:{a.port}", "/", 10)

    def send_frame(self, frame_parts, masked=True) -> None:
        payload = _join(frame_parts)
        self.sock.sendall(_join(encode_frame(0x2, payload, masked)))

    def _exact(self, n: int) -> bytes:
        out = b""
        if self.rest:
            out, self.rest = self.rest[:n], self.rest[n:]
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise EOFError
            out += chunk
        return out

    def recv_message(self):
        """(opcode, payload) of the next WebSocket frame."""
        b0, b1 = self._exact(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._exact(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._exact(8))[0]
        assert not b1 & 0x80, "a server must not mask its frames"
        return b0 & 0x0F, self._exact(n)


def test_each_rsocket_frame_is_one_binary_message_without_a_length_prefix(server):
    ws = _RawWs(server.address)
    ws.send_frame(F.encode_setup(1000, 5000, M.COMPOSITE, "application/json", prefixed=False))
    ws.send_frame(
        F.encode_request(F.REQUEST_STREAM, 1, 3, metadata=M.request_metadata(M.COMPOSITE, "numbers"), prefixed=False)
    )
    got = []
    while len(got) < 3:
        op, payload = ws.recv_message()
        assert op == 0x2
        f = F.decode(payload)  # decodes as a whole frame: no 24-bit prefix in front
        if f.type == F.PAYLOAD:
            got.append(bytes(f.data))
    assert got == [b"0", b"1", b"2"]
    ws.sock.close()


def test_unmasked_client_frames_are_refused_with_status_1002(server):
    ws = _RawWs(server.address)
    ws.send_frame(F.encode_setup(1000, 5000, M.COMPOSITE, "application/json", prefixed=False), masked=False)
    op, payload = ws.recv_message()
    assert op == 0x8 and struct.unpack("!H", payload[:2])[0] == 1002 and b"mask" in payload
    assert rs.to_list(net.connect(server.address_of("numbers")), timeout=10, request_size=256)[-1] == 4999


def test_a_message_above_the_frame_limit_is_refused_before_its_body_is_read(server):
    ws = _RawWs(server.address)
    # Announce a 100 MB binary message and send no body: the server must answer 1009 at once.
    ws.sock.sendall(bytes([0x82, 0x80 | 127]) + struct.pack("!Q", 100 << 20) + os.urandom(4))
    op, payload = ws.recv_message()
    assert op == 0x8 and struct.unpack("!H", payload[:2])[0] == 1009


def test_a_plain_http_request_gets_400_saying_what_to_send_and_the_server_keeps_serving(server):
    a = parse(server.address)
    with socket.create_connection((a.host, a.port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    assert data.startswith(b"HTTP/1.1 400") and b"Upgrade: websocket" in data
    assert rs.to_list(net.connect(server.address_of("numbers")), timeout=10, request_size=256)[-1] == 4999


def test_a_client_that_never_upgrades_is_closed_within_the_setup_timeout(server):
    a = parse(server.address)
    with socket.create_connection((a.host, a.port), timeout=10) as sock:
        sock.settimeout(10)
        assert sock.recv(4096) == b""  # closed by the server after setup_timeout (1 s)


def test_ws_client_on_a_tcp_server_fails_saying_it_is_not_a_websocket_endpoint():
    s = net.serve(rs.range_(3), name="plain")
    try:
        with pytest.raises(net.ConnectionLost, match=r"ws://127\.0\.0\.1:\d+"):
            rs.to_list(net.connect(s.address.replace("tcp://", "ws://"), connect_timeout=2), timeout=10)
        assert rs.to_list(net.connect(s.address), timeout=10) == [0, 1, 2]
    finally:
        s.stop()


def test_handshake_helpers_follow_rfc_6455():
    # The RFC's own example (section 1.3).
    assert accept_value("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    key = b"\x01\x02\x03\x04"
    data = os.urandom(1001)
    assert mask(mask(data, key), key) == data and mask(b"\x00\x00\x00\x00\x00", key) == key + key[:1]


def test_cancel_over_ws_reaches_the_source_and_the_connection_closes_cleanly(server):
    closed = threading.Event()

    def gen():
        try:
            yield from itertools.count()
        finally:
            closed.set()

    s = net.serve(rs.defer(gen), name="forever", bind="ws://127.0.0.1:0")
    try:
        it = rs.iterate(net.connect(s.address), prefetch=16)
        assert [next(it) for _ in range(100)] == list(range(100))
        it.close()
        assert closed.wait(10), "cancel did not reach the source"
    finally:
        s.stop()


class TestPublisherServedOverWebSocket(PublisherVerification):
    """Every publisher rule, on the Publisher that connect() returns for a ws:// endpoint."""

    timeouts = Timeouts(default=1.0, no_signals=0.1, poll=0.01, gc=0.5)
    skips = {}

    @pytest.fixture(autouse=True)
    def _server(self, server):
        self.server = server

    def create_publisher(self, elements):
        pub = rs.range_(elements) if elements < 2**63 - 1 else rs.defer(lambda: iter(int, 1))
        return net.connect(self.server.add_publisher(f"p{next(_names)}", pub))

    def create_failed_publisher(self):
        return net.connect(self.server.add_publisher(f"f{next(_names)}", rs.error(RuntimeError("failed publisher"))))


def test_twenty_ws_streams_in_a_row_leave_no_pump_threads_behind(server):
    def ws_threads():
        return [t for t in threading.enumerate() if t.name.startswith("rs-net-ws")]

    for _ in range(20):
        assert rs.to_list(net.connect(server.address_of("numbers")), timeout=10, request_size=512)[-1] == 4999
    # connections close asynchronously
    wait_until(lambda: not ws_threads(), lambda: f"no pump thread left: {[t.name for t in ws_threads()]}", 5)
