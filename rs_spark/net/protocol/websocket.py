"""RSocket over WebSocket (RFC 6455): ``ws://`` and ``wss://`` addresses.

RSocket's WebSocket mapping puts each frame in one binary message, without the 24-bit length
prefix that TCP needs. The connection never sees the difference: a :class:`WsPump` owns the
network socket (plain, or a :class:`~rs_spark.net.protocol.tls.TlsSocket` for ``wss://``) and
hands the Connection one end of a local socketpair carrying length-prefixed frames. Two threads per connection
(one per direction) move whole frames; a message above ``max_message`` bytes closes the
connection (status 1009) before its body is read, so a peer cannot make us buffer more.

Only what RSocket needs: binary messages (fragmented ones are reassembled), ping -> pong,
close. Clients mask what they send, servers refuse unmasked client frames (status 1002), as
the RFC requires. The handshake (:mod:`.ws_handshake`) offers and accepts the ``rsocket`` subprotocol.
"""

from __future__ import annotations

import heapq
import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from .tls import Sock, UnreadRecords
from .ws_handshake import client_handshake, server_handshake

SETUP_MAX_BYTES = 64 * 1024
"""The largest message a server accepts before the first (SETUP) one: as ``connection.SETUP_MAX_BYTES``."""

log = logging.getLogger("rs_spark.net")

_LINGER = 2.0  # seconds we wait for the peer's close answer
_FRAME_MAX = 0xFFFFFF  # an RSocket frame's length must fit the 24-bit prefix on the pair
_BINARY, _CONT, _TEXT, _CLOSE, _PING, _PONG = 0x2, 0x0, 0x1, 0x8, 0x9, 0xA


def mask(data: bytes | bytearray, key: bytes | bytearray) -> bytes:
    """XOR ``data`` with the 4-byte ``key`` repeated (masking and unmasking are the same)."""
    n = len(data)
    if not n:
        return b""
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "little") ^ int.from_bytes(k, "little")).to_bytes(n, "little")


def encode_frame(opcode: int, payload: Any, masked: bool) -> list[Any]:
    """One final WebSocket frame as buffers to send: header, payload (masked with a random
    key if ``masked``)."""
    n = len(payload)
    b0 = 0x80 | opcode
    mbit = 0x80 if masked else 0
    if n < 126:
        head = struct.pack("!BB", b0, mbit | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, mbit | 126, n)
    else:
        head = struct.pack("!BBQ", b0, mbit | 127, n)
    if masked:
        key = os.urandom(4)
        return [head + key, mask(bytes(payload), key)]
    return [head, payload]


def _recv_into_new(sock: Sock, n: int) -> bytearray | None:
    """Exactly ``n`` bytes from ``sock``, or None at EOF."""
    out = bytearray(n)
    view = memoryview(out)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if not k:
            return None
        got += k
    return out


def _send_all(sock: Sock, parts: list[Any]) -> None:
    views = [memoryview(p) for p in parts if len(p)]
    while views:
        sent = sock.sendmsg(views)
        while views and sent >= len(views[0]):
            sent -= len(views[0])
            views.pop(0)
        if views and sent:
            views[0] = views[0][sent:]


class _Closed(Exception):
    """The peer closed the WebSocket (or broke the protocol: ``code`` says how)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code


class _Message:
    """A binary message being put together from its frames (RFC 6455, 5.4)."""

    __slots__ = ("_data", "_open")

    def __init__(self) -> None:
        self._data: bytes | bytearray = bytearray()
        self._open = False  # a first frame came and its last one did not yet

    @property
    def size(self) -> int:
        return len(self._data)

    def add(self, fin: bool, op: int, payload: bytes | bytearray) -> bytes | bytearray | None:
        """Add one data frame; the whole message once its last frame is in, else None."""
        if op == _TEXT:
            raise _Closed(1003, "RSocket frames travel in binary messages, not text")
        if op == _BINARY:
            if self._open:
                raise _Closed(1002, "a new message began before the previous one ended")
            self._open = True
        elif op == _CONT:
            if not self._open:
                raise _Closed(1002, "a continuation frame outside a message")
        else:
            raise _Closed(1002, f"unknown opcode {op}")
        if fin and not self._data:  # the usual case, one frame per message: no copy
            whole: bytes | bytearray = payload
        else:
            self._data += payload
            if not fin:
                return None
            whole = self._data
        self._data, self._open = bytearray(), False
        return whole


class WsPump:
    """WebSocket for one connection; :attr:`app` is the plain socket carrying prefixed frames."""

    def __init__(
        self,
        raw: Sock,
        *,
        client: bool,
        label: str,
        max_message: int,
        handshake_timeout: float = 0.0,
        leftover: bytes = b"",
        allowed_origins: Sequence[str] = (),
        on_closed: Callable[[], None] | None = None,
    ) -> None:
        self.label = label
        self._on_closed = on_closed
        self._allowed_origins = tuple(allowed_origins)
        self._setup_seen = False
        self._raw = raw
        self._client = client
        self._max = min(max_message, _FRAME_MAX)
        self._timeout = handshake_timeout  # server: run the handshake on the pump thread first
        self._pending = leftover
        self._send_lock = threading.Lock()  # data, pong and close frames share the network socket
        self._close_sent = False
        self.app, self._pair = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        for sk in (self.app, self._pair):  # a whole Arrow batch frame per write, not a few KB per wake-up
            sk.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 2 * 1024 * 1024)
            sk.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2 * 1024 * 1024)
        self._running = 1  # pump threads alive; the last one to end closes both sockets
        self._running_lock = threading.Lock()
        self._t_in = threading.Thread(target=self._run_in, name=f"rs-net-ws-in {label}", daemon=True)
        self._t_in.start()

    # -- network -> app ---------------------------------------------------------------
    def _recv_exact(self, n: int) -> bytearray:
        out = bytearray(n)
        got = 0
        if self._pending:
            take = self._pending[:n]
            self._pending = self._pending[n:]
            out[: len(take)] = take
            got = len(take)
        view = memoryview(out)
        while got < n:
            k = self._raw.recv_into(view[got:], n - got)
            if not k:
                raise _Closed(1006, "the connection closed")
            got += k
        return out

    def _run_in(self) -> None:
        try:
            if self._timeout:
                try:
                    self._pending = server_handshake(self._raw, self._timeout, self._allowed_origins) + self._pending
                except (OSError, UnicodeError) as exc:
                    log.warning("rs_spark.net: WebSocket handshake with %s failed: %s", self.label, exc)
                    return
            self._raw.settimeout(None)
            with self._running_lock:
                self._running += 1
            threading.Thread(target=self._run_out, name=f"rs-net-ws-out {self.label}", daemon=True).start()
            self._read_messages()
        except _Closed as c:
            if c.code not in (1000, 1006):
                log.warning("rs_spark.net: WebSocket %s closed: %s (status %d)", self.label, c, c.code)
            self._send_close(c.code if c.code != 1006 else 1000, str(c))
        except UnreadRecords as exc:  # wss: TLS answers the peer asked for and never read
            log.warning("rs_spark.net: closing %s: %s. A peer must read its socket", self.label, exc)
        except OSError:
            pass
        finally:
            _shut(self._pair, socket.SHUT_WR)  # the Connection reads EOF
            self._finish()

    def _read_messages(self) -> None:
        message = _Message()
        while True:
            fin, op, payload = self._read_frame(message.size)
            if op >= 0x8:
                self._on_control(op, payload)
                continue
            whole = message.add(fin, op, payload)
            if whole:  # an empty message carries no frame
                _send_all(self._pair, [len(whole).to_bytes(3, "big"), whole])
                self._setup_seen = True  # the connection checks the first frame is a valid SETUP

    def _read_frame(self, so_far: int) -> tuple[bool, int, bytes | bytearray]:
        """One WebSocket frame: (FIN, opcode, unmasked payload). Its length is checked before
        its payload is read (``so_far``: bytes of the message it continues)."""
        b0, b1 = self._recv_exact(2)
        fin, op, masked, n = bool(b0 & 0x80), b0 & 0x0F, bool(b1 & 0x80), b1 & 0x7F
        if b0 & 0x70:
            raise _Closed(1002, "reserved bits set (no extension was negotiated)")
        if n == 126:
            n = struct.unpack("!H", self._recv_exact(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._recv_exact(8))[0]
        if masked == self._client:
            raise _Closed(1002, "clients must mask their frames and servers must not (RFC 6455, 5.1)")
        self._check_length(fin, op, n, so_far)
        key = self._recv_exact(4) if masked else b""
        payload: bytes | bytearray = self._recv_exact(n)
        if masked:
            payload = mask(payload, key)
        return fin, op, payload

    def _check_length(self, fin: bool, op: int, n: int, so_far: int) -> None:
        if op >= 0x8:
            if n > 125 or not fin:
                raise _Closed(1002, "a control frame above 125 bytes or fragmented")
            return
        limit = self._max if self._client or self._setup_seen else min(self._max, SETUP_MAX_BYTES)
        if so_far + n > limit:
            # Checked before reading: before its SETUP a peer may not make us allocate more than a SETUP needs.
            raise _Closed(
                1009,
                f"a message above {limit} bytes ("
                + ("the frame size limit)" if limit == self._max else "before SETUP; a SETUP frame is small)"),
            )

    def _on_control(self, op: int, payload: bytes | bytearray) -> None:
        if op == _PING:
            self._send(encode_frame(_PONG, payload, self._client))
        elif op == _CLOSE:
            code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1000
            raise _Closed(code, payload[2:].decode("utf-8", "replace") or "closed")
        elif op != _PONG:
            raise _Closed(1002, f"unknown opcode {op}")

    # -- app -> network ---------------------------------------------------------------
    def _run_out(self) -> None:
        pair = self._pair
        try:
            while True:
                head = _recv_into_new(pair, 3)
                if head is None:
                    break
                frame = _recv_into_new(pair, int.from_bytes(head, "big"))
                if frame is None:
                    break
                self._send(encode_frame(_BINARY, frame, self._client))
            self._send_close(1000, "")
            _shut(self._raw, socket.SHUT_WR)
            # A peer that never answers our close must not keep the reading thread forever.
            _closer.shut_at(time.monotonic() + _LINGER, self._raw)
        except OSError:
            pass
        finally:
            self._finish()

    def _send(self, parts: list[Any]) -> None:
        with self._send_lock:
            if not self._close_sent:
                _send_all(self._raw, parts)

    def _send_close(self, code: int, reason: str) -> None:
        with self._send_lock:
            if self._close_sent:
                return
            self._close_sent = True
            try:
                _send_all(
                    self._raw, encode_frame(_CLOSE, struct.pack("!H", code) + reason.encode()[:120], self._client)
                )
            except OSError:
                pass

    def _finish(self) -> None:
        with self._running_lock:
            self._running -= 1
            last = self._running == 0
        if last:
            for s in (self._raw, self._pair):
                try:
                    s.close()
                except OSError:
                    pass
            if self._on_closed is not None:
                self._on_closed()


class _DeferredShutdown:
    """One thread for every pump's close deadline (a timer thread each would let a flood of peers
    that never answer our close hold a thread apiece)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: list[tuple[float, int, Sock]] = []  # a heap; the int breaks ties
        self._seq = 0
        self._thread: threading.Thread | None = None

    def shut_at(self, deadline: float, sock: Sock) -> None:
        with self._cond:
            self._seq += 1
            heapq.heappush(self._due, (deadline, self._seq, sock))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rs-net-ws-closer", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._due:
                    self._thread = None  # started again by the next shut_at
                    return
                deadline, _, sock = self._due[0]
                left = deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                heapq.heappop(self._due)
            _shut(sock, socket.SHUT_RDWR)  # wakes the pump's reading thread, which then closes it


_closer = _DeferredShutdown()


def _shut(sock: Sock, how: int) -> None:
    try:
        sock.shutdown(how)
    except OSError:
        pass


def ws_client(raw: Sock, host: str, path: str, label: str, timeout: float, max_message: int) -> socket.socket:
    """WebSocket over a connected socket, handshake done: returns the plain socket to use."""
    try:
        rest = client_handshake(raw, host, path, timeout)
        raw.settimeout(None)
        return WsPump(raw, client=True, label=label, max_message=max_message, leftover=rest).app
    except BaseException:
        raw.close()
        raise


def ws_server(
    raw: Sock,
    label: str,
    timeout: float,
    max_message: int,
    allowed_origins: Sequence[str] = (),
    on_closed: Callable[[], None] | None = None,
) -> socket.socket:
    """WebSocket on an accepted socket: returns the plain socket at once; the handshake runs on
    the pump thread within ``timeout`` (a bad or slow one closes that socket, logged).
    ``on_closed`` runs once the network socket is closed."""
    try:
        return WsPump(
            raw,
            client=False,
            label=label,
            max_message=max_message,
            handshake_timeout=timeout,
            allowed_origins=allowed_origins,
            on_closed=on_closed,
        ).app
    except BaseException:
        raw.close()
        raise


__all__ = [
    "WsPump",
    "ws_client",
    "ws_server",
    "encode_frame",
    "mask",
]
