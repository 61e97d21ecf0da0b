"""Signals in, frames out: the Subscriber a local Publisher gets for a remote Subscriber.

Used on the server side of request-stream and the client side of request-channel. It asks its
publisher only for what the peer's credits allow, in chunks (:class:`~.credit.CreditPump`), so a
slow remote subscriber slows the publisher and nothing queues without bound. Elements wait in a
:class:`~.send_queue.SendQueue` until credit lets them go (record batches are cut to the credit,
which counts rows).

The stream is in one :class:`State` at a time. A stream that keeps its rows until the reader
acknowledges them (and survives its connection) is a subclass in the zero-loss room
(:class:`rs_spark.net.zero_loss.kept_stream.KeptStream`); it plugs in through the hooks marked
*hook* below, so this module never imports that room.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ...streams.errors import report_dropped, throw_if_fatal
from ...streams.types import Subscription
from . import frames as F
from .codecs import ArrowCodec, Codec
from .credit import CreditPump
from .errors import NetError, error_text, remote_error
from .send_queue import SendQueue, split_batch
from .stream_state import OutboundStreamStats, State
from .worker import SerialExecutor

_COMPLETED = object()  # the terminal signal once the local publisher completed


class Encoded:
    """An element already encoded as its payload's buffers (kept rows sent again to a fetch)."""

    __slots__ = ("buffers",)

    def __init__(self, buffers: list[Any]) -> None:
        self.buffers = buffers


class OutboundStream:
    """The Subscriber a local Publisher gets; forwards its elements as PAYLOAD frames.

    ``log`` and ``executor`` are for subclasses: the queue elements wait in (a plain
    :class:`SendQueue` by default) and the executor the publisher's calls run on (by default the
    connection's signal thread)."""

    def __init__(
        self,
        codec: Codec,
        where: str,
        *,
        on_end: Callable[[BaseException | None], None] | None = None,
        address: str | None = None,
        log: SendQueue | None = None,
        executor: SerialExecutor | None = None,
    ) -> None:
        self._codec = codec
        self._arrow = codec if isinstance(codec, ArrowCodec) else None  # batches are cut to fit credit
        self._where = where
        self._address = address
        self._on_end = on_end
        self._lock = threading.Lock()
        self._conn: Any = None
        self._sid = 0
        self._sub: Subscription | None = None
        self._pump = CreditPump(rows=self._arrow is not None)
        self._log = log if log is not None else SendQueue(split=split_batch if self._arrow else None)
        self._executor = executor
        self._state = State.ATTACHED
        self._terminal: Any = None  # the publisher's end (_COMPLETED or its error), once it ended
        self._opening: tuple[bytes | None, int] | None = None  # the frame that opens a channel: see attach
        self.after_end = 0  # elements the publisher sent after the stream ended (rule 2.8)
        self.attaches = 0  # connections that carried the stream: its opening, then each resume
        self.released = 0  # rows held when the stream ended (cancelled by its reader, or expired)
        self.error: BaseException | None = None
        self.done = threading.Event()

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
            self._pump.grant(credit)
            self.attaches += 1
            self._send_ready_locked()
        self._schedule_pump()

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
            cancel = self._state is State.ENDED
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
            overflow = not self._pump.received()
            if not overflow:
                try:
                    self._append_locked(item)
                    self._send_ready_locked()
                except (TypeError, ValueError, F.FrameError) as exc:
                    unencodable = exc
                more = self._state.on_connection and self._conn is not None
                more = more and self._pump.wants_more(self._log.unsent)
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
        """Queue ``item``: record batches as they are (cut when sent), others encoded. A stream
        that keeps nothing sends an element at once when credit allows and nothing waits."""
        log = self._log
        if self._arrow is not None:
            pieces = self._arrow.pieces(item)
            self._pump.sized(sum(p.num_rows for p in pieces))
            for p in pieces:
                log.append(p, p.num_rows, p.nbytes)
            return
        data = item.buffers if isinstance(item, Encoded) else self._codec.encode(item)
        if not log.keeps and not log.unsent and self._pump.credit > 0 and self._conn is not None:
            self._conn.send(self._payload_frame(data))  # the fast path: no queueing
            log.pass_through(1)
            self._pump.spend(1)
            return
        log.append(data, 1, sum(len(b) for b in data))

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
                self._pump.grant(f.request_n)
                if self._state is State.RESUMED:
                    self._state = State.ATTACHED  # the resumed reader asked: its stream may end now
            self._schedule_pump()
        elif t == F.CANCEL:
            self.cancel_with(None)
        elif t == F.ERROR:
            self.cancel_with(remote_error(f, self._address, self._where, self.sent, self._unit))
        # PAYLOAD: a channel responder's own direction; ours does not carry elements.

    def on_connection_closed(self, error: BaseException) -> None:
        """*hook*: the connection closed under the stream; a plain stream ends with it."""
        self.cancel_with(error)

    def cancel_with(self, error: BaseException | None) -> None:
        """End the stream with ``error`` (None: cancelled by the peer) and cancel the local
        publisher; the peer is not told (it ended the stream, or cannot be reached)."""
        self._end(error)
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
    def state(self) -> State:
        return self._state

    @property
    def sent(self) -> int:
        """Elements (rows for arrow) sent: the stream position of the next one."""
        return self._log.cursor

    def stats(self) -> OutboundStreamStats:
        """What the stream holds and has done."""
        with self._lock:
            return OutboundStreamStats(**self._stats_fields_locked())

    def _stats_fields_locked(self) -> dict[str, Any]:
        """The fields of :class:`OutboundStreamStats` now (under the lock; subclasses add theirs)."""
        log = self._log
        return {
            "state": self._state.shown,
            "attaches": self.attaches,
            "sent_position": log.cursor,
            "end_position": log.end,
            "held_records": log.records,
            "held_bytes": log.bytes,
            "released_records": self.released,
            "after_end": self.after_end,
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
            if self._conn is None or not self._state.on_connection or not self._pump.claim():
                return
        self._run(self._drain)

    def _drain(self) -> None:
        """Send what credit allows, then ask the publisher for what the credit calls for."""
        failure: str | None = None
        with self._lock:
            self._pump.draining()
            if not self._state.on_connection or self._conn is None:
                return
            try:
                self._send_ready_locked()
            except (TypeError, ValueError, F.FrameError) as exc:
                failure = str(exc)
            k = 0 if failure is not None or self._log.unsent else self._next_ask_locked()
            s = self._sub
            if k > 0:
                self._pump.requesting = True
        if failure is not None:
            self._fail_both(failure)
        elif k > 0 and s is not None:  # k > 0 only with a subscription
            try:
                s.request(k)  # only here, on the signal thread: serial (rule 2.7)
            finally:
                with self._lock:
                    self._pump.requesting = False

    def _next_ask_locked(self) -> int:
        """How many elements to request from the local publisher now (0: none)."""
        if self._sub is None or self._terminal is not None:
            return 0
        k = self._pump.want(self._log.room, empty=self._log.records == 0)
        if k > 0 and self._conn.wait_drain(self._sid, self._schedule_pump):
            return 0  # the socket is behind: resume when the writer has drained
        if k > 0:
            self._pump.asked_for(k)
        return max(k, 0)

    def _send_ready_locked(self) -> None:
        """Send what credit allows from the queue, then the terminal signal once nothing waits."""
        conn = self._conn
        if conn is None or not self._state.on_connection:
            return
        self._send_rows_locked(conn)
        if not self._log.unsent and self._terminal is not None and self._state is State.ATTACHED:
            self._send_terminal_locked()

    def _send_rows_locked(self, conn: Any) -> None:
        """*hook*: send queued rows as PAYLOAD frames, as far as credit allows."""
        log, pump = self._log, self._pump
        while pump.credit > 0:
            item = log.peek()
            if item is None:
                break
            max_rows = 1
            if self._arrow is not None:
                max_rows = min(pump.credit, self._arrow.rows_for_bytes(item, conn.limits.max_frame_bytes - 1024))
            got = log.next_to_send(max_rows)
            assert got is not None, "the queue had an entry a moment ago, under the same lock"
            data, rows = got
            conn.send(self._payload_frame(self._arrow.encode(data) if self._arrow is not None else data))
            pump.spend(rows)

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
        if not self._ends_when_sent_locked():
            # Still routed: it hears its connection close (and _end removes it once over).
            self._state = State.FINISHING
            return
        conn.remove_stream(self._sid)
        self._state = State.ENDED
        self.error = err
        self.done.set()
        cb, self._on_end = self._on_end, None
        if cb is not None:
            conn.worker.submit(lambda: cb(err))

    def _ends_when_sent_locked(self) -> bool:
        """*hook*: whether the stream is over once its end was sent (a kept stream waits for the
        acknowledgement of its last rows: its reader may still need them again)."""
        return True

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

    def _cancel_upstream(self) -> None:
        """Cancel the publisher promptly (rules 1.8, 3.12): after any queued request (rule 2.7),
        and at once from another thread when a request() is running inside the publisher (a
        publisher that emits synchronously would otherwise keep pulling until it returns;
        cancel() is thread-safe by rule 3.5)."""
        with self._lock:
            busy = self._pump.requesting
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
            conn = self._conn if self._state.on_connection else None
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


__all__ = ["OutboundStream", "OutboundStreamStats", "State", "Encoded"]
