"""One RSocket connection: frame dispatch, stream multiplexing, keepalive, limits, close.

Three threads per connection, each with one job (over TLS the reader decrypts and the writer
encrypts, in :class:`~rs_spark.net.protocol.tls.TlsSocket`, which takes the place of the socket):

* the *reader* reads and decodes frames and routes them to streams by id; it also runs the
  timers (keepalive, peer liveness, set-up deadline), because it never runs user code and
  never blocks on a send, so a slow subscriber or a full socket cannot stall them;
* the *writer* drains a queue of encoded frames with ``sendmsg``; every other thread only
  enqueues, so no signal ever blocks on the network (rule 2.2 / 3.4: non-obstructing);
* the *signal thread* (:class:`~rs_spark.net.protocol.worker.SerialExecutor`) runs user code: local
  ``request``/``cancel`` calls and deliveries to local subscribers.

What waits for the writer is a :class:`~rs_spark.net.protocol.write_queue.WriteQueue`, with the
bounds on its bytes (``Limits.high_water_bytes`` for outbound streams, ``Limits.reply_high_water_bytes``
for replies, ``Limits.max_backlog_bytes`` and the server's budget): its owner here answers what it
reports by pausing a stream, pausing the reader (closed past ``Limits.reply_stall_timeout``) or
closing the connection.

Why this module is long (about 600 lines): it is one class whose three threads share one stream
table and one close sequence (a close ends the streams once, after the writer's last frame; the
reader's timers never wait on the writer), read in one place; split by thread, each half would hold
the other's state.
"""

from __future__ import annotations

import logging
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Protocol

from ...streams.errors import throw_if_fatal
from . import frames as F
from .budget import OutboundBudget
from .errors import ConnectionLost, NetError, ProtocolError, Refused, Rejected, ResumeRejected
from .framing import IDLE, FrameReader, send_buffers
from .limits import Limits
from .metadata import MetadataError
from .resumption import Resumption
from .tls import Sock, TlsSocket, UnreadRecords
from .worker import SerialExecutor
from .write_queue import WriteQueue

log = logging.getLogger("rs_spark.net")

SETUP_MAX_BYTES = 64 * 1024
"""Largest frame a server reads before it has accepted a SETUP frame (token checked)."""
KEEPALIVE_ECHO_MAX = 1024
"""The most KEEPALIVE data echoed back (the spec lets a responder return it; larger data is cut)."""


class Stream(Protocol):
    """What a connection needs from a stream it multiplexes."""

    def on_frame(self, frame: F.Frame) -> None: ...

    def on_connection_closed(self, error: BaseException) -> None: ...


class Handler(Protocol):
    """The server side: accepts SETUP and opens streams for requests."""

    def on_setup(self, conn: Connection, frame: F.Frame) -> None: ...

    def open_stream(self, conn: Connection, frame: F.Frame) -> None: ...

    def on_resume(self, conn: Connection, frame: F.Frame) -> None: ...

    def on_metadata_push(self, conn: Connection, frame: F.Frame) -> None: ...


class Connection:
    """Frames in and out of one socket, shared by the streams whose ids it routes."""

    def __init__(
        self,
        sock: Sock,
        *,
        client: bool,
        label: str,
        limits: Limits,
        handler: Handler | None = None,
        keepalive: float = 2.0,
        lifetime: float = 10.0,
        on_closed: Callable[[Connection], None] | None = None,
        budget: OutboundBudget | None = None,
    ) -> None:
        self.sock = sock
        self.client = client
        self.label = label
        self.limits = limits
        self.handler = handler
        self.keepalive = keepalive
        self.lifetime = lifetime
        self.metadata_mime = ""
        self.data_mime = ""
        self.resumption: Resumption | None = None  # server: the resumable stream's session, set by the handler
        self.on_push: Callable[[F.Frame], None] | None = None  # client: METADATA_PUSH from the server
        self.on_resumed: Callable[[int], None] | None = None  # client: RESUME_OK (its position)
        self._on_closed = on_closed
        self._lock = threading.Lock()
        self._streams: dict[int, Stream] = {}
        self._next_id = 1 if client else 2
        self._ready = client  # a server is ready once SETUP was accepted
        self._closed: BaseException | None = None
        self._close_deadline = 0.0
        direct = not isinstance(sock, TlsSocket) and hasattr(socket, "MSG_DONTWAIT")
        self._queue = WriteQueue(
            limits,
            over_budget=self.over_budget,
            over_cap=self._over_cap,
            budget=budget,
            send_now=self._send_now if direct else None,
        )
        self._opened_at = time.monotonic()
        self._last_recv = self._opened_at
        self._next_keepalive = self._opened_at + keepalive
        self.worker = SerialExecutor(f"rs-net-signals {label}")
        self._writer = threading.Thread(target=self._write_loop, name=f"rs-net-writer {label}", daemon=True)
        self._reader = threading.Thread(target=self._read_loop, name=f"rs-net-reader {label}", daemon=True)

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        self._writer.start()  # first: the reader may need to send (and flush) at once
        self._reader.start()

    @property
    def closed(self) -> BaseException | None:
        """The error the connection closed with, or None while open."""
        return self._closed

    @property
    def _tick(self) -> float:
        if not self._ready:
            return max(0.02, min(0.25, self.limits.setup_timeout / 4))
        t = self.lifetime / 4
        if self.client:
            t = min(t, self.keepalive / 2)
        return max(0.02, min(t, 1.0))

    def close(self, error: BaseException | None = None, final: list[list[F.Buffer]] | None = None) -> None:
        """Close once. Open streams end with ``error`` (ConnectionLost if None). ``final`` frames
        (possibly none) are flushed first; without ``final`` the socket is shut at once."""
        with self._lock:
            if self._closed is not None:
                return
            self._closed = (
                error if error is not None else ConnectionLost(f"the connection to {self.label} was closed", self.label)
            )
            self._queue.close()
            streams = list(self._streams.values())
            self._streams.clear()
        try:
            self._end_streams(streams, self._closed)
        finally:  # even if a fatal error escapes a stream: the socket and the threads still stop
            self._stop_io(final)

    @staticmethod
    def _end_streams(streams: list[Stream], error: BaseException) -> None:
        for s in streams:
            try:
                s.on_connection_closed(error)
            except BaseException as exc:  # pragma: no cover - defensive
                throw_if_fatal(exc)  # the streams after this one are not told; close() still stops the I/O
                log.exception("rs_spark.net: closing a stream raised: %s", exc)

    def _stop_io(self, final: list[list[F.Buffer]] | None) -> None:
        self._close_deadline = time.monotonic() + 2.0
        if final is not None:
            self._queue.flush(final)
        else:
            self._queue.drop()
        if final is None or not self._writer.is_alive():
            self._shutdown(socket.SHUT_RDWR)
        self.worker.stop()
        if not self._reader.is_alive():  # never started: nothing will close the socket later
            self._forget()

    def _forget(self) -> None:
        """Tell the owner (the server's connection count) once the socket itself is closed."""
        cb, self._on_closed = self._on_closed, None
        if cb is not None:
            cb(self)

    def _shutdown(self, how: int) -> None:
        try:
            self.sock.shutdown(how)
        except OSError:
            pass

    # -- streams ------------------------------------------------------------------------
    def add_stream(self, stream: Stream, stream_id: int | None = None) -> int:
        """Register ``stream``; a client allocates the next odd id. Raises if closed or full."""
        with self._lock:
            if self._closed is not None:
                raise self._closed
            if stream_id is None:
                stream_id = self._next_id
                self._next_id += 2
            if len(self._streams) >= self.limits.max_streams:
                raise Refused(
                    f"{self.label}: too many open streams on one connection "
                    f"(Limits.max_streams={self.limits.max_streams}); close some streams or "
                    "open another connection",
                    self.label,
                )
            self._streams[stream_id] = stream
            return stream_id

    def remove_stream(self, stream_id: int) -> None:
        with self._lock:
            self._streams.pop(stream_id, None)
            self._queue.forget(stream_id)

    @property
    def stream_count(self) -> int:
        return len(self._streams)

    # -- sending ------------------------------------------------------------------------
    def send(self, frame: list[F.Buffer]) -> bool:
        """Queue one encoded frame of our own (stream data within its credit, our requests, our
        KEEPALIVE); False if the connection is closed (the frame is dropped)."""
        return self._enqueue(frame, False)

    def reply(self, frame: list[F.Buffer]) -> bool:
        """Queue one encoded frame that the peer's own frames made us send (an ERROR answering its
        request, a KEEPALIVE echo, REQUEST_N for its payloads...): counted against
        ``Limits.reply_high_water_bytes``, above which the reader stops reading the peer."""
        return self._enqueue(frame, True)

    def _enqueue(self, frame: list[F.Buffer], reply: bool) -> bool:
        if self._closed is not None:
            return False
        return self._queue.put(frame, reply)

    def _send_now(self, frame: list[F.Buffer]) -> int:
        """Send what the socket takes of ``frame`` without blocking (the queue's direct path)."""
        try:
            return self.sock.sendmsg(frame, [], socket.MSG_DONTWAIT) if len(frame) < 512 else 0
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError:
            return 0  # the writer will meet the error and close

    def _over_cap(self, backlog: int) -> None:
        self.close(
            ProtocolError(
                f"{self.label} stopped reading: {backlog} bytes queued for it, more than "
                f"Limits.max_backlog_bytes ({self._queue.cap}); closed",
                self.label,
            )
        )

    @property
    def backlog(self) -> int:
        """Bytes queued or being written."""
        return self._queue.bytes

    @property
    def unread_replies(self) -> int:
        """Bytes of replies queued for the peer (each frame's length plus ``budget.FRAME_OVERHEAD``)."""
        return self._queue.unread_replies

    @property
    def reading_paused(self) -> bool:
        """Whether the peer is not read from now: its unread replies passed ``Limits.reply_high_water_bytes``."""
        return self._queue.reading_paused

    def over_budget(self, budget: OutboundBudget) -> None:
        """Close this connection: its server's connections have too much queued for sending."""
        if self._closed is not None:
            return  # closing already (flushing its last frames): said once
        mine = self._queue.bytes
        log.warning(
            "rs_spark.net: closing %s: the server's connections have %d bytes queued for sending, more than "
            "Limits.max_server_backlog_bytes (%d); %d of them for this peer, which reads too slowly or not at all",
            self.label,
            budget.used,
            budget.limit,
            mine,
        )
        self.close(
            ProtocolError(
                f"{self.label}: closed by the server: its connections have more than "
                f"Limits.max_server_backlog_bytes ({budget.limit}) queued for sending; {mine} bytes of them "
                "for this peer, which reads too slowly or not at all",
                self.label,
            )
        )

    def wait_drain(self, stream_id: int, resume: Callable[[], None]) -> bool:
        """If the backlog is above the high-water mark, call ``resume`` (on the signal thread)
        once it has drained below half of it and return True; else return False."""
        return self._queue.wait_drain(stream_id, resume)

    def _write_loop(self) -> None:
        queue = self._queue
        try:
            while (taken := queue.take()) is not None:
                batch, n = taken
                small = n < 256 * 1024
                send_buffers(self.sock, [b"".join(batch)] if small and len(batch) > 1 else batch)
                for r in queue.written():
                    self.worker.submit(r)
        except OSError as exc:
            if self._closed is None:
                self.close(
                    ConnectionLost(
                        f"writing to {self.label} failed: {exc}; the peer closed the "
                        "connection or the network dropped it",
                        self.label,
                    )
                )
        finally:  # nothing queued will be written now: credit it all back
            if queue.writer_done():
                self._shutdown(socket.SHUT_WR)  # FIN after the last frame; the reader waits for the peer's

    # -- reading ------------------------------------------------------------------------
    def _read_loop(self) -> None:
        try:
            self._read_frames(self._frame_reader())
            if self._closed is None:
                self.close(ConnectionLost(f"{self.label} closed the connection", self.label))
        except (F.FrameError, MetadataError) as exc:
            self.protocol_error(str(exc))
            self._drain_after_close()
        except UnreadRecords as exc:  # TLS answers (key updates) the peer never read: as unread replies
            log.warning("rs_spark.net: closing %s: %s. A peer must read its socket", self.label, exc)
            self.close(ConnectionLost(f"{self.label} was closed: {exc}", self.label))
        except OSError as exc:
            if self._closed is None:
                self.close(
                    ConnectionLost(
                        f"reading from {self.label} failed: {exc}; the peer closed the "
                        "connection or the network dropped it",
                        self.label,
                    )
                )
        except BaseException as exc:  # a bug: never let it kill the server silently
            throw_if_fatal(exc)  # a fatal error ends the reader; the finally still closes the connection
            log.exception("rs_spark.net: reader of %s failed", self.label)
            self.close(ProtocolError(f"{self.label}: internal error while reading: {exc!r}", self.label))
        finally:
            self._finish()

    def _frame_reader(self) -> FrameReader:
        if self._ready:
            return FrameReader(self.sock, self.limits.max_frame_bytes)
        # An unauthenticated peer may not make us allocate a big buffer: SETUP frames are small.
        return FrameReader(
            self.sock,
            min(self.limits.max_frame_bytes, SETUP_MAX_BYTES),
            (
                " before a SETUP frame was accepted (a SETUP frame is small; is this an RSocket client, and "
                "not a TLS client on a tcp:// server?)"
            ),
        )

    def _read_frames(self, reader: FrameReader) -> None:
        """Dispatch frames and run the timers until the peer closes or a timer stops the reader."""
        full = self.limits.max_frame_bytes
        next_check = 0.0
        seen = 0
        for buf in reader.frames(self._tick):
            now = time.monotonic()
            if buf is IDLE:
                if reader.bytes_read != seen and self._ready:  # a big frame is arriving: the peer is alive
                    seen = reader.bytes_read
                    self._last_recv = now
                if self._on_tick(now):
                    return
                continue
            self._last_recv = now
            if self._queue.reading_paused and self._await_replies_drained():
                return
            if self._closed is None:
                self._dispatch(F.decode(buf))
                if self._ready and reader.what:  # SETUP accepted: the full limit applies, without the SETUP hint
                    reader.max_frame, reader.what = full, ""
            if now >= next_check:
                if self._on_tick(now):
                    return
                next_check = now + self._tick

    def _await_replies_drained(self) -> bool:
        """Read nothing more from the peer while the replies queued for it are above
        ``Limits.reply_high_water_bytes``, until half of that is left; the timers still run. Closes the
        connection when that lasts past ``Limits.reply_stall_timeout``. True when the reader should stop."""
        since = time.monotonic()
        while True:
            owed = self._queue.wait_replies_drained(self._tick)
            if owed is None:
                return False
            now = time.monotonic()
            self._last_recv = now  # we chose not to read: the peer's silence is not its own meanwhile
            if now - since > self.limits.reply_stall_timeout and self._closed is None:
                self._close_unread(owed, now - since)
            if self._on_tick(now):
                return True

    def _close_unread(self, owed: int, waited: float) -> None:
        """Close a connection whose peer left our replies unread for ``Limits.reply_stall_timeout``."""
        lim = self.limits
        why = (
            f"it did not read what was sent to it for {waited:.1f} s: {owed} bytes of replies to its own frames "
            f"(ERRORs answering its requests, KEEPALIVE echoes, REQUEST_N) stayed queued above "
            f"Limits.reply_high_water_bytes ({lim.reply_high_water_bytes}), so it was not read from, past "
            f"Limits.reply_stall_timeout ({lim.reply_stall_timeout} s)"
        )
        log.warning(
            "rs_spark.net: closing %s: %s. A peer must read its socket: check that it runs and reads, or raise "
            "Limits.reply_stall_timeout if its network is that slow",
            self.label,
            why,
        )
        self.close(ConnectionLost(f"{self.label} was closed: {why}", self.label))

    def _drain_after_close(self) -> None:
        """After sending a connection ERROR, read (and drop) until the peer closes or 2 s pass, so
        unread bytes do not turn our FIN into a reset that would lose the ERROR frame."""
        scratch = bytearray(SETUP_MAX_BYTES)  # bytes are dropped, not framed: a fixed, small buffer per peer
        # Waits in poll, not with a socket timeout: the timeout is the socket's, and the writer may still
        # be sending the final frames, which a timeout would cut.
        try:
            wait = select.poll()
            wait.register(self.sock.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
            while time.monotonic() <= self._close_deadline:
                try:
                    if self.sock.recv_into(scratch, 0, socket.MSG_DONTWAIT) == 0:
                        return
                except (BlockingIOError, InterruptedError):
                    wait.poll(100)
        except (OSError, ValueError):  # ValueError: the socket is closed already (fileno -1)
            return

    def _finish(self) -> None:
        if self._closed is None:
            self.close(None)
        self._shutdown(socket.SHUT_RDWR)
        if self._writer.is_alive():
            self._writer.join(2.0)
        try:
            self.sock.close()
        except OSError:
            pass
        self._forget()  # only now: a closing peer still holds a socket and counts against max_connections

    def _on_tick(self, now: float) -> bool:
        """Timers; True when the reader should stop."""
        if self._closed is not None:
            if now > self._close_deadline:
                self._shutdown(socket.SHUT_RDWR)
                return True
            return False
        if not self._ready:
            if now - self._opened_at > self.limits.setup_timeout:
                self.close(
                    Refused(
                        f"{self.label}: no valid SETUP frame within "
                        f"{self.limits.setup_timeout} s (Limits.setup_timeout)",
                        self.label,
                    )
                )
                return True
            return False
        if self.client and now >= self._next_keepalive:
            self.send(F.encode_keepalive(True))
            self._next_keepalive = now + self.keepalive
        silent = now - self._last_recv
        if silent > self.lifetime:
            who = "server" if self.client else "client"
            self.close(
                ConnectionLost(
                    f"no frame from the {who} {self.label} for {silent:.1f} s, more than the keepalive max "
                    f"lifetime of {self.lifetime} s: the peer is gone or stalled; open streams were ended. "
                    "Check that it is running and reachable, or raise lifetime= if it is merely slow",
                    self.label,
                )
            )
            return False
        return False

    def protocol_error(self, message: str) -> None:
        """Answer a malformed frame: ERROR[CONNECTION_ERROR] on stream 0, then close."""
        msg = f"{self.label}: malformed frame: {message}; the connection was closed"
        if not self.client:
            log.warning("rs_spark.net: %s", msg)
        self.close(ProtocolError(msg, self.label), final=[F.encode_error(0, F.CONNECTION_ERROR, message)])

    def reject(self, code: int, message: str) -> None:
        """Answer a refused SETUP (or a connection-wide failure) and close."""
        self.close(Refused(f"{self.label}: {message}", self.label), final=[F.encode_error(0, code, message)])

    def _dispatch(self, f: F.Frame) -> None:
        if not self._ready:
            self._on_first_frame(f)
        elif f.stream_id:
            self._on_stream_frame(f)
        else:
            self._on_connection_frame(f)

    def _on_first_frame(self, f: F.Frame) -> None:
        """A server's first frame must be an acceptable SETUP, or a RESUME of a stream it keeps."""
        if f.type not in (F.SETUP, F.RESUME):
            self.reject(F.INVALID_SETUP, f"the first frame must be SETUP, got {f.type_name}")
            return
        handler = self.handler
        assert handler is not None, "only a server waits for SETUP, and a server connection has a handler"
        try:
            if f.type == F.SETUP:
                handler.on_setup(self, f)
            else:
                handler.on_resume(self, f)
        except Rejected as r:
            self.reject(r.code, r.message)
            return
        self._ready = True

    def _on_stream_frame(self, f: F.Frame) -> None:
        s = self._streams.get(f.stream_id)
        if s is not None:
            if f.type in (F.PAYLOAD, F.REQUEST_N, F.CANCEL, F.ERROR):
                s.on_frame(f)
            return  # a request on an id in use is ignored (Protocol.md, "Handling the Unexpected")
        if f.type in (F.REQUEST_STREAM, F.REQUEST_CHANNEL, F.REQUEST_RESPONSE, F.REQUEST_FNF):
            self._open_stream(f)

    def _open_stream(self, f: F.Frame) -> None:
        """A request for a new stream: to the handler, within the stream limit."""
        sid = f.stream_id
        if self.handler is None:
            if f.type != F.REQUEST_FNF:
                self.reply(F.encode_error(sid, F.REJECTED, "this rs_spark.net client serves no requests"))
            return
        if len(self._streams) >= self.limits.max_streams:
            self.reply(
                F.encode_error(
                    sid,
                    F.REJECTED,
                    (
                        f"too many open streams on this connection (server limit {self.limits.max_streams}); "
                        "close finished streams or open another connection"
                    ),
                )
            )
            return
        try:
            self.handler.open_stream(self, f)
        except Rejected as r:
            self.reply(F.encode_error(sid, r.code, r.message))

    def _on_connection_frame(self, f: F.Frame) -> None:
        """Frames on stream 0 once the connection is set up."""
        t = f.type
        if t == F.KEEPALIVE:
            if f.has(F.FLAG_RESPOND):  # echo at most a little data: a peer may not grow our queue with it
                self.reply(F.encode_keepalive(False, 0, bytes(f.data[:KEEPALIVE_ECHO_MAX])))
        elif t == F.ERROR:
            text = bytes(f.data).decode("utf-8", "replace")
            code = F.ERROR_NAMES.get(f.error_code, hex(f.error_code))
            cls = _CONNECTION_ERRORS.get(f.error_code, ConnectionLost)
            self.close(cls(f"{self.label} closed the connection with ERROR[{code}]: {text}", self.label))
        elif t == F.METADATA_PUSH:
            self._on_metadata_push(f)
        elif t == F.RESUME_OK and self.client:
            cb, self.on_resumed = self.on_resumed, None
            if cb is not None:
                cb(f.client_position)
        # A second SETUP, LEASE, RESUME, EXT with IGNORE: nothing to do here.

    def _on_metadata_push(self, f: F.Frame) -> None:
        if self.handler is not None:
            self.handler.on_metadata_push(self, f)
        elif self.on_push is not None:
            self.on_push(f)

    def fail_stream(self, stream_id: int, code: int, message: str) -> None:
        """Answer a stream's frame with ERROR[code] and forget the stream."""
        self.remove_stream(stream_id)
        self.reply(F.encode_error(stream_id, code, message))


_CONNECTION_ERRORS: dict[int, type[NetError]] = {
    F.INVALID_SETUP: Refused,
    F.UNSUPPORTED_SETUP: Refused,
    F.REJECTED_SETUP: Refused,
    F.REJECTED_RESUME: ResumeRejected,
}
"""The error a connection ERROR frame (stream 0) closes the connection with, by code."""

__all__ = ["Connection", "Handler", "Stream"]
