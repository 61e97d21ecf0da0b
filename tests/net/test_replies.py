"""Replies a peer leaves unread stop us reading it (Netty's ``Channel.isWritable``): above
``Limits.reply_high_water_bytes`` of them the reader reads nothing more from the peer, reads again
once the peer has read them down to half the mark, and closes the connection, saying why, when the
peer has not done so within ``Limits.reply_stall_timeout``. TLS answers (key updates) the peer does
not read never block the reader and are bounded too.

Each test does what such a peer does, on real sockets: asks for KEEPALIVE echoes or key updates and
does not read the answers."""

from __future__ import annotations

import _ssl
import ctypes
import logging
import socket
import ssl
import threading

import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol import metadata as M
from rs_spark.net.protocol.auth import setup_metadata
from rs_spark.net.protocol.budget import FRAME_OVERHEAD
from rs_spark.net.protocol.connection import Connection
from rs_spark.net.protocol.replies import ReplyGate

from ..waits import wait_until

pytestmark = pytest.mark.timeout(120)

TOKEN = "replies-secret-token"
MARK = 64 * 1024
ECHO = 1000  # bytes of KEEPALIVE data asked back (under the 1 KiB echo cap)


def _raw(parts) -> bytes:
    return b"".join(bytes(p) for p in parts)


def _setup() -> bytes:
    return _raw(F.encode_setup(60000, 120000, M.COMPOSITE, "application/json", metadata=setup_metadata(TOKEN)))


def _pings(n: int) -> bytes:
    """``n`` KEEPALIVE frames asking for their data back, each data naming its index."""
    return b"".join(_raw(F.encode_keepalive(True, 0, f"{i:08d}".encode().ljust(ECHO, b"."))) for i in range(n))


def _read_frames(sock: socket.socket, n: int) -> list[F.Frame]:
    buf = bytearray()
    out: list[F.Frame] = []
    while len(out) < n:
        chunk = sock.recv(1 << 16)
        assert chunk, f"the connection closed after {len(out)} of {n} frames"
        buf += chunk
        while len(buf) >= 3 and len(buf) >= 3 + int.from_bytes(buf[:3], "big"):
            length = int.from_bytes(buf[:3], "big")
            out.append(F.decode(bytes(buf[3 : 3 + length])))
            del buf[: 3 + length]
    return out


C = 100 + FRAME_OVERHEAD  # what a 100-byte reply counts
GATE_STEPS = [  # (step, bytes, expected: unread reply bytes, paused, whether the step ended a pause)
    ("reply", 100, C, False, False),
    ("data", 5000, C, False, False),  # data is not counted, but replies behind it wait for it
    ("reply", 100, 2 * C, False, False),
    ("reply", 100, 3 * C, True, False),  # past the mark (2.5 replies): paused
    ("written", 100, 2 * C, True, False),  # the first reply left
    ("written", 5000, 2 * C, True, False),  # the data left; the replies behind it are still queued
    ("written", 100, C, False, True),  # half the mark or less: reading again, once
    ("reply", 100, 2 * C, False, False),
    ("reply", 100, 3 * C, True, False),
    ("dropped", 0, 0, False, False),  # closed: nothing owed
]


def test_the_reply_gate_counts_replies_by_their_place_in_the_queue_and_pauses_between_its_marks():
    gate = ReplyGate(5 * C // 2)
    for i, (step, n, unread, paused, resumed) in enumerate(GATE_STEPS):
        ended = False
        if step == "dropped":
            gate.dropped()
        elif step == "written":
            ended = gate.written(n)
        else:
            gate.queued(n, step == "reply")
        assert (gate.bytes, gate.paused, ended) == (unread, paused, resumed), (i, step, n)


def test_limits_refuse_a_reply_mark_or_stall_timeout_that_cannot_work():
    with pytest.raises(ValueError, match=r"Limits.reply_high_water_bytes must be >= 1, got 0"):
        net.Limits(reply_high_water_bytes=0)
    with pytest.raises(ValueError, match=r"Limits.reply_stall_timeout must be > 0 seconds, got 0"):
        net.Limits(reply_stall_timeout=0)


def test_a_peer_that_reads_its_replies_late_stops_being_read_then_gets_every_one():
    """While the peer reads nothing, the connection queues at most the mark (plus the reply that
    passed it) and reads no more; once the peer reads, every echo arrives, in order, and the
    connection reads again (it could not have answered them all otherwise)."""
    a, b = socket.socketpair()
    b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    conn = Connection(a, client=True, label="a peer that reads late", limits=net.Limits(reply_high_water_bytes=MARK))
    conn.start()
    count = 4000  # 4 MB of echoes: far more than the mark and the sockets' buffers
    sender = threading.Thread(target=lambda: b.sendall(_pings(count)), daemon=True)
    try:
        sender.start()
        wait_until(lambda: conn.reading_paused, "the connection to stop reading its peer")
        most = MARK + ECHO + 64 + FRAME_OVERHEAD  # the mark, and the one reply that passed it
        assert conn.unread_replies <= most, f"{conn.unread_replies} bytes of replies queued while paused"
        assert conn.backlog <= most, f"{conn.backlog} bytes queued while paused"
        echoes = _read_frames(b, count)
        assert [bytes(f.data[:8]) for f in echoes] == [f"{i:08d}".encode() for i in range(count)]
        assert all(f.type == F.KEEPALIVE and len(f.data) == ECHO for f in echoes)
        sender.join(30)
        assert not sender.is_alive()
        wait_until(lambda: not conn.reading_paused and conn.unread_replies == 0, "the replies to drain")
        assert conn.closed is None
    finally:
        conn.close()
        b.close()


def test_a_peer_that_never_reads_its_replies_is_closed_after_the_stall_timeout_saying_so(caplog):
    limits = net.Limits(reply_high_water_bytes=MARK, reply_stall_timeout=1.0)
    server = net.Server("tcp://127.0.0.1:0", token=TOKEN, limits=limits)
    server.add_publisher("numbers", rs.range_(10))
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window it offers follows
    s.connect(("127.0.0.1", int(server.base_address.rsplit(":", 1)[1])))
    me = f"127.0.0.1:{s.getsockname()[1]}"
    s.settimeout(30)

    def ask() -> None:
        try:  # 20 MB of echoes asked for: more than the kernel buffers on both sides take (4 MiB at most)
            s.sendall(_setup() + _pings(20_000))
        except OSError:  # the server closed us: what it should do
            pass

    sender = threading.Thread(target=ask, daemon=True)
    try:
        wait_until(lambda: server.connection_count == 1, "the server to accept the peer")
        with caplog.at_level(logging.WARNING, logger="rs_spark.net"):
            sender.start()
            wait_until(lambda: server.connection_count == 0, "the server to close the peer that never reads")
        said = [r.getMessage() for r in caplog.records if "Limits.reply_stall_timeout" in r.getMessage()]
        assert len(said) == 1, said
        assert said[0].startswith(f"rs_spark.net: closing {me} on {server.base_address}: it did not read"), said
        assert "raise Limits.reply_stall_timeout" in said[0]
        assert not [r for r in caplog.records if TOKEN in r.getMessage()]
    finally:
        s.close()
        sender.join(30)
        server.stop()


def _ssl_pointer(obj: ssl.SSLObject) -> int | None:
    """The OpenSSL ``SSL*`` of ``obj`` (CPython's PySSLSocket keeps it after the header and the
    socket weakref), checked: a TLS 1.3 client. None when this build lays it out otherwise."""
    lib = ctypes.CDLL(_ssl.__file__)
    lib.SSL_version.argtypes = lib.SSL_is_server.argtypes = [ctypes.c_void_p]
    p = ctypes.c_void_p.from_address(id(obj._sslobj) + 3 * ctypes.sizeof(ctypes.c_void_p)).value
    if p is None or lib.SSL_version(p) != 0x0304 or lib.SSL_is_server(p) != 0:
        return None
    return p


def test_a_tls_peer_asking_for_key_updates_and_never_reading_is_closed_not_waited_for(tls, caplog):
    """What ``openssl s_client``'s ``K`` command does, in a loop, without reading: every KeyUpdate
    asking for an update is answered with one. The reader never blocks sending the answers (it used
    to, in a blocking sendall, and then ran no timer and never closed); past a small bound of unsent
    answers it closes the connection, saying why."""
    sctx, cctx = tls
    server = net.Server("tls://127.0.0.1:0", token=TOKEN, ssl=sctx)
    server.add_publisher("numbers", rs.range_(10))
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.connect(("127.0.0.1", int(server.base_address.rsplit(":", 1)[1])))
    raw.settimeout(30)
    me = f"127.0.0.1:{raw.getsockname()[1]}"
    wait_until(lambda: server.connection_count == 1, "the server to accept the peer")
    into, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls_obj = cctx.wrap_bio(into, out, server_hostname="127.0.0.1", server_side=False)
    try:
        while True:
            try:
                tls_obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                raw.sendall(out.read())
                into.write(raw.recv(65536))
        raw.sendall(out.read())
        ptr = _ssl_pointer(tls_obj)
        if ptr is None:
            pytest.skip("this Python's ssl module keeps its SSL* elsewhere: cannot ask for a key update")
        key_update = ctypes.CDLL(_ssl.__file__).SSL_key_update
        key_update.argtypes = [ctypes.c_void_p, ctypes.c_int]
        tls_obj.write(_setup())
        quiet = _raw(F.encode_keepalive(False, 0, b""))  # application data: OpenSSL refuses 32 key updates in a row
        with caplog.at_level(logging.WARNING, logger="rs_spark.net"):
            try:
                while server.connection_count:
                    for i in range(1000):
                        key_update(ptr, 1)  # SSL_KEY_UPDATE_REQUESTED: the peer must answer with its own
                        tls_obj.do_handshake()  # sends it
                        if i % 16 == 15:
                            tls_obj.write(quiet)
                    raw.sendall(out.read())
            except OSError:  # closed by the server (a reset: it had not read all we sent)
                pass
            wait_until(lambda: server.connection_count == 0, "the server to close the peer that never reads")
        said = [r.getMessage() for r in caplog.records if "key updates" in r.getMessage()]
        assert len(said) == 1, said
        assert said[0].startswith(f"rs_spark.net: closing {me} on {server.base_address}: it asked for TLS"), said
        assert not [r for r in caplog.records if TOKEN in r.getMessage()]
    finally:
        raw.close()
        server.stop()
