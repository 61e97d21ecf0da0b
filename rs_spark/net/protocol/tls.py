"""TLS for a connection, done in memory by the connection's own threads (:class:`TlsSocket`).

OpenSSL forbids using one SSL object from two threads at once, and a Connection reads on one
thread and writes on another. So the SSL object works on two ``ssl.MemoryBIO`` buffers and is
only touched under one lock, held for in-memory work alone (encrypting a chunk, decrypting what
arrived): the reader decrypts on its own thread, the writer encrypts on its own, and neither
waits on the network while holding that lock. Records must reach the network in the order the
SSL object produced them, so every record is queued under that lock and sent, in order, by
whichever thread holds the *send lock* (the writer, or the reader when it produced handshake or
key-update records while nobody was sending).

Opening one (the client's handshake and what a failed one says, the server's deferred one) is
:mod:`.tls_open`.

An earlier design ran TLS on a thread of its own behind a socketpair; every message then crossed
two more threads (docs/realtime.md).

Reads ask OpenSSL for plaintext only while it may hold some: a read that finds none raises
``SSLWantReadError``, and raising twice per record cost more than decrypting a small one.

Buffers are bounded: at most ``_TLS_CHUNK`` bytes of ciphertext are read ahead of the reader, and
the writer encrypts ``_TLS_CHUNK`` bytes of plaintext at a time, sending each before the next.
A server's handshake runs lazily on the reader thread (the first read), within its deadline.

The reader never blocks on a send: records it produces in answer to the peer's (the handshake, a
key update the peer asks for) are sent without waiting, and what the socket does not take now
stays queued, for the next read, the next tick or the writer. A peer that asks for answers and
never reads would grow that queue: past ``_MAX_UNSENT_ANSWERS`` bytes the read raises
:class:`UnreadRecords`, and the connection closes, as it does for its other unread replies.
"""

from __future__ import annotations

import enum
import logging
import socket
import ssl as _ssl
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, TypeAlias, cast

log = logging.getLogger("rs_spark.net")

_TLS_CHUNK = 256 * 1024  # most ciphertext read from the network at once; most plaintext encrypted at once
_COALESCE = 64 * 1024  # smaller writes are joined first: one record for many small frames
_NOWAIT = int(getattr(socket, "MSG_DONTWAIT", 0))  # a plain int: IntFlag's & runs in Python, 1.6 µs a read
_MAX_UNSENT_ANSWERS = 64 * 1024  # answers (handshake, key updates) queued unsent: past this the peer does not read


class UnreadRecords(ConnectionError):
    """The peer keeps making TLS answer it (key updates, renegotiation) and does not read the answers."""


class _Handshake(enum.Enum):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"


class TlsSocket:
    """A connected socket that speaks TLS; used like the plain socket it wraps (the subset a
    Connection, a WebSocket pump and a handshake use). Safe for one reading and one writing thread."""

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
        self.family = raw.family
        self._raw = raw
        self._server_side = server_side
        self._timeout = handshake_timeout
        self._deadline = time.monotonic() + handshake_timeout
        self._in = _ssl.MemoryBIO()
        self._out = _ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._in, self._out, server_side=server_side, server_hostname=hostname)
        self._ssl_lock = threading.Lock()  # the SSL object and both BIOs: in-memory work only
        self._send_lock = threading.Lock()  # the network's sending side: records leave in order
        # Records produced under _ssl_lock, sent under _send_lock, oldest first; each marked whether it
        # answers the peer's records (sent by the reader without waiting; counted in _answers_unsent).
        self._records: deque[tuple[Any, bool]] = deque()
        self._answers_unsent = 0
        self._scratch = bytearray(_TLS_CHUNK)
        self._state = _Handshake.PENDING
        self._handshaken = threading.Event()
        self._eof = False  # the peer closed (close_notify or FIN): reads return 0
        self._closed_by_peer = False  # TLS read the peer's close (reads return 0 once the bytes before it are out)
        self._more = False  # the last read filled its buffer: its record may hold more
        self._plain = bytearray()  # decrypted before our close_notify (see shutdown), served first

    # -- the socket's plain parts -------------------------------------------------------
    def fileno(self) -> int:
        return self._raw.fileno()

    def settimeout(self, timeout: float | None) -> None:
        self._raw.settimeout(timeout)

    def gettimeout(self) -> float | None:
        return self._raw.gettimeout()

    def setsockopt(self, *args: Any) -> None:
        self._raw.setsockopt(*args)

    def getpeername(self) -> Any:
        return self._raw.getpeername()

    def getsockname(self) -> Any:
        return self._raw.getsockname()

    def close(self) -> None:
        self._raw.close()

    def pending(self) -> bool:
        """Bytes wait inside TLS (decrypted, or records already read): readable without the network."""
        with self._ssl_lock:
            return bool(self._plain or self._more or self._in.pending)

    def shutdown(self, how: int) -> None:
        """``SHUT_WR`` sends close_notify, then a FIN, after everything written before; others as a socket."""
        if how == socket.SHUT_WR and self._state is _Handshake.DONE:
            with self._ssl_lock:
                self._keep_decrypted()
                try:
                    self._ssl.unwrap()  # queues close_notify; the peer's answer is read as EOF later
                except (_ssl.SSLWantReadError, _ssl.SSLError, ValueError):
                    pass
                self._take_records(answers=False)
            with self._send_lock:
                try:
                    self._send_records()
                except OSError:
                    pass  # the reset shows on the next read
        self._raw.shutdown(how)

    # -- reading ------------------------------------------------------------------------
    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        """Decrypted bytes into ``buffer`` (0 at the peer's close); ``MSG_DONTWAIT`` raises
        ``BlockingIOError`` when no whole record is here yet, like a socket with nothing to read."""
        view = memoryview(buffer).cast("B")
        want = nbytes or len(view)
        if not want:
            return 0  # as a socket does
        while True:
            got = self._decrypt(view, want)
            self._send_if_free()
            if self._answers_unsent > _MAX_UNSENT_ANSWERS:
                raise UnreadRecords(
                    f"it asked for TLS handshakes or key updates and did not read the {self._answers_unsent} bytes "
                    f"of records answering them (at most {_MAX_UNSENT_ANSWERS} wait)"
                )
            if got or self._eof:
                return got
            self._read_network(int(flags) & _NOWAIT)

    def recv(self, n: int) -> bytes:
        buf = bytearray(n)
        return bytes(buf[: self.recv_into(buf)])

    def _decrypt(self, view: memoryview, want: int) -> int:
        """Plaintext available now, up to ``want`` bytes; steps a server's handshake first."""
        with self._ssl_lock:
            if self._state is not _Handshake.DONE and not self._handshake_done():
                return 0
            got = self._take_plain(view, want) if self._plain else 0
            # Reads only while TLS may hold bytes: a read that finds none raises SSLWantReadError,
            # and raising costs more than decrypting a small record (twice per record otherwise).
            while got < want and (self._more or self._in.pending or self._in.eof or self._closed_by_peer):
                space = want - got
                try:
                    k = cast(int, self._ssl.read(space, view[got:]))  # with a buffer: a count
                except _ssl.SSLWantReadError:
                    self._more = False
                    break
                except (_ssl.SSLZeroReturnError, _ssl.SSLEOFError):
                    k = 0
                if not k:  # the peer's close (a read returns 0 for nothing else)
                    self._closed_by_peer = True
                    self._eof = not got  # the close comes after the bytes before it
                    break
                self._more = k == space  # a read returns less only when its record is used up
                got += k
            if self._out.pending:
                self._take_records(answers=True)  # e.g. an answer to the peer's key update
            return got

    def _handshake_done(self) -> bool:
        """Under ``_ssl_lock``: a server's handshake stepped with the bytes at hand; True once done."""
        if self._state is _Handshake.PENDING:
            return self._step_handshake()
        self._eof = True  # FAILED: reads as the end
        return False

    def _take_plain(self, view: memoryview, want: int) -> int:
        """Under ``_ssl_lock``: bytes decrypted at our close (see shutdown), first."""
        got = min(want, len(self._plain))
        view[:got] = self._plain[:got]
        del self._plain[:got]
        return got

    def _keep_decrypted(self) -> None:
        """Under ``_ssl_lock``: decrypt what already arrived into ``_plain``. ``unwrap`` reads on after
        sending close_notify, and application data it meets then would break the SSL object (OpenSSL:
        "application data after close notify"), losing bytes the peer sent before it knew we closed.
        Bounded: what arrived is at most one network read ahead of the reader."""
        while True:
            try:
                data = self._ssl.read(_TLS_CHUNK)
            except _ssl.SSLWantReadError:
                return
            except (_ssl.SSLZeroReturnError, _ssl.SSLEOFError):
                data = b""
            if not data:  # the peer's close: the reader reports it after _plain
                self._closed_by_peer = True
                return
            self._plain += data

    def _read_network(self, flags: int) -> None:
        """Move ciphertext from the network into TLS; raises ``BlockingIOError`` (``MSG_DONTWAIT``,
        nothing there) or what the socket raises."""
        if self._state is _Handshake.PENDING and time.monotonic() > self._deadline:
            self._fail(TimeoutError(f"TLS handshake with {self.label} did not finish within {self._timeout} s"))
            return
        try:
            n = self._raw.recv_into(self._scratch, len(self._scratch), flags)
        except OSError as exc:
            if isinstance(exc, (BlockingIOError, InterruptedError, TimeoutError)):
                raise
            if self._state is not _Handshake.PENDING:
                raise
            self._fail(exc)
            return
        with self._ssl_lock:
            if n:
                self._in.write(memoryview(self._scratch)[:n])
            else:
                self._in.write_eof()  # a FIN without close_notify reads as EOF too
        if not n and self._state is _Handshake.PENDING:
            self._fail(ConnectionAbortedError(f"{self.label} closed the connection during the TLS handshake"))

    # -- writing ------------------------------------------------------------------------
    def sendmsg(self, buffers: Iterable[Any], ancdata: Any = (), flags: int = 0) -> int:
        """Encrypt and send all of ``buffers``; returns their length. Takes no flags."""
        if flags or ancdata:
            raise ValueError("TlsSocket.sendmsg sends whole buffers: no flags, no ancillary data")
        self._await_handshake()
        total = 0
        with self._send_lock:
            for chunk in _chunks(buffers):
                with self._ssl_lock:
                    self._ssl.write(chunk)
                    self._take_records(answers=False)
                self._send_records()
                total += len(chunk)
        self._send_if_free()
        return total

    def sendall(self, data: Any) -> None:
        self.sendmsg([data])

    def send(self, data: Any) -> int:
        return self.sendmsg([data])

    def _take_records(self, answers: bool) -> None:
        """Under ``_ssl_lock``: queue what the SSL object wrote, in the order it wrote it; ``answers``:
        it answers the peer's records (the handshake, a key update), not our data."""
        if self._out.pending:
            rec = self._out.read()
            self._records.append((rec, answers))
            if answers:
                self._answers_unsent += len(rec)

    def _sent(self, rec: Any, answers: bool) -> None:
        if answers:
            self._answers_unsent -= len(rec)

    def _send_records(self) -> None:
        """Under ``_send_lock``: send the queued records, oldest first, waiting for the socket."""
        while self._records:
            rec, answers = self._records.popleft()
            self._sent(rec, answers)
            self._raw.sendall(rec)

    def _send_records_now(self) -> None:
        """Under ``_send_lock``: send what the socket takes without waiting; the rest stays queued."""
        while self._records:
            rec, answers = self._records[0]
            try:
                n = self._raw.send(rec, _NOWAIT)
            except (BlockingIOError, InterruptedError):
                return
            self._records.popleft()
            self._sent(memoryview(rec)[:n], answers)
            if n < len(rec):
                self._records.appendleft((memoryview(rec)[n:], answers))
                return

    def _send_if_free(self) -> None:
        """Send queued records, without waiting, unless another thread is sending (it sends them
        before it lets go; records queued just as it let go are caught here, since we look again
        after it). Called by the reader, which must not block on a peer that does not read."""
        while self._records and self._send_lock.acquire(blocking=False):
            try:
                before = len(self._records)
                self._send_records_now()
                if self._records and len(self._records) >= before:
                    return  # the socket is full: the next read, tick or write tries again
            except OSError:
                return  # the connection's own read or write meets the error
            finally:
                self._send_lock.release()

    def unsent(self) -> bool:
        """Records wait for the socket to take them (and no thread is sending them now)."""
        return bool(self._records) and not self._send_lock.locked()

    # -- the handshake ------------------------------------------------------------------
    def handshake(self) -> None:
        """A client's handshake, on the calling thread; raises on failure or after the deadline."""
        while self._state is _Handshake.PENDING:
            with self._ssl_lock:
                self._step_handshake()
            with self._send_lock:
                self._send_records()
            if self._state is _Handshake.PENDING:
                self._raw.settimeout(max(0.001, self._deadline - time.monotonic()))
                try:
                    self._read_network(0)
                except TimeoutError:
                    self._fail(TimeoutError())
        if self._state is _Handshake.FAILED:
            raise self.error or ConnectionAbortedError(self.label)
        self._raw.settimeout(None)

    def _step_handshake(self) -> bool:
        """Under ``_ssl_lock``: one step with the bytes at hand; True once done."""
        try:
            self._ssl.do_handshake()
        except _ssl.SSLWantReadError:
            self._take_records(answers=True)
            return False
        except (_ssl.SSLError, OSError, ValueError) as exc:
            self._take_records(answers=True)  # the alert says why (e.g. "unknown ca")
            self._state = _Handshake.FAILED
            self.error = exc
            self._handshake_ended()
            return False
        self._take_records(answers=True)
        self._state = _Handshake.DONE
        self._handshake_ended()
        return True

    def _fail(self, exc: BaseException) -> None:
        with self._ssl_lock:
            if self._state is not _Handshake.PENDING:
                return
            self._state = _Handshake.FAILED
            self.error = exc
        self._handshake_ended()

    def _handshake_ended(self) -> None:
        if self._state is _Handshake.FAILED:
            self._eof = True
            if self._server_side and not isinstance(self.error, ConnectionAbortedError):
                log.warning(
                    "rs_spark.net: TLS handshake with %s failed: %s; the connection was closed "
                    "(a client without TLS, an untrusted certificate, or a slow client)",
                    self.label,
                    self.error,
                )
        self._handshaken.set()

    def _await_handshake(self) -> None:
        if self._state is _Handshake.PENDING:
            self._handshaken.wait(max(0.0, self._deadline - time.monotonic()) + 1.0)
        if self._state is not _Handshake.DONE:
            raise ConnectionAbortedError(f"TLS with {self.label} is not established: {self.error}")


Sock: TypeAlias = "socket.socket | TlsSocket"
"""What a connection reads and writes: a plain socket or a TLS one."""


def _chunks(buffers: Iterable[Any]) -> Iterable[Any]:
    """The plaintext in pieces of at most ``_TLS_CHUNK`` bytes; small buffers joined."""
    if type(buffers) is list and len(buffers) == 1 and type(buffers[0]) is bytes and len(buffers[0]) <= _TLS_CHUNK:
        return buffers  # one small message (sendall): as it is, without a generator
    return _pieces(buffers)


def _pieces(buffers: Iterable[Any]) -> Iterator[Any]:
    small: list[Any] = []
    size: int = 0
    for b in buffers:
        view = memoryview(b).cast("B")
        if len(view) < _COALESCE and size + len(view) <= _TLS_CHUNK:
            small.append(view)
            size += len(view)
            continue
        if small:
            yield b"".join(small)
            small, size = [], 0
        for i in range(0, len(view), _TLS_CHUNK):
            yield view[i : i + _TLS_CHUNK]
    if small:
        yield small[0] if len(small) == 1 else b"".join(small)


__all__ = ["Sock", "TlsSocket", "UnreadRecords"]
