"""Endpoints under attack, on real sockets: fuzzed, truncated, oversized and trickled frames,
silent clients, token guessing, connection floods, a client that never reads. The server must
refuse or close cleanly and keep serving; it never crashes, hangs, or grows without bound
(connection_count and the thread count return to where they were)."""

from __future__ import annotations

import socket
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol import metadata as M
from rs_spark.net.protocol.address import parse
from rs_spark.net.protocol.auth import setup_metadata

from ..waits import wait_until
from ..wire import split_frames

pytestmark = pytest.mark.timeout(120)

TOKEN = "attack-test-token"
SETUP = b"".join(
    bytes(b) for b in F.encode_setup(1000, 5000, M.COMPOSITE, "application/json", metadata=setup_metadata(TOKEN))
)
LIMITS = net.Limits(max_frame_bytes=64 * 1024, setup_timeout=0.5, max_connections=16, max_streams=8)


def _join(parts):
    return b"".join(bytes(p) for p in parts)


@pytest.fixture(scope="module")
def server():
    s = net.Server(token=TOKEN, limits=LIMITS)
    s.add_publisher("numbers", rs.range_(50))
    s.add_publisher("forever", rs.defer(lambda: iter(int, 1)))
    s.add_subscriber("sink", lambda: rs.CallbackSubscriber(lambda x: None))
    yield s
    s.stop()


def _connect(server) -> socket.socket:
    a = parse(server.base_address, need_name=False)
    return socket.create_connection((a.host, a.port), timeout=5)


def _read_until_closed(sock, limit=5.0):
    """All bytes until the server closes; None if it did not close within ``limit`` seconds."""
    sock.settimeout(limit)
    data = bytearray()  # not bytes: += on bytes copies everything read so far, for each chunk
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return bytes(data)
            data += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        return bytes(data)


def _ask_for_everything(sock: socket.socket, name: str) -> None:
    """SETUP, then REQUEST_STREAM of ``name`` for unbounded demand, with a small receive buffer: a
    peer that asks for all and then reads slowly or never."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    sock.sendall(
        _join(F.encode_setup(1000, 60000, M.COMPOSITE, "application/json"))
        + _join(F.encode_request(F.REQUEST_STREAM, 1, F.MAX_REQUEST_N, metadata=M.request_metadata(M.COMPOSITE, name)))
    )


def _settle(server, threads: int) -> None:
    """Wait (bounded) until no connection is open and the thread count is back to ``threads``."""
    wait_until(
        lambda: server.connection_count == 0 and threading.active_count() <= threads,
        lambda: (
            f"no connection open and at most {threads} threads: {server.connection_count} connections "
            f"and {threading.active_count()} threads remain"
        ),
        15,
    )


def _still_serves(server) -> bool:
    return rs.to_list(net.connect(server.address_of("numbers"), token=TOKEN), timeout=10) == list(range(50))


# -- fuzzing ----------------------------------------------------------------------------
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(garbage=st.binary(min_size=1, max_size=300), after_setup=st.booleans())
def test_fuzzed_bytes_close_that_connection_at_most_and_never_crash_the_server(
    server, no_internal_errors, garbage, after_setup
):
    with _connect(server) as sock:
        sock.sendall((SETUP if after_setup else b"") + garbage)
        sock.shutdown(socket.SHUT_WR)  # EOF after the garbage: every connection must end
        assert _read_until_closed(sock) is not None, "the server kept a connection open after the client's EOF"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ftype=st.integers(0, 0x3F), flags=st.integers(0, 0x3FF), sid=st.integers(0, 2**31 - 1), body=st.binary(max_size=64)
)
def test_fuzzed_well_framed_frames_of_every_type_never_crash_the_server(
    server, no_internal_errors, ftype, flags, sid, body
):
    frame = sid.to_bytes(4, "big") + ((ftype << 10) | flags).to_bytes(2, "big") + body
    with _connect(server) as sock:
        sock.sendall(SETUP + len(frame).to_bytes(3, "big") + frame)
        sock.shutdown(socket.SHUT_WR)
        assert _read_until_closed(sock) is not None


def test_after_fuzzing_the_server_still_serves_and_holds_no_connection(server):
    assert _still_serves(server)
    _settle(server, threading.active_count() + 10)


# -- truncated, oversized, trickled -------------------------------------------------------
def test_truncated_frame_then_disconnect_frees_the_connection(server):
    threads = threading.active_count()
    half = _join(F.encode_request(F.REQUEST_STREAM, 1, 5, metadata=M.request_metadata(M.COMPOSITE, "numbers")))
    with _connect(server) as sock:
        sock.sendall(SETUP + half[: len(half) // 2])
    _settle(server, threads)
    assert _still_serves(server)


def test_oversized_length_before_setup_is_refused_without_allocating_it(server):
    """An unauthenticated client announcing a 16 MB frame is refused at once (64 KiB cap before
    SETUP), so a flood of such headers cannot make the server allocate 16 MB each."""
    with _connect(server) as sock:
        sock.sendall((F.MAX_FRAME_LENGTH).to_bytes(3, "big") + b"\x00" * 16)
        data = _read_until_closed(sock)
    assert data is not None
    errs = [f for f in split_frames(data) if f.type == F.ERROR]
    assert errs and errs[0].error_code == F.CONNECTION_ERROR
    assert b"before a SETUP frame was accepted" in bytes(errs[0].data)


def test_oversized_frame_after_setup_names_the_limit(server):
    with _connect(server) as sock:
        sock.sendall(SETUP + (LIMITS.max_frame_bytes + 1).to_bytes(3, "big") + b"\x00" * 16)
        data = _read_until_closed(sock)
    errs = [f for f in split_frames(data or b"") if f.type == F.ERROR]
    assert errs and f"limit of {LIMITS.max_frame_bytes} bytes".encode() in bytes(errs[0].data)


def test_silent_client_is_closed_after_the_setup_timeout(server):
    with _connect(server) as sock:
        assert _read_until_closed(sock, limit=10) is not None


def test_setup_trickled_one_byte_at_a_time_is_closed_after_the_setup_timeout(server):
    """Slowloris: bytes keep arriving, but no whole SETUP within Limits.setup_timeout."""
    stop = threading.Event()
    slow = _join(
        F.encode_setup(1000, 5000, M.COMPOSITE, "application/json", metadata=setup_metadata(TOKEN), data=b"x" * 1000)
    )  # ~50 s at this pace: only the setup timeout can end it
    with _connect(server) as sock:

        def trickle():
            for b in slow:
                if stop.wait(0.05):  # not synchronisation: the attacker's pace (one byte per 50 ms)
                    return
                try:
                    sock.send(bytes([b]))
                except OSError:
                    return

        t = threading.Thread(target=trickle, daemon=True)
        t.start()
        closed = _read_until_closed(sock, limit=10) is not None
        stop.set()
        t.join(5)
    assert closed, "a client trickling its SETUP kept the connection open past the setup timeout"


def test_an_urgent_byte_does_not_stop_the_readers_timers(server):
    """TCP urgent data (MSG_OOB) makes poll report the socket readable while a plain read has
    nothing to return; a reader that then blocked in recv stopped its timers, and the connection
    stayed open past the setup timeout for as long as the attacker liked."""
    setup = _join(F.encode_setup(100, 200, M.COMPOSITE, "application/json", metadata=setup_metadata(TOKEN)))
    with _connect(server) as sock:
        sock.sendall(setup + _join(F.encode_keepalive(True)))
        answer = b""
        while not [f for f in split_frames(answer) if f.type == F.KEEPALIVE]:  # the reader has read our frames
            chunk = sock.recv(4096)
            assert chunk, "the server closed a connection with a valid SETUP"
            answer += chunk
        sock.send(b"!", socket.MSG_OOB)  # now the reader waits for more: only its timers can end this
        assert _read_until_closed(sock, limit=10) is not None, "the urgent byte kept the connection open"


# -- tokens -------------------------------------------------------------------------------
def test_guessed_tokens_are_all_refused_before_any_stream_and_leave_nothing_behind(server):
    threads = threading.active_count()
    opened = []
    server.add_publisher("guarded", rs.defer(lambda: opened.append(1) or [1]))
    try:
        for i in range(40):
            md = setup_metadata(f"guess-{i}") if i % 2 else None
            with _connect(server) as sock:
                sock.sendall(
                    _join(F.encode_setup(1000, 5000, M.COMPOSITE, "application/json", metadata=md))
                    + _join(
                        F.encode_request(F.REQUEST_STREAM, 1, 5, metadata=M.request_metadata(M.COMPOSITE, "guarded"))
                    )
                )
                data = _read_until_closed(sock)
            errs = [f for f in split_frames(data or b"") if f.type == F.ERROR]
            assert errs and errs[0].error_code == F.REJECTED_SETUP, f"guess {i} was not refused"
            assert b"wrong token" in bytes(errs[0].data) or b"requires a token" in bytes(errs[0].data)
        assert opened == [], "a stream opened for a client without the right token"
        _settle(server, threads)
    finally:
        server.remove("guarded")


# -- floods -------------------------------------------------------------------------------
def test_200_connections_beyond_the_limit_are_refused_and_everything_returns_to_baseline(server):
    threads = threading.active_count()
    socks = []
    try:
        for _ in range(200):
            s = _connect(server)
            s.sendall(SETUP)
            socks.append(s)
        assert server.connection_count <= LIMITS.max_connections
        refused = 0
        for s in socks[LIMITS.max_connections :]:
            data = _read_until_closed(s, limit=5)
            errs = [f for f in split_frames(data or b"") if f.type == F.ERROR]
            if errs and b"too many connections" in bytes(errs[0].data):
                refused += 1
        assert refused >= 200 - LIMITS.max_connections - 2  # a few may be accepted as earlier ones close
        # Each accepted connection costs 3 threads and is bounded by the limit.
        assert threading.active_count() <= threads + 3 * LIMITS.max_connections + 5
    finally:
        for s in socks:
            s.close()
    _settle(server, threads)
    assert _still_serves(server)


def test_streams_beyond_the_per_connection_limit_are_refused_with_the_limit_named(server):
    with _connect(server) as sock:
        reqs = b"".join(
            _join(F.encode_request(F.REQUEST_STREAM, 2 * i + 1, 1, metadata=M.request_metadata(M.COMPOSITE, "forever")))
            for i in range(LIMITS.max_streams + 4)
        )
        sock.sendall(SETUP + reqs)
        sock.settimeout(5)
        data = b""
        while len([f for f in split_frames(data) if f.type == F.ERROR]) < 4:
            chunk = sock.recv(65536)
            assert chunk, "the server closed instead of refusing the extra streams"
            data += chunk
        errs = [f for f in split_frames(data) if f.type == F.ERROR]
        assert all(f.error_code == F.REJECTED and b"too many open streams" in bytes(f.data) for f in errs)


def test_client_that_never_reads_stays_bounded_and_is_freed_on_close():
    """The server stops asking its publisher once the queue passes Limits.high_water_bytes. Per-element
    codecs ask in chunks of up to 1024 elements, so the bound is high water + one chunk (here 10 MB of
    10 KB strings); the queue must stop growing there, and closing frees everything."""
    from rs_spark.net.protocol.credit import CHUNK as _CHUNK

    limits = net.Limits(high_water_bytes=256 * 1024)
    big = "x" * 10_000
    s = net.serve(rs.defer(lambda: iter(lambda: big, None)), name="flood", limits=limits)
    threads = threading.active_count()
    try:
        with _connect(s) as sock:
            _ask_for_everything(sock, "flood")
            ev = threading.Event()
            peaks = []
            for _ in range(3):  # the server fills the socket, then must stop asking its publisher
                peak = 0
                for _ in range(15):
                    ev.wait(0.05)  # not synchronisation: the sampling interval of the bound under test
                    conns = s._host.connections()
                    if conns:
                        peak = max(peak, conns[0].backlog)
                peaks.append(peak)
            bound = limits.high_water_bytes + _CHUNK * (len(big) + 16)
            assert max(peaks) <= bound, f"{peaks} bytes queued for a client that never reads (bound {bound})"
            assert peaks[2] <= peaks[1] <= bound, f"the queue kept growing: {peaks}"
        _settle(s, threads)
    finally:
        s.stop()


def test_a_slow_peer_still_gets_the_error_after_what_was_queued_for_it():
    """A malformed frame from a peer that reads slowly: the server closes with ERROR after the frames
    already queued for that peer. Its reader drains the peer meanwhile; it used to do so with a socket
    timeout of 0.1 s, which the writer shares: a send the writer started then timed out while the peer
    paused, and the ERROR (and the rest of the queue) never left. The ERROR names the limit without the
    hint meant for frames before SETUP."""
    limits = net.Limits(high_water_bytes=64 * 1024, max_frame_bytes=64 * 1024)
    # 10 KB elements, asked up to 1024 at a time: about 10 MB queued, more than the kernel's buffers take,
    # so the writer is inside a send, blocked on the peer, when the ERROR is queued.
    s = net.serve(rs.defer(lambda: iter(lambda: "x" * 10_000, None)), name="flood", limits=limits)
    try:
        with _connect(s) as sock:
            _ask_for_everything(sock, "flood")
            conn = wait_until(
                lambda: next((c for c in s._host.connections() if c.backlog > 5_000_000), None), what="5 MB queued"
            )
            sock.sendall((1 << 20).to_bytes(3, "big"))  # a frame over the 64 KiB limit: malformed
            data = bytearray()
            for _ in range(2):  # reads a little, now and then, as slow peers do (not synchronisation)
                threading.Event().wait(0.25)
                data += sock.recv(64 * 1024)
            rest = _read_until_closed(sock, limit=30.0)
        assert rest is not None, "the server never closed the connection"
        # The writer's socket kept its blocking mode: a timeout there would cut any send the writer
        # starts while the peer pauses (whether this run's writer started one is up to the scheduler).
        assert conn.sock.gettimeout() is None, f"the socket the writer uses got a timeout: {conn.sock.gettimeout()}"
        frames = split_frames(bytes(data) + rest)
        assert frames and frames[-1].type == F.ERROR, (
            f"the ERROR never came after {len(frames)} frames: the writer's send was cut"
        )
        text = frames[-1].data.decode()
        assert frames[-1].error_code == F.CONNECTION_ERROR and "exceeds" in text
        assert "before a SETUP frame" not in text, f"the SETUP hint after SETUP was accepted: {text}"
    finally:
        s.stop()
