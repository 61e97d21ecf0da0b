"""The TLS pump on its own (:class:`rs_spark.net.protocol.tls.TlsPump`): a real TLS peer (an
``ssl.SSLSocket`` on 127.0.0.1) on one side, the pump's plain socket on the other. Bytes arrive
whole and in order both ways, and each half-close travels behind the bytes sent before it."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from rs_spark.net.protocol.tls import TlsPump, tls_client

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
    """(the pump's plain socket, the TLS peer): the pump is the client, the peer a TLS server."""
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


def test_bytes_cross_both_ways_whole_and_in_order(pair):
    app, peer = pair
    up = os.urandom(3 * 1024 * 1024)  # above the pump's 1 MiB bound per direction: it must flow, not pile up
    down = os.urandom(2 * 1024 * 1024 + 7)
    got_up: list[bytes] = []
    reader = threading.Thread(target=lambda: got_up.append(_recv_exact(peer, len(up))))
    reader.start()
    sender = threading.Thread(target=peer.sendall, args=(down,))
    sender.start()
    app.sendall(up)
    assert _recv_exact(app, len(down)) == down
    reader.join(30)
    sender.join(30)
    assert got_up == [up]


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


def test_peer_that_never_answers_the_handshake_ends_the_pump_with_a_timeout(tls):
    _, cctx = tls
    with socket.create_server(("127.0.0.1", 0)) as listener:
        raw = socket.create_connection(listener.getsockname())
        silent, _ = listener.accept()
        try:
            pump = TlsPump(raw, cctx, server_side=False, hostname="127.0.0.1", label="silent", handshake_timeout=0.3)
            assert pump.handshaken.wait(30)
            pump.join(30)
            assert not pump.ready
            assert isinstance(pump.error, TimeoutError) and "did not finish within 0.3 s" in str(pump.error)
            pump.app.settimeout(10)
            assert pump.app.recv(1) == b""  # the connection's side sees EOF
        finally:
            silent.close()


def test_untrusted_certificate_fails_the_client_handshake_with_a_hint(tls):
    import ssl

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
