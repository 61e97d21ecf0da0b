"""Signals in, frames out: the Subscriber a local Publisher gets for a remote Subscriber.

Used on the server side of request-stream and the client side of request-channel. It asks its
publisher only for what the peer's credits allow, in chunks, so a slow remote subscriber slows
the publisher and nothing queues without bound. Elements wait in a :class:`RetainedLog` until
credit lets them go (record batches are cut to the credit, which counts rows).

A *resumable* stream (a server stream opened with resumption, :mod:`.resume`) keeps what it sent
in that log until the reader acknowledges it. When its connection drops it is not cancelled: it
is *detached*, keeps what its publisher still sends within the demand already issued, asks for
nothing more, and waits for its reader to resume at any kept position; the registry expires it
after its window. Its publisher calls (``request``, ``cancel``, ``on_commit``) then run on the
stream's own serial executor, which outlives connections.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from typing import Any

from ...streams.demand import MAX_DEMAND, add_cap
from ...streams.errors import report_dropped, throw_if_fatal
from ...streams.types import Subscription
from ..zero_loss.resume import retention_metadata
from ..zero_loss.retention import ResumeError, RetainedLog, Retention
from ..zero_loss.spill import Spill
from . import frames as F
from .codecs import ArrowCodec, Codec
from .errors import NetError, error_text, remote_error
from .worker import SerialExecutor

_COMPLETED = object()  # the terminal signal once the local publisher completed
_CHUNK = 1024  # most elements requested from a local publisher per request() call
_ARROW_ASK = 16  # most RecordBatches requested from a local publisher per request() call


class Encoded:
    """An element already encoded as its payload's buffers (kept rows sent again to a fetch)."""

    __slots__ = ("buffers",)

    def __init__(self, buffers: list[Any]) -> None:
        self.buffers = buffers


class State(enum.Enum):
    """Where an outbound stream is in its life."""

    ATTACHED = "attached"  # bound to a connection (or about to be)
    DETACHED = "detached"  # resumable, its connection dropped: waiting for a resume
    ENDED = "ended"  # over: cancelled, failed, expired, or finished (and acknowledged when resumable)


def _split_batch(batch: Any, rows: int) -> tuple[Any, Any]:
    return batch.slice(0, rows), batch.slice(rows)


class OutboundStream:
    """The Subscriber a local Publisher gets; forwards its elements as PAYLOAD frames."""

    def __init__(
        self,
        codec: Codec,
        where: str,
        *,
        on_end: Callable[[BaseException | None], None] | None = None,
        address: str | None = None,
        retention: Retention | None = None,
        on_detach: Callable[[], None] | None = None,
        spill: Spill | None = None,
        positions_only: bool = False,
    ) -> None:
        self._codec = codec
        self._arrow = codec if isinstance(codec, ArrowCodec) else None  # batches are cut to fit credit
        self._where = where
        self._address = address
        self._on_end = on_end
        self._on_detach = on_detach
        self._lock = threading.Lock()
        self._conn: Any = None
        self._sid = 0
        self._sub: Subscription | None = None
        self.committable: Any = None  # the publisher, when it takes on_commit (see _commit_upstream)
        self._credit = 0  # what the peer allows us to send (rows for arrow)
        self._asked = 0  # requested from the local publisher, not yet received
        self._el_rows = 0  # arrow: rows of the last element received (sizes the next request)
        self._log = RetainedLog(
            retention or Retention.off(),
            split=_split_batch if self._arrow else None,
            spill=spill,
            to_bytes=self._payload_bytes,
        )
        self.resumable = retention is not None and retention.enabled
        # Rows are kept for fetching by position (read_range); the stream itself only says how far
        # they go (a METADATA_PUSH), within the reader's credit: a partition of the source.
        self._positions_only = positions_only and self.resumable
        # A resumable stream's publisher calls outlive any one connection's signal thread.
        self._executor = SerialExecutor(f"rs-net-stream {where}") if self.resumable else None
        self._state = State.ATTACHED
        self._terminal: Any = None  # a terminal signal waiting behind unsent elements
        self._terminal_sent = False
        self._peer_ready = True  # False after a resume until the reader's first REQUEST_N routes the stream
        self._cancel_wanted = False
        self._requesting = False  # a request() call is inside the publisher
        self._pump_scheduled = False
        self._opening: tuple[bytes | None, int] | None = None  # (route metadata, n): see attach
        self._acked = 0
        self.after_end = 0  # elements the publisher sent after the stream ended (rule 2.8)
        self.resumes = 0
        self.attaches = 0  # connections that carried the stream: its opening, then each resume
        self.resent = 0  # rows sent again after resumptions
        self.lost = 0  # rows kept and never acknowledged when the resume window ended
        self.released = 0  # rows kept when the stream ended (cancelled by its reader, or expired)
        self.error: BaseException | None = None
        self.done = threading.Event()

    def _payload_bytes(self, item: Any) -> bytes:
        """An element as the bytes its payload carries (for the spill)."""
        buffers = self._arrow.encode(item) if self._arrow is not None else item
        return b"".join(bytes(b) for b in buffers)

    def preload(self, entries: list[tuple[int, int, bytes]], start: int) -> None:
        """Rows of a stream read back from its spill after a restart, decoded (and validated)."""
        items = []
        for pos, rows, payload in entries:
            if self._arrow is not None:
                batch = self._arrow.decode(payload)
                if batch.num_rows != rows:
                    raise ValueError(f"a spilled entry at position {pos} holds {batch.num_rows} rows, not {rows}")
                items.append((pos, rows, batch, batch.nbytes))
            else:
                items.append((pos, rows, [payload], len(payload)))
        with self._lock:
            self._log.preload(items, start)
            self._acked = start
            self._state = State.DETACHED

    # -- wiring -------------------------------------------------------------------------
    def attach(
        self, conn: Any, stream_id: int, credit: int = 0, opening: tuple[bytes | None, int] | None = None
    ) -> None:
        """Bind to a stream. With ``opening`` (route metadata, initial n) the stream is not open
        yet: the first element goes out as the REQUEST_CHANNEL frame itself, on the one credit
        the protocol implies (rsocket-java / rsocket-js); an empty publisher opens it with COMPLETE."""
        with self._lock:
            self._opening = opening
            if opening is not None:
                credit += 1
            self._conn, self._sid = conn, stream_id
            self._credit = add_cap(self._credit, credit)
            self.attaches += 1
            self._send_ready_locked()
        self._schedule_pump()

    def resume(self, conn: Any, stream_id: int, position: int) -> int:
        """Continue on ``conn`` from ``position`` (a kept row): credit starts at zero, the rows
        from there are sent again as the reader grants credit. Returns how many are sent again.
        Raises :class:`ResumeError` when the stream ended or ``position`` is not kept."""
        with self._lock:
            if self._state is State.ENDED:
                raise ResumeError(f"{self._where} has ended ({self._ended_why()}); it cannot be resumed")
            resend = self._log.rewind(position)
            old, old_sid = self._conn, self._sid
            self._conn, self._sid = conn, stream_id
            self._credit = 0
            self._terminal_sent = False
            self._peer_ready = False  # a terminal signal waits for the resumed reader's first request
            self._state = State.ATTACHED
            self.resumes += 1
            self.attaches += 1
            self.resent += resend
        if old is not None and old is not conn:  # the old connection may not know it is dead yet
            old.remove_stream(old_sid)
        self._schedule_pump()
        return resend

    def subscribe_upstream(self, publisher: Any) -> None:
        """Subscribe to ``publisher`` on the stream's signal thread (a stream revived from its spill
        continues with the publisher served now, once the kept rows are sent)."""

        def start() -> None:
            try:
                publisher.subscribe(self)
            except Exception as exc:  # rule 1.9 broken by the publisher: end the stream
                self.on_error(exc)

        self._run(start)

    def fail(self, error: BaseException) -> None:
        """The stream could not be opened (or broke locally): cancel the publisher and record why."""
        self.cancel_with(error)

    # -- Subscriber (the local publisher's threads) -------------------------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None) is illegal (rule 2.13)")
        with self._lock:
            dup = self._sub is not None
            if not dup:
                self._sub = subscription
            cancel = self._cancel_wanted or self._state is State.ENDED
        if dup:
            subscription.cancel()  # rule 2.5
        elif cancel:
            self._cancel_upstream()
        else:
            self._schedule_pump()

    def on_next(self, item: Any) -> None:
        if item is None:
            self._publisher_broke("2.13", "the publisher signalled on_next(None)")
            raise TypeError("on_next(None) is illegal (rule 2.13)")
        more = overflow = False
        unencodable: Exception | None = None
        with self._lock:
            if self._state is State.ENDED:
                self.after_end += 1  # late elements after cancel are allowed (rule 2.8): counted, dropped
                return
            self._asked -= 1
            overflow = self._asked < 0
            if not overflow:
                try:
                    self._append_locked(item)
                    self._send_ready_locked()
                except (TypeError, ValueError, F.FrameError) as exc:
                    unencodable = exc
                more = self._wants_more_locked()
        if overflow:
            self._publisher_broke("1.1", "the publisher signalled more on_next than were requested")
        elif unencodable is not None:
            self._fail_both(
                f"{unencodable} (element after {self.sent} {self._unit} sent); serve elements the "
                f"codec '{self._codec.name}' can encode, or connect with another codec"
            )
        elif more:
            self._schedule_pump()

    def _append_locked(self, item: Any) -> None:
        """Keep ``item`` in the log: record batches as they are (cut when sent), others encoded.
        A stream that keeps nothing sends an element at once when credit allows and nothing waits."""
        if self._arrow is not None:
            pieces = self._arrow.pieces(item)
            self._el_rows = sum(p.num_rows for p in pieces)
            for p in pieces:
                self._log.append(p, p.num_rows, p.nbytes)
            return
        data = item.buffers if isinstance(item, Encoded) else self._codec.encode(item)
        log = self._log
        if not log.retain and not log.unsent and self._credit > 0 and self._conn is not None:
            self._conn.send(self._payload_frame(data))  # the fast path: no queueing
            log.pass_through(1)
            if self._credit != MAX_DEMAND:
                self._credit -= 1
            return
        log.append(data, 1, sum(len(b) for b in data))

    def _wants_more_locked(self) -> bool:
        """Whether to schedule a pump that may ask the publisher for more."""
        if self._state is not State.ATTACHED or self._conn is None:
            return False
        if self._arrow is not None:
            return self._log.unsent == 0 and self._credit > 0 and self._asked == 0
        return self._asked <= _CHUNK // 2 and self._credit > self._asked

    def on_error(self, error: BaseException) -> None:
        self._upstream_ended(error if error is not None else TypeError("on_error(None) is illegal (rule 2.13)"))

    def on_complete(self) -> None:
        self._upstream_ended(_COMPLETED)

    def _upstream_ended(self, terminal: Any) -> None:
        with self._lock:
            if self._state is State.ENDED or self._terminal is not None:
                return
            self._terminal = terminal
            self._send_ready_locked()

    # -- frames (reader thread) ---------------------------------------------------------
    def on_frame(self, f: F.Frame) -> None:
        t = f.type
        if t == F.REQUEST_N:
            with self._lock:
                self._credit = add_cap(self._credit, f.request_n)
                self._peer_ready = True
            self._schedule_pump()
        elif t == F.CANCEL:
            self.cancel_with(None)
        elif t == F.ERROR:
            self.cancel_with(remote_error(f, self._address, self._where, self.sent, self._unit))
        # PAYLOAD: a channel responder's own direction; ours does not carry elements.

    def on_connection_closed(self, error: BaseException) -> None:
        if self.resumable and self._detach():
            return
        self.cancel_with(error)

    def _detach(self) -> bool:
        """Keep the stream for a resume (True), unless it already ended."""
        with self._lock:
            if self._state is State.ENDED:
                return False
            self._state = State.DETACHED
            self._conn = None
            self._credit = 0
            self._terminal_sent = False
        cb = self._on_detach
        if cb is not None:
            cb()
        return True

    def cancel_with(self, error: BaseException | None) -> None:
        """End the stream with ``error`` (None: cancelled by the peer) and cancel the local
        publisher; the peer is not told (it ended the stream, or cannot be reached)."""
        self._end(error)
        self._cancel_upstream()

    def expire(self, why: str) -> int:
        """The resume window ended without a reader: cancel the publisher; returns the rows lost."""
        with self._lock:
            if self._state is not State.ENDED:
                self.lost = self._log.records
        self._end(NetError(f"{self._where}: {why}", self._address, self._where))
        self._cancel_upstream()
        return self.lost

    def shutdown(self, why: str) -> None:
        """The server stops: cancel the publisher; a spilled stream keeps its files, so a restarted
        server can serve its kept rows again."""
        with self._lock:
            self._log.close_spill()
        self._end(NetError(f"{self._where}: {why}", self._address, self._where))
        self._cancel_upstream()

    @property
    def upstream_error(self) -> BaseException | None:
        """The error the local publisher signalled (forwarded to the peer), if it did."""
        t = self._terminal
        return t if isinstance(t, BaseException) else None

    @property
    def ended(self) -> bool:
        return self._state is State.ENDED

    @property
    def reader_gone(self) -> bool:
        """No reader is on the stream: detached, or its connection closed (a stream that sent its
        end and waits for the last acknowledgements is no longer told of its connection's close)."""
        conn = self._conn
        return self._state is State.DETACHED or conn is None or conn.closed is not None

    @property
    def state(self) -> State:
        return self._state

    @property
    def sent(self) -> int:
        """Elements (rows for arrow) sent: the stream position of the next one."""
        return self._log.cursor

    # -- acknowledgements (resumable streams) -----------------------------------------------
    def acknowledge(self, position: int) -> int:
        """The reader made every row before ``position`` durable: free them, and tell the
        publisher (``on_commit``, serial with its other calls). Returns the rows freed."""
        with self._lock:
            if self._state is State.ENDED:
                return 0
            freed = self._log.free_until(position)
            advanced = position > self._acked
            self._acked = max(self._acked, position)
            finished = self._terminal_sent and self._acked >= self._log.end
        if advanced:
            self._run(lambda: self._commit_upstream(position))
        if finished:
            self._end(None)
        elif freed:
            self._schedule_pump()  # room again: the publisher may be asked for more
        return freed

    def _commit_upstream(self, position: int) -> None:
        for target in (self._sub, self.committable):
            hook = getattr(target, "on_commit", None)
            if callable(hook):
                try:
                    hook(position)
                except Exception as exc:  # an acknowledgement the publisher fumbled must not end the stream
                    report_dropped(exc, f"rs_spark.net: {self._where}: on_commit({position}) raised")
                return

    def stats(self) -> dict[str, Any]:
        """Retention and resumption counts (rows), for the endpoint's stats."""
        with self._lock:
            s: dict[str, Any] = dict(self._log.stats())
            s.update(
                state=self._state.value,
                ackedPosition=self._acked,
                resumes=self.resumes,
                attaches=self.attaches,
                resentRecords=self.resent,
                lostRecords=self.lost,
                releasedRecords=self.released,
                afterEnd=self.after_end,
            )
        return s

    def retention_counts(self) -> dict[str, int]:
        """What the reader is told after an acknowledgement (and, positions only, when rows become available)."""
        with self._lock:
            return self._counts_locked()

    def _counts_locked(self) -> dict[str, int]:
        return {
            "retainedRecords": self._log.records,
            "retainedBytes": self._log.bytes,
            "ackedPosition": self._acked,
            "resentRecords": self.resent,
            "endPosition": self._log.cursor,
        }

    # -- demand (signal thread) ---------------------------------------------------------
    def _run(self, fn: Callable[[], None]) -> None:
        """Run a call into the publisher serially: on the stream's executor, or the connection's."""
        ex = self._executor
        if ex is not None:
            ex.submit(fn)
            return
        conn = self._conn
        if conn is None:
            fn()
        else:
            conn.worker.submit(fn)

    def _schedule_pump(self) -> None:
        with self._lock:
            if self._pump_scheduled or self._conn is None or self._state is not State.ATTACHED:
                return
            self._pump_scheduled = True
        self._run(self._pump)

    def _pump(self) -> None:
        failure: str | None = None
        with self._lock:
            self._pump_scheduled = False
            if self._state is not State.ATTACHED or self._conn is None:
                return
            try:
                self._send_ready_locked()
            except (TypeError, ValueError, F.FrameError) as exc:
                failure = str(exc)
            k = 0 if failure is not None or self._log.unsent else self._next_ask_locked()
            s = self._sub
            if k > 0:
                self._requesting = True
        if failure is not None:
            self._fail_both(failure)
        elif k > 0 and s is not None:  # k > 0 only with a subscription
            try:
                s.request(k)  # only here, on the signal thread: serial (rule 2.7)
            finally:
                with self._lock:
                    self._requesting = False

    def _next_ask_locked(self) -> int:
        """How many elements to request from the local publisher now (0: none)."""
        if self._sub is None or self._terminal is not None or self._cancel_wanted:
            return 0
        k = self._ask_for_credit_locked()
        if k > 0:
            k = self._within_retention_locked(k)
        if k > 0 and self._conn.wait_drain(self._sid, self._schedule_pump):
            return 0  # the socket is behind: resume when the writer has drained
        if k > 0:
            self._asked += k
        return max(k, 0)

    def _ask_for_credit_locked(self) -> int:
        """Elements the peer's credit calls for."""
        if self._arrow is not None:
            # Ask for as many elements as the peer's credit (in rows) covers at the last element's
            # size, 1..16: one request, and one pump hand-off, per several batches. What arrives
            # beyond the credit waits in the log: at most that many.
            if self._asked == 0 and self._credit > 0:
                return 1 if self._el_rows <= 0 else max(1, min(_ARROW_ASK, self._credit // self._el_rows))
            return 0
        if self._asked <= _CHUNK // 2:
            return min(self._credit, _CHUNK) - self._asked
        return 0

    def _within_retention_locked(self, k: int) -> int:
        """``k`` cut to what the log may still keep: when it is full nothing is asked until
        acknowledgements free room (backpressure reaches the publisher; nothing is dropped)."""
        per = max(self._el_rows, 1) if self._arrow is not None else 1
        room = self._log.room(self._asked * per)
        if room >= k * per:
            return k
        if room > 0 and self._log.records == 0:
            return 1  # one element bigger than the whole bound still goes (else nothing ever would)
        return room // per

    def _send_ready_locked(self) -> None:
        """Send what credit allows from the log, then the terminal signal once nothing waits."""
        conn = self._conn
        if conn is None or self._state is not State.ATTACHED:
            return
        log = self._log
        if self._positions_only:
            self._advance_positions_locked(conn)
        while self._credit > 0 and not self._positions_only:
            item = log.peek()
            if item is None:
                break
            max_rows = 1
            if self._arrow is not None:
                max_rows = min(self._credit, self._arrow.rows_for_bytes(item, conn.limits.max_frame_bytes - 1024))
            got = log.next_to_send(max_rows)
            assert got is not None, "the log had an entry a moment ago, under the same lock"
            data, rows = got
            conn.send(self._payload_frame(self._arrow.encode(data) if self._arrow is not None else data))
            if self._credit != MAX_DEMAND:
                self._credit -= rows
        if not log.unsent and self._terminal is not None and not self._terminal_sent and self._peer_ready:
            self._send_terminal_locked()

    def _advance_positions_locked(self, conn: Any) -> None:
        """Positions only: make rows available within credit (no payload frames) and tell the reader
        how far they now go."""
        log = self._log
        before = log.cursor
        while self._credit > 0:
            got = log.next_to_send(self._credit if self._arrow is not None else 1)
            if got is None:
                break
            if self._credit != MAX_DEMAND:
                self._credit -= got[1]
        if log.cursor != before:
            conn.send(F.encode_metadata_push(retention_metadata(self._counts_locked())))

    def read_range(self, lo: int, hi: int) -> list[Any]:
        """The kept rows ``[lo, hi)`` (made available or sent), as elements to send again: record
        batches, or :class:`Encoded` payloads. Raises ResumeError when they are not all kept."""
        with self._lock:
            if self._state is State.ENDED:
                raise ResumeError(f"{self._where} has ended ({self._ended_why()}); its rows are no longer kept")
            items = self._log.range(lo, hi)
        return items if self._arrow is not None else [Encoded(i) for i in items]

    def _payload_frame(self, data: Any, complete: bool = False) -> Any:
        """A PAYLOAD frame, or the REQUEST_CHANNEL that opens the stream with this element."""
        opening, self._opening = self._opening, None
        if opening is None:
            return F.encode_payload(
                self._sid, data if data is not None else (), next=data is not None, complete=complete
            )
        meta, n = opening
        return F.encode_request(F.REQUEST_CHANNEL, self._sid, n, metadata=meta, data=data or (), complete=complete)

    def _open_empty_locked(self) -> None:
        # An error before the first element: open the channel without data so the error that
        # follows reaches the remote subscriber (rs_spark servers read empty data as no element).
        if self._opening is not None:
            self._conn.send(self._payload_frame(()))

    def _send_terminal_locked(self) -> None:
        t = self._terminal
        conn = self._conn
        if t is _COMPLETED:
            conn.send(self._payload_frame(None, complete=True))
            err = None
        else:
            self._open_empty_locked()
            conn.send(F.encode_error(self._sid, F.APPLICATION_ERROR, error_text(t)))
            err = t
        self._terminal_sent = True
        conn.remove_stream(self._sid)
        if self.resumable and self._acked < self._log.end:
            return  # kept until the reader acknowledges the last rows: it may still need them again
        self._state = State.ENDED
        self.error = err
        self.done.set()
        cb, self._on_end = self._on_end, None
        if cb is not None:
            conn.worker.submit(lambda: cb(err))

    # -- end ----------------------------------------------------------------------------
    def _end(self, error: BaseException | None) -> None:
        with self._lock:
            if self._state is State.ENDED:
                return
            self._state = State.ENDED
            conn = self._conn
            self.released = self._log.clear()
        if conn is not None:
            conn.remove_stream(self._sid)
        self.error = error
        self.done.set()
        cb, self._on_end = self._on_end, None
        if cb is not None:
            cb(error)
        ex = self._executor
        if ex is not None:
            ex.stop()

    def _ended_why(self) -> str:
        e = self.error
        return "completed and acknowledged" if e is None else str(e)

    def _cancel_upstream(self) -> None:
        """Cancel the publisher promptly (rules 1.8, 3.12): after any queued request (rule 2.7),
        and at once from another thread when a request() is running inside the publisher (a
        publisher that emits synchronously would otherwise keep pulling until it returns;
        cancel() is thread-safe by rule 3.5)."""
        with self._lock:
            self._cancel_wanted = True
            busy = self._requesting
        if busy:
            threading.Thread(target=self._cancel_now, name=f"rs-net-cancel {self._where}", daemon=True).start()
        self._run(self._cancel_now)

    def _cancel_now(self) -> None:
        s = self._sub
        if s is not None:
            try:
                s.cancel()
            except Exception as exc:  # rule 3.15: cancel must return normally; this one did not
                throw_if_fatal(exc)
                report_dropped(exc, f"rs_spark.net: {self._where}: the publisher's cancel() raised (rule 3.15)")

    def _fail_both(self, message: str) -> None:
        """Our side failed (e.g. an element could not be encoded): tell the peer, cancel the publisher."""
        text = f"{self._where}: {message}"
        err = NetError(text, self._address, self._where)
        with self._lock:
            conn = self._conn if self._state is State.ATTACHED else None
            if conn is not None:
                self._open_empty_locked()
        if conn is not None:
            conn.send(F.encode_error(self._sid, F.APPLICATION_ERROR, error_text(err)))
        self._end(err)
        self._cancel_upstream()
        report_dropped(err, "rs_spark.net: an outbound stream failed")

    def _publisher_broke(self, rule: str, what: str) -> None:
        self._fail_both(f"{what} (Reactive Streams rule {rule}); the stream was cancelled. Fix the publisher")

    @property
    def _unit(self) -> str:
        return "rows" if self._codec.counts_rows else "elements"


__all__ = ["OutboundStream", "State", "Encoded"]
