"""Byte transport for frames: TCP, TLS over TCP, Unix domain sockets (and WebSocket, in
:mod:`.websocket`, on top of these).

TLS runs on one thread per connection (:class:`TlsPump`), which hands the connection a plain
socket; see the comment above it for why.

TCP and Unix sockets carry no message boundaries, so every frame is prefixed with its 24-bit
length (RSocket "Framing Protocol Usage"). :class:`FrameReader` undoes that, refusing frames
above a size limit before reading their body, and waits with ``poll`` so the reader thread
can run timers without a socket timeout (a timeout would also limit the writer's sends).
"""

from __future__ import annotations

import logging
import os
import select
import socket
import ssl as _ssl
import stat
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from .address import Address
from .frames import Buffer, FrameError

log = logging.getLogger("rs_spark.net")

IDLE = object()
"""Yielded by :meth:`FrameReader.frames` once per tick without a whole frame: when no byte arrived
for one tick, and also while a frame trickles in (so timers run even against a peer that sends
one byte at a time)."""

_SMALL = 64 * 1024  # frames up to this size are copied out of the shared buffer
_CHUNK = 64 * 1024  # reads into the shared buffer: many small frames per read, a small copy for a big frame


def dial(
    addr: Address, timeout: float, context: _ssl.SSLContext | None, max_frame: int = 16 * 1024 * 1024
) -> socket.socket:
    """Connect to ``addr``; the socket is left blocking. With TLS (``tls://``, ``wss://`` or a
    ``context``) the handshake is done here and the socket returned is the plain end of a
    :class:`TlsPump`; with WebSocket (``ws://``, ``wss://``) the plain end of a ``WsPump``."""
    tls = addr.scheme in ("tls", "wss") or context is not None
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
    if tls:
        ctx = context or _ssl.create_default_context()
        host = addr.host if addr.scheme != "unix" else None
        if host is None and ctx.check_hostname:
            sock.close()
            raise ValueError(
                f"{addr.base}: TLS over a Unix socket has no host name to check the certificate "
                "against; pass an ssl context with check_hostname=False, or use tls://HOST:PORT"
            )
        sock = tls_client(sock, ctx, host, addr.base, timeout)  # owns (and on failure closes) sock
    if addr.scheme in ("ws", "wss"):
        from .websocket import ws_client

        host_header = f"[{addr.host}]:{addr.port}" if ":" in addr.host else f"{addr.host}:{addr.port}"
        sock = ws_client(sock, host_header, "/", addr.base, timeout, max_frame)  # owns sock
    sock.settimeout(None)
    return sock


def listen(addr: Address, backlog: int = 64) -> socket.socket:
    """A listening socket for ``addr``; a stale Unix socket file (nobody listening) is replaced."""
    if addr.scheme == "unix":
        path = addr.path
        if os.path.exists(path):
            if not stat.S_ISSOCK(os.stat(path).st_mode):
                raise FileExistsError(
                    f"cannot serve on unix://{path}: the path exists and is not a socket; choose another path"
                )
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


def send_buffers(sock: socket.socket, bufs: list[Buffer]) -> None:
    """Write all of ``bufs``; plain sockets use ``sendmsg`` (no copy), TLS sockets one ``sendall``."""
    if isinstance(sock, _ssl.SSLSocket) or not hasattr(sock, "sendmsg"):
        sock.sendall(b"".join(bufs))
        return
    views = [memoryview(b).cast("B") if not isinstance(b, bytes) else b for b in bufs]
    i = 0
    while i < len(views):
        group = views[i : i + 512]  # stay under IOV_MAX
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

    def __init__(self, sock: socket.socket, max_frame: int, what: str = "") -> None:
        self._sock = sock
        self._max = max_frame
        self.what = what  # appended to the "too big" error (e.g. why a lower limit applies now)
        self._buf = bytearray(_CHUNK)
        self._start = 0
        self._end = 0
        self._poll = select.poll()
        self._poll.register(sock.fileno(), select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP)
        self._nowait = not isinstance(sock, _ssl.SSLSocket) and hasattr(socket, "MSG_DONTWAIT")
        self.bytes_read = 0

    @property
    def max_frame(self) -> int:
        return self._max

    @max_frame.setter
    def max_frame(self, value: int) -> None:
        self._max = value

    def _wait(self, timeout: float) -> bool:
        s = self._sock
        if isinstance(s, _ssl.SSLSocket) and s.pending():
            return True  # decrypted bytes are waiting inside the TLS layer, not on the fd
        return bool(self._poll.poll(max(0, int(timeout * 1000))))

    def _read(self, view: memoryview, tick: float) -> int | None:
        """Bytes read into ``view`` (0 at EOF), or None after ``tick`` seconds without data.
        Tries a non-blocking read first: under load data is usually there, saving a poll."""
        if self._nowait:
            try:
                n = self._sock.recv_into(view, 0, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                pass
            else:
                self.bytes_read += n
                return n
        if not self._wait(tick):
            return None
        n = self._sock.recv_into(view)
        self.bytes_read += n
        return n

    def _big_buffer(self, length: int) -> tuple[Any, memoryview]:
        # From Arrow's memory pool when pyarrow is loaded (no zero-fill, no fresh pages per
        # frame: a bytearray of this size is a new mmap, page-faulted in for every batch).
        pa = sys.modules.get("pyarrow")
        if pa is not None:
            b = pa.allocate_buffer(length)
            return b, memoryview(b).cast("B")
        b = bytearray(length)
        return b, memoryview(b)

    def frames(self, tick: float) -> Iterator[Buffer | object]:
        """Yield frames, or :data:`IDLE` after ``tick`` seconds without data. Ends at EOF.

        Frames up to 64 KiB come as ``bytes``; bigger ones as a writable buffer of their own
        (a ``pyarrow.Buffer`` when pyarrow is loaded) that Arrow can read zero-copy.
        Raises :class:`FrameError` for a frame above the size limit."""
        buf = self._buf
        view = memoryview(buf)
        clock = time.monotonic
        due = clock() + tick
        while True:
            while self._end - self._start >= 3:
                s = self._start
                length = (buf[s] << 16) | (buf[s + 1] << 8) | buf[s + 2]
                if length > self._max:
                    raise FrameError(
                        f"frame of {length} bytes exceeds this side's limit of {self._max} bytes{self.what}"
                    )
                have = self._end - s - 3
                if have >= length:
                    self._start = s + 3 + length
                    yield bytes(view[s + 3 : s + 3 + length])
                    continue
                if length > _SMALL:
                    # A big frame gets its own buffer: read straight into it and hand it out
                    # without another copy (Arrow reads record batches from it zero-copy).
                    big, mv = self._big_buffer(length)
                    mv[:have] = view[s + 3 : self._end]
                    self._start = self._end = 0
                    got = have
                    while got < length:
                        n = self._read(mv[got:], tick)
                        if n is None:
                            due = clock() + tick
                            yield IDLE
                            continue
                        if n == 0:
                            return
                        got += n
                        if clock() >= due:
                            due = clock() + tick
                            yield IDLE
                    del mv
                    yield big
                    continue
                break
            # Make room: move the partial frame to the front.
            if self._start:
                rest = self._end - self._start
                buf[:rest] = view[self._start : self._end]
                self._start, self._end = 0, rest
            n = self._read(view[self._end :], tick)
            if n is None:
                due = clock() + tick
                yield IDLE
                continue
            if n == 0:
                return
            self._end += n
            if clock() >= due:
                due = clock() + tick
                yield IDLE


# -- TLS -------------------------------------------------------------------------------------
# OpenSSL forbids using one SSL object from two threads at once, and a Connection reads on one
# thread and writes on another. So a TLS connection gets one more thread, the *pump*, which is
# the only one that touches the SSL object and the network socket: it moves ciphertext between
# the TCP socket and an ssl.MemoryBIO pair, and plaintext between the SSL object and one end of
# a local socketpair. The Connection gets the other end, a plain socket, and runs exactly as it
# does for TCP (same threads, same sendmsg/recv_into paths). Both directions are bounded
# (_TLS_LIMIT bytes each), so a peer that stops reading stalls the writer as a full TCP socket would.

_TLS_CHUNK = 256 * 1024
_TLS_LIMIT = 1024 * 1024
_LINGER = 2.0  # seconds a closed connection keeps reading the peer, so our last bytes are not reset


class TlsPump:
    """Runs TLS for one connection on one thread; :attr:`app` is the plain socket to use."""

    def __init__(
        self,
        raw: socket.socket,
        context: _ssl.SSLContext,
        *,
        server_side: bool,
        hostname: str | None,
        label: str,
        handshake_timeout: float,
    ) -> None:
        self.label = label
        self.error: BaseException | None = None
        self.ready = False  # the handshake succeeded
        self.handshaken = threading.Event()  # the handshake ended (``ready`` says how)
        self._server_side = server_side
        self._raw = raw
        self._timeout = handshake_timeout
        self._in = _ssl.MemoryBIO()
        self._outb = _ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._in, self._outb, server_side=server_side, server_hostname=hostname)
        self.app, self._pair = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        for s in (self.app, self._pair):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _TLS_CHUNK * 2)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _TLS_CHUNK * 2)
        raw.setblocking(False)
        self._pair.setblocking(False)
        self._thread = threading.Thread(target=self._run, name=f"rs-net-tls {label}", daemon=True)
        self._thread.start()

    def abort(self) -> None:
        """Stop at once (e.g. the handshake took too long): the pump closes both sockets."""
        try:
            self.app.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # never let a TLS failure pass silently
            if self.error is None:
                self.error = exc
            if not self.ready:
                self._flush_alert()
                if self._server_side:
                    log.warning(
                        "rs_spark.net: TLS handshake with %s failed: %s; the connection was closed "
                        "(a client without TLS, an untrusted certificate, or a slow client)",
                        self.label,
                        exc,
                    )
            elif not isinstance(exc, (OSError, _ssl.SSLError)):
                log.exception("rs_spark.net: the TLS thread of %s failed", self.label)
        finally:
            self.handshaken.set()
            for s in (self._pair, self._raw):
                try:
                    s.close()
                except OSError:
                    pass

    def _loop(self) -> None:  # noqa: C901 - one state machine, kept in one place
        raw, pair, sslobj, outb = self._raw, self._pair, self._ssl, self._outb
        to_net = bytearray()
        net_off = 0
        to_app = bytearray()
        app_off = 0
        handshaking = True
        deadline = time.monotonic() + self._timeout
        raw_in = raw_out = True  # network socket open for reading / writing
        app_in = app_out = True  # local pair open for reading / writing
        close_notify = False  # our close_notify is queued: shut raw for writing once flushed
        linger: float | None = None
        poller = select.poll()
        RFD, PFD = raw.fileno(), pair.fileno()
        poller.register(RFD, 0)
        poller.register(PFD, 0)
        pair_registered = True
        buf = bytearray(_TLS_CHUNK)
        view = memoryview(buf)

        def step_handshake() -> bool:
            try:
                sslobj.do_handshake()
            except _ssl.SSLWantReadError:
                return True
            self.ready = True
            self.handshaken.set()
            return False

        handshaking = step_handshake()
        while True:
            pending = outb.pending
            if pending:
                to_net += outb.read()
            # Half-closes, in order: the peer's EOF goes to the app once its bytes are delivered;
            # the app's EOF becomes close_notify + FIN once its bytes are sent.
            if not raw_in and app_out and app_off >= len(to_app):
                _shut(pair, socket.SHUT_WR)
                app_out = False
            if close_notify and raw_out and net_off >= len(to_net):
                _shut(raw, socket.SHUT_WR)
                raw_out = False
            if not app_in and not app_out and linger is None:
                linger = time.monotonic() + _LINGER
            if not app_in and not app_out:
                if pair_registered:
                    poller.unregister(PFD)  # it would report POLLHUP for ever
                    pair_registered = False
                if (not raw_in and (not raw_out or net_off >= len(to_net))) or (
                    linger is not None and time.monotonic() > linger
                ):
                    return
            if not raw_in and not raw_out and not app_out:
                return
            # Interest.
            rev = 0
            if raw_in and len(to_app) - app_off < _TLS_LIMIT:
                rev |= select.POLLIN
            if raw_out and net_off < len(to_net):
                rev |= select.POLLOUT
            pev = 0
            if app_in and not handshaking and len(to_net) - net_off < _TLS_LIMIT:
                pev |= select.POLLIN
            if app_out and app_off < len(to_app):
                pev |= select.POLLOUT
            poller.modify(RFD, rev)
            if pair_registered:
                poller.modify(PFD, pev)
            now = time.monotonic()
            if handshaking:
                if now > deadline:
                    raise TimeoutError(f"TLS handshake with {self.label} did not finish within {self._timeout} s")
                wait = deadline - now
            elif linger is not None:
                wait = max(0.0, linger - now)
            else:
                wait = None
            events = poller.poll(None if wait is None else int(wait * 1000) + 1)
            for fd, ev in events:
                if fd == RFD:
                    if ev & (select.POLLIN | select.POLLHUP | select.POLLERR) and raw_in:
                        try:
                            n = raw.recv_into(view)
                        except (BlockingIOError, InterruptedError):
                            n = -1
                        except OSError as exc:
                            self.error = self.error or exc
                            raw_in = raw_out = False
                            to_net.clear()
                            net_off = 0
                            n = -1
                        if n == 0:
                            raw_in = False
                        elif n > 0:
                            self._in.write(view[:n])
                            if handshaking:
                                handshaking = step_handshake()
                            if not handshaking:
                                raw_in = self._decrypt(to_app) and raw_in
                                if not app_out:
                                    to_app.clear()  # the app is gone: drop what arrives while lingering
                                    app_off = 0
                    elif ev & (select.POLLHUP | select.POLLERR) and not raw_in:
                        raw_out = False  # reset, or both directions shut: nothing more can be sent
                        to_net.clear()
                        net_off = 0
                    if ev & select.POLLOUT and raw_out and net_off < len(to_net):
                        try:
                            net_off += raw.send(memoryview(to_net)[net_off:])
                        except (BlockingIOError, InterruptedError):
                            pass
                        except OSError as exc:
                            self.error = self.error or exc
                            raw_out = False
                            raw_in = False
                        if net_off >= len(to_net):
                            to_net.clear()
                            net_off = 0
                        elif net_off > _TLS_LIMIT:
                            del to_net[:net_off]
                            net_off = 0
                else:
                    if handshaking:
                        if ev & (select.POLLHUP | select.POLLERR):
                            raise ConnectionAbortedError(
                                f"the connection to {self.label} was closed during the TLS handshake"
                            )
                        continue
                    if ev & select.POLLOUT and app_out and app_off < len(to_app):
                        try:
                            app_off += pair.send(memoryview(to_app)[app_off:])
                        except (BlockingIOError, InterruptedError):
                            pass
                        except OSError:
                            app_out = False
                        if app_off >= len(to_app) or not app_out:
                            to_app.clear()
                            app_off = 0
                        elif app_off > _TLS_LIMIT:
                            del to_app[:app_off]
                            app_off = 0
                    if ev & (select.POLLIN | select.POLLHUP | select.POLLERR) and app_in:
                        try:
                            n = pair.recv_into(view)
                        except (BlockingIOError, InterruptedError):
                            n = -1
                        except OSError:
                            n = 0
                        if n == 0:
                            app_in = False
                            if raw_out and not close_notify:
                                close_notify = True
                                try:
                                    sslobj.unwrap()
                                except (_ssl.SSLWantReadError, _ssl.SSLError, ValueError):
                                    pass
                        elif n > 0:
                            sslobj.write(view[:n])
                    if ev & (select.POLLHUP | select.POLLERR) and not app_in:
                        app_out = False  # the app closed its socket: nobody reads what the peer sends
                        to_app.clear()
                        app_off = 0

    def _flush_alert(self) -> None:
        # Best effort: the peer learns why (e.g. "unknown ca") instead of seeing a bare reset.
        try:
            data = self._outb.read()
            if data:
                self._raw.send(data)
        except (OSError, ValueError):
            pass

    def _decrypt(self, to_app: bytearray) -> bool:
        """Plaintext available now into ``to_app``; False once the peer sent close_notify."""
        sslobj = self._ssl
        while True:
            try:
                data = sslobj.read(_TLS_CHUNK)
            except _ssl.SSLWantReadError:
                return True
            except _ssl.SSLZeroReturnError:
                return False
            if not data:
                return False
            to_app += data


def _shut(sock: socket.socket, how: int) -> None:
    try:
        sock.shutdown(how)
    except OSError:
        pass


def tls_client(
    raw: socket.socket, context: _ssl.SSLContext, hostname: str | None, label: str, timeout: float
) -> socket.socket:
    """TLS over a connected socket, handshake done: returns the plain socket to use
    (raises ``ssl.SSLError`` if the handshake failed, ``socket.timeout`` if it took too long)."""
    try:
        pump = TlsPump(raw, context, server_side=False, hostname=hostname, label=label, handshake_timeout=timeout)
    except BaseException:
        raw.close()
        raise
    if not pump.handshaken.wait(timeout + 1.0):
        pump.abort()
        pump.error = TimeoutError()
    if not pump.ready:
        pump.abort()
        err = pump.error
        if isinstance(err, TimeoutError):
            raise _ssl.SSLError(
                0,
                f"the handshake did not finish within {timeout} s: is {label} serving TLS "
                "(a tcp:// server never answers a TLS client), and not overloaded?",
            )
        if isinstance(err, _ssl.SSLCertVerificationError):
            raise _ssl.SSLError(
                0,
                f"{err.verify_message or err}: this client does not trust the certificate of "
                f"{label}; "
                "pass ssl=ssl.create_default_context(cafile='server-cert.pem') with the server's "
                "certificate or the CA that signed it",
            )
        raise _ssl.SSLError(0, f"{err}: is {label} serving TLS (a tcp:// server cannot answer a TLS client)?")
    return pump.app


def tls_server(raw: socket.socket, context: _ssl.SSLContext, label: str, timeout: float) -> socket.socket:
    """TLS on an accepted socket: returns the plain socket at once; the handshake runs on the
    connection's TLS thread (a failed or slow one closes that socket, logged)."""
    try:
        pump = TlsPump(raw, context, server_side=True, hostname=None, label=label, handshake_timeout=timeout)
    except BaseException:
        raw.close()
        raise
    return pump.app


class _Refuser:
    """Closes refused connections politely, for all servers on one short-lived thread.

    A client sends SETUP right after connecting; closing a socket with those bytes unread makes
    the kernel answer with a reset, which can destroy our ERROR frame before the client reads it.
    So a refused socket gets the ERROR frame and a FIN, and what the client sends is read and
    dropped until it closes or ``_REFUSE_LINGER`` seconds pass. At most ``_REFUSE_MAX`` sockets
    are held (a flood beyond that is closed at once); the thread ends when none are left.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict = {}
        self._thread: threading.Thread | None = None

    def refuse(self, sock: socket.socket, data: bytes) -> None:
        try:
            sock.setblocking(False)
            sock.send(data)  # small: fits in an empty socket buffer
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()
            return
        with self._lock:
            if len(self._held) >= _REFUSE_MAX:
                sock.close()
                return
            self._held[sock.fileno()] = (sock, time.monotonic() + _REFUSE_LINGER)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rs-net-refuser", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._held:
                    self._thread = None
                    return
                held = dict(self._held)
            poller = select.poll()
            for fd in held:
                poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
            now = time.monotonic()
            done = [fd for fd, (_, dl) in held.items() if now > dl]
            for fd, _ in poller.poll(50):
                try:
                    if held[fd][0].recv(65536):
                        continue
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    pass
                done.append(fd)
            with self._lock:
                for fd in set(done):
                    entry = self._held.pop(fd, None)
                    if entry is not None:
                        entry[0].close()


_REFUSE_LINGER = 2.0
_REFUSE_MAX = 256
_refuser = _Refuser()


def refuse(sock: socket.socket, frame: list[Buffer]) -> None:
    """Send ``frame`` (an encoded ERROR frame) on a refused socket and close it without a reset."""
    _refuser.refuse(sock, b"".join(bytes(b) for b in frame))


__all__ = ["dial", "listen", "send_buffers", "FrameReader", "IDLE", "TlsPump", "tls_client", "tls_server", "refuse"]
