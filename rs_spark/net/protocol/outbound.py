"""Signals in, frames out: the Subscriber a local Publisher gets for a remote Subscriber.

Used on the server side of request-stream and the client side of request-channel. It asks its
publisher only for what the peer's credits allow, in chunks (:class:`~.credit.CreditPump`), so a
slow remote subscriber slows the publisher and nothing queues without bound. Elements wait in a
:class:`~.send_queue.SendQueue` until credit lets them go (record batches are cut to the credit,
which counts rows).

The stream is in one state at a time, moved only by its :class:`~.stream_state.StateTable`
(:mod:`.stream_state`). A stream that keeps its rows until the reader acknowledges them (and
survives its connection) is built around one of these in the zero-loss room: it gives the stream
its queue, its executor, its state table and a :class:`~.keeper.Keeper`, and acts on it through
the calls under "for a keeper" below, under the stream's ``lock``; this module never imports that room.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ...streams.errors import report_dropped, throw_if_fatal
from ...streams.types import Subscription
from . import frames as F
from .codecs import ArrowCodec, Codec
from .credit import CreditPump, Readiness
from .errors import NetError, remote_error
from .keeper import Keeper
from .send_queue import SendQueue, split_batch
from .stream_frames import Encoded, StreamFrames
from .stream_state import PLAIN, Event, OutboundStreamStats, State, StateTable, StreamState
from .worker import SerialExecutor

_COMPLETED = object()  # the terminal signal once the local publisher completed


class OutboundStream:
    """The Subscriber a local Publisher gets; forwards its elements as PAYLOAD frames.

    ``queue``, ``executor``, ``states`` and ``keeper`` are for a stream that keeps its rows: the
    queue elements wait in (a plain :class:`SendQueue` by default), the executor the publisher's
    calls run on (by default the connection's signal thread), the table that moves its state
    (:data:`~.stream_state.PLAIN`) and the :class:`~.keeper.Keeper` it asks."""

    def __init__(
        self,
        codec: Codec,
        where: str,
        *,
        on_end: Callable[[BaseException | None], None] | None = None,
        address: str | None = None,
        queue: SendQueue | None = None,
        executor: SerialExecutor | None = None,
        states: StateTable = PLAIN,
        keeper: Keeper | None = None,
    ) -> None:
        self._codec = codec
        self._arrow = codec if isinstance(codec, ArrowCodec) else None  # batches are cut to fit credit
        self._where = where
        self._address = address
        self._on_end = on_end
        self.lock = threading.Lock()  # every change of the stream's state and queue, a keeper's too
        self._conn: Any = None
        self._frames = StreamFrames()  # its stream id, and the route of a channel not opened yet
        self._sub: Subscription | None = None
        self._pump = CreditPump(rows=self._arrow is not None)
        self._queue = queue if queue is not None else SendQueue(split=split_batch if self._arrow else None)
        self._executor = executor
        self._states = states
        self._state = states.start  # assigned only by move_locked
        self._keeper = keeper
        self._terminal: Any = None  # how the publisher ended (_COMPLETED or its error): read once the state says it did
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
        with self.lock:
            if opening is not None:
                credit += 1
            self._conn, self._frames = conn, StreamFrames(stream_id, opening)
            self._pump.grant(credit)
            self.attaches += 1
            self.move_locked(Event.ATTACH)
            self._send_ready_locked()
        self.schedule_pump()

    def subscribe_upstream(self, publisher: Any) -> None:
        """Subscribe to ``publisher`` on the stream's signal thread (a stream revived from its spill
        continues with the publisher served now, once the kept rows are sent)."""

        def start() -> None:
            try:
                publisher.subscribe(self)
            except Exception as exc:  # rule 1.9 broken by the publisher: end the stream
                self.on_error(exc)

        self.run(start)

    def fail(self, error: BaseException) -> None:
        """The stream could not be opened (or broke locally): cancel the publisher and record why."""
        self.cancel_with(error)

    # -- Subscriber (the local publisher's threads) -------------------------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None) is illegal (rule 2.13)")
        with self.lock:
            dup = self._sub is not None
            if not dup:
                self._sub = subscription
            cancel = self._state.ended
        if dup:
            subscription.cancel()  # rule 2.5
        elif cancel:
            self._cancel_upstream()
        else:
            self.schedule_pump()

    def on_next(self, item: Any) -> None:
        if item is None:
            self._publisher_broke("2.13", "the publisher signalled on_next(None)")
            raise TypeError("on_next(None) is illegal (rule 2.13)")
        more = overflow = False
        unencodable: Exception | None = None
        with self.lock:
            if self._state.ended:
                self.after_end += 1  # late elements after cancel are allowed (rule 2.8): counted, dropped
                return
            overflow = not self._pump.received(time.monotonic())
            if not overflow:
                try:
                    self._append_locked(item)
                    self._send_ready_locked()
                except (TypeError, ValueError, F.FrameError) as exc:
                    unencodable = exc
                more = self._state.on_connection and self._pump.wants_more(self._queue.unsent)
        if overflow:
            self._publisher_broke("1.1", "the publisher signalled more on_next than were requested")
        elif unencodable is not None:
            self._fail_both(
                f"{unencodable} (element after {self.sent} {self._unit} sent); serve elements the "
                f"codec '{self._codec.name}' can encode, or connect with another codec"
            )
        elif more:
            self.schedule_pump()

    def _append_locked(self, item: Any) -> None:
        """Queue ``item``: record batches as they are (cut when sent), others encoded. A stream
        that keeps nothing sends an element at once when credit allows and nothing waits."""
        queue = self._queue
        if self._arrow is not None:
            pieces = self._arrow.pieces(item)
            self._pump.sized(sum(p.num_rows for p in pieces))
            for p in pieces:
                queue.append(p, p.num_rows, p.nbytes)
            return
        data = item.buffers if isinstance(item, Encoded) else self._codec.encode(item)
        if not queue.keeps and not queue.unsent and self._pump.credit > 0 and self._state.on_connection:
            self._conn.send(self._frames.payload(data))  # the fast path: no queueing
            queue.pass_through(1)
            self._pump.spend(1)
            return
        queue.append(data, 1, sum(len(b) for b in data))

    def on_error(self, error: BaseException) -> None:
        self._upstream_ended(error if error is not None else TypeError("on_error(None) is illegal (rule 2.13)"))

    def on_complete(self) -> None:
        self._upstream_ended(_COMPLETED)

    def _upstream_ended(self, terminal: Any) -> None:
        with self.lock:
            if not self.move_locked(Event.PUBLISHER_ENDED):
                return  # ended already (or a second end: rule 1.7 broken, ignored)
            self._terminal = terminal
            self._send_ready_locked()

    # -- frames (reader thread) ---------------------------------------------------------
    def on_frame(self, f: F.Frame) -> None:
        """A frame from the peer; ignored in a state that takes none (Protocol.md, "Handling the
        Unexpected")."""
        if not self._state.takes_frames:
            return
        t = f.type
        if t == F.REQUEST_N:
            with self.lock:
                self._pump.grant(f.request_n)
                self.move_locked(Event.ASKED)
            self.schedule_pump()
        elif t == F.CANCEL:
            self.cancel_with(None)
        elif t == F.ERROR:
            self.cancel_with(remote_error(f, self._address, self._where, self.sent, self._unit))
        # PAYLOAD: a channel responder's own direction; ours does not carry elements.

    def on_connection_closed(self, error: BaseException) -> None:
        """The connection closed under the stream: it ends with it, unless its keeper keeps it."""
        keeper = self._keeper
        if keeper is not None and keeper.on_connection_closed():
            return
        self.cancel_with(error)

    def cancel_with(self, error: BaseException | None) -> None:
        """End the stream with ``error`` (None: cancelled by the peer) and cancel the local
        publisher; the peer is not told (it ended the stream, or cannot be reached)."""
        self.end(error)
        self._cancel_upstream()

    @property
    def upstream_error(self) -> BaseException | None:
        """The error the local publisher signalled (forwarded to the peer), if it did."""
        t = self._terminal
        return t if isinstance(t, BaseException) else None

    @property
    def ended(self) -> bool:
        return self._state.ended

    @property
    def state(self) -> StreamState:
        return self._state

    @property
    def connection(self) -> Any:
        """The connection the stream is (or was last) bound to; None before the first."""
        return self._conn

    @property
    def subscription(self) -> Subscription | None:
        """The local publisher's Subscription, once it subscribed."""
        return self._sub

    @property
    def sent(self) -> int:
        """Elements (rows for arrow) sent: the stream position of the next one."""
        return self._queue.cursor

    def stats(self) -> OutboundStreamStats:
        """What the stream holds and has done."""
        with self.lock:
            return OutboundStreamStats(**self.stats_fields_locked())

    # -- for a keeper (each *_locked call under ``lock``) -------------------------------------
    def move_locked(self, event: object) -> bool:
        """Move the state as the table's row for ``event`` says; False when it has none (no move)."""
        new = self._states.next(self._state, event)
        if new is None:
            return False
        self._state = new
        return True

    def rebind_locked(self, conn: Any, stream_id: int) -> tuple[Any, int]:
        """Bind to another connection (a resume): credit starts again at zero. Returns the old
        connection and stream id."""
        old = self._conn, self._frames.sid
        self._conn, self._frames = conn, StreamFrames(stream_id)
        self._pump.revoke()
        self.attaches += 1
        return old

    def unbind_locked(self) -> None:
        """The connection is gone (the stream is kept): no credit, nothing sent until a rebind."""
        self._conn = None
        self._pump.revoke()

    def stats_fields_locked(self) -> dict[str, Any]:
        """The fields of :class:`OutboundStreamStats` now (a keeper adds its own)."""
        queue = self._queue
        return {
            "state": self._state.shown,
            "attaches": self.attaches,
            "sent_position": queue.cursor,
            "end_position": queue.end,
            "held_records": queue.records,
            "held_bytes": queue.bytes,
            "released_records": self.released,
            "after_end": self.after_end,
        }

    def readiness(self, wait: float) -> Readiness:
        """How far rows are ready without waiting on the publisher, measured here, where it runs:
        every row it delivered; at its live edge once it ended or has owed rows for ``wait`` seconds
        (a slow link or a busy reader does not move that verdict: only the publisher does)."""
        now = time.monotonic()
        with self.lock:
            end = self._queue.end
            if self._state.ended or self._state.publisher_ended:
                return Readiness(end, True)
            left = self._pump.owing(now, wait)
        if left is None:
            return Readiness(end, False)
        return Readiness(end, True) if left <= 0 else Readiness(end, None, left)

    # -- demand (signal thread) ---------------------------------------------------------
    def run(self, fn: Callable[[], None]) -> None:
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

    def schedule_pump(self) -> None:
        """Queue a drain: send what credit allows, then ask the publisher for what it calls for."""
        with self.lock:
            if not self._state.on_connection or not self._pump.claim():
                return
        self.run(self._drain)

    def _drain(self) -> None:
        """Send what credit allows, then ask the publisher for what the credit calls for."""
        failure: str | None = None
        with self.lock:
            self._pump.draining()
            if not self._state.on_connection:
                return
            try:
                self._send_ready_locked()
            except (TypeError, ValueError, F.FrameError) as exc:
                failure = str(exc)
            k = 0 if failure is not None or self._queue.unsent else self._next_ask_locked()
            s = self._sub
            if k > 0:
                self._pump.requesting = True
        if failure is not None:
            self._fail_both(failure)
        elif k > 0 and s is not None:  # k > 0 only with a subscription
            try:
                s.request(k)  # only here, on the signal thread: serial (rule 2.7)
            finally:
                with self.lock:
                    self._pump.returned(time.monotonic())

    def _next_ask_locked(self) -> int:
        """How many elements to request from the local publisher now (0: none)."""
        if self._sub is None or self._state.publisher_ended:
            return 0
        k = self._pump.want(self._queue.room, empty=self._queue.records == 0)
        if k > 0 and self._conn.wait_drain(self._frames.sid, self.schedule_pump):
            return 0  # the socket is behind: resume when the writer has drained
        if k > 0:
            self._pump.asked_for(k, time.monotonic())
        return max(k, 0)

    def _send_ready_locked(self) -> None:
        """Send what credit allows from the queue, then the terminal signal once nothing waits."""
        if not self._state.on_connection:
            return
        conn, keeper = self._conn, self._keeper
        if keeper is None or not keeper.send_rows(conn, self._pump):
            self._send_rows_locked(conn)
        if not self._queue.unsent and self._state.sends_end:
            self._send_terminal_locked()

    def _send_rows_locked(self, conn: Any) -> None:
        """Send queued rows as PAYLOAD frames, as far as credit allows."""
        queue, pump = self._queue, self._pump
        while pump.credit > 0:
            item = queue.peek()
            if item is None:
                break
            max_rows = 1
            if self._arrow is not None:
                max_rows = min(pump.credit, self._arrow.rows_for_bytes(item, conn.limits.max_frame_bytes - 1024))
            got = queue.next_to_send(max_rows)
            assert got is not None, "the queue had an entry a moment ago, under the same lock"
            data, rows = got
            conn.send(self._frames.payload(self._arrow.encode(data) if self._arrow is not None else data))
            pump.spend(rows)

    def _send_terminal_locked(self) -> None:
        t = self._terminal
        conn = self._conn
        if t is _COMPLETED:
            conn.send(self._frames.payload(None, complete=True))
            err = None
        else:
            for frame in self._frames.error(t):
                conn.send(frame)
            err = t
        keeper = self._keeper
        self.move_locked(Event.END_SENT if keeper is None or keeper.ends_when_sent() else Event.END_SENT_HELD)
        if not self._state.ended:
            return  # still routed: it hears its connection close (and _end removes it once over)
        conn.remove_stream(self._frames.sid)
        self.error = err
        self.done.set()
        cb, self._on_end = self._on_end, None
        if cb is not None:
            conn.worker.submit(lambda: cb(err))

    # -- end ----------------------------------------------------------------------------
    def end(self, error: BaseException | None) -> None:
        """End the stream with ``error`` (None: finished), once; the publisher is not cancelled here."""
        with self.lock:
            if not self.move_locked(Event.END):
                return
            conn = self._conn
            self.released = self._queue.clear()
        if conn is not None:
            conn.remove_stream(self._frames.sid)
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
        with self.lock:
            busy = self._pump.requesting
        if busy:
            threading.Thread(target=self._cancel_now, name=f"rs-net-cancel {self._where}", daemon=True).start()
        self.run(self._cancel_now)

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
        with self.lock:
            if self._state.on_connection:  # sending only enqueues: under the lock, the frames keep their order
                for frame in self._frames.error(err):
                    self._conn.send(frame)
        self.end(err)
        self._cancel_upstream()
        report_dropped(err, "rs_spark.net: an outbound stream failed")

    def _publisher_broke(self, rule: str, what: str) -> None:
        self._fail_both(f"{what} (Reactive Streams rule {rule}); the stream was cancelled. Fix the publisher")

    @property
    def _unit(self) -> str:
        return "rows" if self._codec.counts_rows else "elements"


__all__ = ["OutboundStream", "OutboundStreamStats", "State"]
