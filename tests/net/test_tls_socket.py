"""TLS in memory on its own (:class:`rs_spark.net.protocol.tls.TlsSocket`): a real TLS peer (an
``ssl.SSLSocket`` on 127.0.0.1) on one side, our socket on the other, read and written by two
threads at once as a Connection does. Bytes arrive whole and in order both ways, each half-close
travels behind the bytes sent before it, and half a record never blocks the reader's timers."""

from __future__ import annotations

import os
import queue
import select
import socket
import ssl
import threading
import time

import pytest

from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol.framing import IDLE, FrameReader
from rs_spark.net.protocol.tls_open import tls_client, tls_server

pytestmark = pytest.mark.timeout(60)


def _recv_all(sock: socket.socket) -> bytes:
    """Everything ``sock`` reads until EOF (an SSLSocket: until the peer's close_notify)."""
    chunks = []
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


@pytest.fixture
def pair(tls):
    """(our TlsSocket, the TLS peer): ours is the client, the peer a TLS server."""
    sctx, cctx = tls
    with socket.create_server(("127.0.0.1", 0)) as listener:
        raw = socket.create_connection(listener.getsockname())
        accepted: dict = {}

        def accept() -> None:
            conn, _ = listener.accept()
            # The handshake happens here; a FIN without close_notify raises instead of reading as EOF.
            accepted["peer"] = sctx.wrap_socket(conn, server_side=True, suppress_ragged_eofs=False)

        t = threading.Thread(target=accept)
        t.start()
        app = tls_client(raw, cctx, "127.0.0.1", "test peer", 10.0)
        t.join(10)
    peer = accepted["peer"]
    peer.settimeout(30)
    app.settimeout(30)
    yield app, peer
    app.close()
    peer.close()


def _peer_exchange(peer: ssl.SSLSocket, send: bytes, expect: int, seconds: float = 45.0) -> bytes:
    """The peer sends ``send`` and reads ``expect`` bytes at once, from one thread: an SSLSocket is
    not safe for one thread reading while another writes (OpenSSL's SSL object is not; under load
    two threads on one peer stalled it with bytes waiting), so it does both, non-blocking."""
    peer.setblocking(False)
    got = bytearray()
    sent = 0
    deadline = time.monotonic() + seconds
    while len(got) < expect or sent < len(send):
        assert time.monotonic() < deadline, f"peer: {len(got)} of {expect} read, {sent} of {len(send)} sent"
        want_write = sent < len(send)
        select.select([peer], [peer] if want_write else [], [], 1.0)
        if want_write:
            try:
                sent += peer.send(send[sent : sent + (1 << 16)])
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
                pass
        try:
            while len(got) < expect:
                chunk = peer.recv(min(1 << 16, expect - len(got)))
                assert chunk, f"EOF after {len(got)} of {expect} bytes"
                got += chunk
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass
    return bytes(got)


def test_bytes_cross_both_ways_whole_and_in_order_while_two_threads_use_our_socket(pair):
    app, peer = pair
    up = os.urandom(8 * 1024 * 1024 + 5)  # many encrypt chunks, written while our other thread decrypts
    down = os.urandom(6 * 1024 * 1024 + 7)
    got_up: list[bytes] = []
    the_peer = threading.Thread(target=lambda: got_up.append(_peer_exchange(peer, down, len(up))))
    the_peer.start()
    ours = threading.Thread(target=app.sendmsg, args=([memoryview(up)[:100], memoryview(up)[100:]],))
    ours.start()
    assert _recv_exact(app, len(down)) == down
    for t in (ours, the_peer):
        t.join(50)
    assert len(got_up) == 1, "the peer did not read all we sent (its thread's exception is above)"
    assert got_up[0] == up, "our bytes arrived changed or out of order"


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(1 << 16, n - len(buf)))
        assert chunk, f"EOF after {len(buf)} of {n} bytes"
        buf += chunk
    return bytes(buf)


def test_app_half_close_reaches_the_peer_as_close_notify_then_fin_after_its_bytes(pair):
    app, peer = pair
    data = os.urandom(1024 * 1024 + 3)
    app.sendall(data)
    app.shutdown(socket.SHUT_WR)
    assert _recv_all(peer) == data  # b"" from the peer's SSLSocket: it read our close_notify (no ragged EOF)
    with socket.socket(fileno=os.dup(peer.fileno())) as tcp:  # the TCP stream under the peer's TLS
        tcp.settimeout(30)
        assert tcp.recv(1, socket.MSG_PEEK) == b"", "no FIN after our close_notify"
    peer.sendall(b"still here")  # the other direction stays open after our half-close
    assert _recv_exact(app, 10) == b"still here"


def test_peer_close_notify_reaches_the_app_as_eof_after_its_bytes(pair):
    app, peer = pair
    data = os.urandom(512 * 1024)
    unwrapped = threading.Event()

    def send_then_close() -> None:
        peer.sendall(data)
        peer.unwrap().close()  # sends close_notify, then waits for ours
        unwrapped.set()

    t = threading.Thread(target=send_then_close)
    t.start()
    assert _recv_all(app) == data
    app.shutdown(socket.SHUT_WR)  # our close_notify answers the peer's
    t.join(30)
    assert unwrapped.is_set(), "the peer never got our close_notify after the app closed"


def test_peer_that_never_answers_the_handshake_fails_the_client_within_its_timeout(tls):
    _, cctx = tls
    with socket.create_server(("127.0.0.1", 0)) as listener:
        raw = socket.create_connection(listener.getsockname())
        silent, _ = listener.accept()
        try:
            with pytest.raises(ssl.SSLError, match=r"did not finish within 0\.3 s: is silent serving TLS"):
                tls_client(raw, cctx, "127.0.0.1", "silent", 0.3)
            assert raw.fileno() == -1, "the network socket was left open"
        finally:
            silent.close()


def test_untrusted_certificate_fails_the_client_handshake_with_a_hint(tls):
    sctx, _ = tls
    with socket.create_server(("127.0.0.1", 0)) as listener:
        raw = socket.create_connection(listener.getsockname())

        def serve() -> None:
            conn, _ = listener.accept()
            try:
                sctx.wrap_socket(conn, server_side=True)
            except (ssl.SSLError, OSError):
                pass  # the client refuses our certificate: expected
            finally:
                conn.close()

        t = threading.Thread(target=serve)
        t.start()
        with pytest.raises(ssl.SSLError, match="does not trust the certificate of test peer.*cafile="):
            tls_client(raw, ssl.create_default_context(), "127.0.0.1", "test peer", 10.0)
        t.join(10)


def _client_records(cctx: ssl.SSLContext, raw: socket.socket) -> tuple[ssl.SSLObject, ssl.MemoryBIO]:
    """A TLS client done by hand over ``raw``, so a test can send records cut where it likes."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = cctx.wrap_bio(inc, out, server_hostname="127.0.0.1")
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            raw.sendall(out.read())
            data = raw.recv(65536)
            assert data, "the server closed during the handshake"
            inc.write(data)
    raw.sendall(out.read())  # the client's Finished
    return obj, out


def test_half_a_record_never_blocks_the_readers_timers(tls):
    """An attacker sends half a TLS record and stops: the reader must keep ticking (keepalive,
    set-up deadline) instead of blocking inside TLS, and read the frame once the rest comes."""
    sctx, cctx = tls
    with socket.create_server(("127.0.0.1", 0)) as listener:
        raw = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
        server = tls_server(accepted, sctx, "attacker", 10.0)
        seen: queue.Queue = queue.Queue()

        def read() -> None:  # the connection's reader thread: the server's handshake runs here too
            for f in FrameReader(server, 1 << 20).frames(0.05):
                seen.put(f)
                if f is not IDLE:
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        client, records = _client_records(cctx, raw)
        frame = b"".join(bytes(b) for b in F.encode_keepalive(True, 7, b"hello"))
        client.write(frame)
        record = records.read()
        raw.sendall(record[: len(record) // 2])
        _drain(seen)
        for _ in range(3):  # ticks keep coming while half a record waits
            assert seen.get(timeout=10) is IDLE
        raw.sendall(record[len(record) // 2 :])
        got = next(f for f in iter(lambda: seen.get(timeout=10), None) if f is not IDLE)
        assert bytes(got) == frame[3:]
        reader.join(10)
        raw.close()
        server.close()


def _drain(q: queue.Queue) -> None:
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            return


def test_frames_around_the_shared_buffers_size_arrive_whole_over_tls(pair):
    """Over TLS the same frame sizes used to make the reader spin (a read of 0 bytes asked for,
    never satisfied) while the peer's bytes piled up inside TLS."""
    app, peer = pair
    frames = [b"a" * 65533, b"b" * 65534, b"c" * 65536, b"ok"]
    peer.sendall(b"".join(len(f).to_bytes(3, "big") + f for f in frames))
    reader = (bytes(x) for x in FrameReader(app, 1 << 20).frames(0.5) if x is not IDLE)
    assert [next(reader) for _ in frames] == frames


def test_our_half_close_keeps_the_bytes_that_already_arrived(pair):
    """close_notify sent while the peer's records wait unread: they are still read, then EOF."""
    app, peer = pair
    data = os.urandom(3000)
    peer.sendall(data[:1000])
    peer.sendall(data[1000:])  # two records, on the wire before we read
    first = _recv_exact(app, 10)  # reads what arrived; most of it stays inside TLS
    app.shutdown(socket.SHUT_WR)
    assert first + _recv_exact(app, len(data) - 10) == data
