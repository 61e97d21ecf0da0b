"""Byte transport for frames: TCP, TLS over TCP and Unix domain sockets.

TCP and Unix sockets carry no message boundaries, so every frame is prefixed with its 24-bit
length (RSocket "Framing Protocol Usage"). :class:`FrameReader` undoes that, refusing frames
above a size limit before reading their body, and waits with ``poll`` so the reader thread
can run timers without a socket timeout (a timeout would also limit the writer's sends).
"""
from __future__ import annotations

import os
import select
import socket
import ssl as _ssl
import stat
from typing import Iterator, List, Optional, Union

from .address import Address
from .frames import Buffer, FrameError

IDLE = object()
"""Yielded by :meth:`FrameReader.frames` when no byte arrived for one tick."""

_SMALL = 64 * 1024  # frames up to this size are copied out of the shared buffer
_CHUNK = 256 * 1024


TLS_DISABLED = (
    "TLS is switched off in this version of rs_spark.net: the connection reads and writes one socket "
    "from two threads, which OpenSSL does not allow for one SSL object, and a TLS stream could hang "
    "(seen in about 1 of 3 test runs). Use tcp:// on a trusted network or a Unix socket, or tunnel "
    "(e.g. stunnel / an SSH tunnel) until TLS I/O moves to a single thread."
)


def dial(addr: Address, timeout: float, context: Optional[_ssl.SSLContext]) -> socket.socket:
    """Connect to ``addr``; the socket is left blocking."""
    if addr.scheme == "tls" or context is not None:
        raise NotImplementedError(f"{addr.base}: {TLS_DISABLED}")
    if addr.scheme == "unix":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(addr.path)
        except BaseException:
            sock.close()
            raise
    else:
        sock = socket.create_connection((addr.host, addr.port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if addr.scheme == "tls":
            ctx = context or _ssl.create_default_context()
            try:
                sock = ctx.wrap_socket(sock, server_hostname=addr.host)
            except BaseException:
                sock.close()
                raise
    sock.settimeout(None)
    return sock


def listen(addr: Address, backlog: int = 64) -> socket.socket:
    """A listening socket for ``addr``; a stale Unix socket file (nobody listening) is replaced."""
    if addr.scheme == "unix":
        path = addr.path
        if os.path.exists(path):
            if not stat.S_ISSOCK(os.stat(path).st_mode):
                raise FileExistsError(f"cannot serve on unix://{path}: the path exists and is not a socket; "
                                      "choose another path")
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
            except OSError:
                os.unlink(path)  # stale: its server is gone
            else:
                raise OSError(f"cannot serve on unix://{path}: another server is listening there")
            finally:
                probe.close()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # owner-only from the start: no window where others can connect
        try:
            sock.bind(path)
        finally:
            os.umask(old)
    else:
        family = socket.AF_INET6 if ":" in addr.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((addr.host, addr.port))
    sock.listen(backlog)
    return sock


def send_buffers(sock: socket.socket, bufs: List[Buffer]) -> None:
    """Write all of ``bufs``; plain sockets use ``sendmsg`` (no copy), TLS sockets one ``sendall``."""
    if isinstance(sock, _ssl.SSLSocket) or not hasattr(sock, "sendmsg"):
        sock.sendall(b"".join(bufs))
        return
    views = [memoryview(b).cast("B") if not isinstance(b, bytes) else b for b in bufs]
    i = 0
    while i < len(views):
        group = views[i:i + 512]  # stay under IOV_MAX
        sent = sock.sendmsg(group)
        # Skip what went out; a partial send leaves the rest of one buffer.
        for b in group:
            n = len(b)
            if sent >= n:
                sent -= n
                i += 1
            else:
                views[i] = memoryview(b)[sent:]
                break


class FrameReader:
    """Splits a byte stream into frames (length prefix removed)."""

    def __init__(self, sock: socket.socket, max_frame: int) -> None:
        self._sock = sock
        self._max = max_frame
        self._buf = bytearray(_CHUNK)
        self._start = 0
        self._end = 0
        self._poll = select.poll()
        self._poll.register(sock.fileno(), select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP)
        self.bytes_read = 0

    def _wait(self, timeout: float) -> bool:
        s = self._sock
        if isinstance(s, _ssl.SSLSocket) and s.pending():
            return True  # decrypted bytes are waiting inside the TLS layer, not on the fd
        return bool(self._poll.poll(max(0, int(timeout * 1000))))

    def _recv_into(self, view: memoryview) -> int:
        n = self._sock.recv_into(view)
        self.bytes_read += n
        return n

    def frames(self, tick: float) -> Iterator[Union[Buffer, object]]:
        """Yield frames, or :data:`IDLE` after ``tick`` seconds without data. Ends at EOF.

        Raises :class:`FrameError` for a frame above the size limit."""
        while True:
            buf = self._buf
            while self._end - self._start >= 3:
                s = self._start
                length = (buf[s] << 16) | (buf[s + 1] << 8) | buf[s + 2]
                if length > self._max:
                    raise FrameError(f"frame of {length} bytes exceeds this side's limit of {self._max} bytes")
                have = self._end - s - 3
                if have >= length:
                    self._start = s + 3 + length
                    yield bytes(buf[s + 3:s + 3 + length])
                    continue
                if length > _SMALL:
                    # A big frame gets its own buffer: read straight into it and hand it out
                    # without another copy (Arrow reads record batches from it zero-copy).
                    big = bytearray(length)
                    big[:have] = buf[s + 3:self._end]
                    self._start = self._end = 0
                    mv = memoryview(big)
                    got = have
                    while got < length:
                        if not self._wait(tick):
                            yield IDLE
                            continue
                        n = self._recv_into(mv[got:])
                        if n == 0:
                            return
                        got += n
                    yield mv
                    buf = self._buf
                    continue
                break
            # Make room: move the partial frame to the front.
            if self._start:
                rest = self._end - self._start
                buf[:rest] = buf[self._start:self._end]
                self._start, self._end = 0, rest
            if not self._wait(tick):
                yield IDLE
                continue
            n = self._recv_into(memoryview(buf)[self._end:])
            if n == 0:
                return
            self._end += n


__all__ = ["dial", "listen", "send_buffers", "FrameReader", "IDLE"]
