"""The two directions of a stream across a connection.

:class:`InboundSubscription` — frames in, signals out: the Subscription a local Subscriber gets
for a remote Publisher (client side of request-stream, server side of request-channel).
``request(n)`` becomes REQUEST_N credits; PAYLOAD frames are queued and delivered by the shared
drain loop (:class:`~rs_spark.streams.drain.QueueSubscription`) on the connection's signal
thread, never more than requested (rule 1.1), never overlapping (rule 1.3).

:class:`OutboundStream` — signals in, frames out: the Subscriber a local Publisher gets for a
remote Subscriber (server side of request-stream, client side of request-channel). It asks its
publisher only for what the peer's credits allow, in chunks, so a slow remote subscriber slows
the publisher and nothing queues without bound.

Demand beyond 2^31-1: REQUEST_N carries 31 bits and credits are cumulative, so larger demand is
kept locally and sent in pieces, topped up whenever the credit in flight falls below 2^30.
Unbounded demand (2^63-1, rule 3.17) stays unbounded: it is topped up for ever.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from ..streams.demand import MAX_DEMAND, add_cap, is_valid_request
from ..streams.drain import QueueSubscription
from ..streams.errors import report_dropped
from ..streams.types import Subscriber, Subscription
from . import frames as F
from .codecs import ArrowCodec, Codec
from .errors import ConnectionLost, NetError, ProtocolError, Refused, RemoteError, error_text, parse_error_text

_COMPLETED = object()  # OutboundStream._terminal once the local publisher completed
_UNDECODABLE = object()  # _decoded's answer for data that failed to decode (already reported)
_CHUNK = 1024  # most elements requested from a local publisher per request() call
_ARROW_ASK = 16  # most RecordBatches requested from a local publisher per request() call


def remote_error(f: F.Frame, address: str | None, where: str, received: int, unit: str) -> BaseException:
    """The local exception for an ERROR frame on a stream."""
    text = bytes(f.data).decode("utf-8", "replace")
    if f.error_code in (F.REJECTED, F.INVALID):
        code = F.ERROR_NAMES.get(f.error_code, hex(f.error_code))
        return Refused(f"{where} was refused with ERROR[{code}]: {text}", address, where)
    type_name, msg = parse_error_text(text)
    return RemoteError(type_name, msg, address, where, where=f" from {where}, after {received} {unit}")


class InboundSubscription(QueueSubscription):
    """The Subscription a local Subscriber holds on a remote stream."""

    __slots__ = (
        "_wlock",
        "_conn",
        "_sid",
        "_codec",
        "_where",
        "_unsent",
        "_inflight",
        "_received",
        "_opener",
        "_wire_open",
        "_kicked",
        "_on_end",
        "_requester",
        "_address",
        "_batch_rows",
        "_granted",
        "rows_delivered",
        "_spare",
    )

    def __init__(
        self,
        subscriber: Subscriber[Any],
        codec: Codec,
        where: str,
        *,
        requester: bool,
        address: str | None = None,
        on_end: Callable[[], None] | None = None,
        batch_rows: int = 65536,
    ) -> None:
        rows = codec.counts_rows
        super().__init__(
            _RowCounter(subscriber, self) if rows else subscriber, on_release=self._released, delay_error=True
        )
        self._batch_rows = batch_rows if rows else 0
        self._granted = 0  # rows credited in total (sent or not), arrow only
        self.rows_delivered = 0
        self._spare = 0  # credit granted before any demand (see attach)
        self._wlock = threading.Lock()
        self._conn: Any = None
        self._sid = 0
        self._codec = codec
        self._where = where
        self._address = address
        self._unsent = 0  # demand not yet sent as credits
        self._inflight = 0  # credits sent and not yet used by the peer
        self._received = 0  # elements (rows for arrow) received
        self._opener: Callable[[int], object] | None = None
        self._wire_open = False
        self._kicked = False
        self._on_end = on_end
        self._requester = requester

    # -- wiring -------------------------------------------------------------------------
    def attach(self, conn: Any, stream_id: int, opener: Callable[[int], object] | None = None) -> None:
        """Bind to a connection; ``opener(n)`` sends the request frame with the first credits."""
        with self._wlock:
            self._conn, self._sid, self._opener = conn, stream_id, opener
            self._wire_open = True
            if opener is not None and not self._unsent:
                # Open at once, before any demand, so a remote publisher that fails is reported
                # without demand (rule 1.4). REQUEST_STREAM needs n >= 1: that one credit is spare
                # demand, deducted from the first request(n); at most one element waits unrequested.
                self._unsent = 1
                if self._batch_rows:
                    self._granted += 1
                else:
                    self._spare = 1
            self._top_up_locked()
        if self._done or self._cancelled:
            self._released_wire()

    def fail(self, error: BaseException) -> None:
        """End the stream locally with ``error`` (e.g. the connection could not be opened)."""
        self.enqueue_terminal(error)
        self._kick()

    # -- Subscription -------------------------------------------------------------------
    def request(self, n: int) -> None:
        super().request(n)
        if is_valid_request(n) and not self._done:
            with self._wlock:
                if self._batch_rows:
                    self._grant_rows_locked()
                else:
                    take = min(self._spare, n)
                    self._spare -= take
                    if n - take:
                        self._unsent = add_cap(self._unsent, n - take)
                self._top_up_locked()

    def _grant_rows_locked(self) -> None:
        # Arrow: the subscriber counts batches, the wire counts rows. Keep the rows granted and
        # not yet delivered at (outstanding batches) x batch_rows. Every batch delivered has at
        # most batch_rows rows (bigger ones are sliced), so while the subscriber still wants a
        # batch at least batch_rows rows are queued or in flight (no stall), and the queue never
        # exceeds that product (no unbounded buffer) however small the sender's batches are.
        out = self.outstanding
        if out == MAX_DEMAND:
            self._unsent = MAX_DEMAND
            return
        deficit = out * self._batch_rows - (self._granted - self.rows_delivered)
        if deficit > 0:
            self._granted += deficit
            self._unsent = add_cap(self._unsent, deficit)

    def _top_up_locked(self) -> None:
        # Sent under the lock: the opening frame must precede every REQUEST_N.
        conn = self._conn
        if conn is None or not self._wire_open or not self._unsent or self._inflight > F.MAX_REQUEST_N // 2:
            return
        piece = min(self._unsent, F.MAX_REQUEST_N - self._inflight)
        if self._unsent != MAX_DEMAND:  # unbounded demand stays unbounded (rule 3.17)
            self._unsent -= piece
        self._inflight += piece
        opener, self._opener = self._opener, None
        if opener is not None:
            opener(piece)
        else:
            conn.send(F.encode_request_n(self._sid, piece))

    # -- frames (reader thread) ---------------------------------------------------------
    def on_frame(self, f: F.Frame) -> None:
        t = f.type
        if t == F.PAYLOAD:
            if f.flags & F.FLAG_FOLLOWS and not f.flags & F.FLAG_COMPLETE:
                self._protocol_failure(
                    "the peer sent a fragmented payload (FOLLOWS flag); rs_spark.net "
                    "does not reassemble fragments: send payloads below the frame size limit"
                )
                return
            if f.flags & F.FLAG_NEXT:
                item = self._decoded(f.data)
                if item is _UNDECODABLE or not self._deliver(item):
                    return
            if f.flags & F.FLAG_COMPLETE:
                self._wire_closed()
                self.enqueue_terminal(None)
            self._kick()
        elif t == F.ERROR:
            self._wire_closed()
            self.enqueue_terminal(remote_error(f, self._address, self._where, self._received, self._unit))
            self._kick()
        # REQUEST_N / CANCEL from a channel's requester concern the direction we do not use.

    def accept_first(self, data: Any) -> None:
        """The element a REQUEST_CHANNEL frame carries (the rsocket-java / rsocket-js convention).
        It travels on one credit the protocol implies; the first ``request(n)`` uses that credit up,
        so the peer is then granted ``n - 1`` more, as those implementations do."""
        item = self._decoded(data)
        if item is _UNDECODABLE:
            return
        k = self._codec.count(item)
        with self._wlock:
            self._inflight += k
            if self._batch_rows:
                self._granted += k
            else:
                self._spare += 1
        if self._deliver(item):
            self._kick()

    def _decoded(self, data: Any) -> Any:
        try:
            return self._codec.decode(data)
        except Exception as exc:
            self._protocol_failure(
                f"payload after {self._received} {self._unit} could not be decoded "
                f"as {self._codec.mime}: {type(exc).__name__}: {exc}; check that both "
                "sides use the same codec"
            )
            return _UNDECODABLE

    def _deliver(self, item: Any) -> bool:
        """Count ``item`` against the credits granted and queue it; False if it broke rule 1.1."""
        k = self._codec.count(item)
        with self._wlock:
            self._inflight -= k
            self._received += k
            over = self._inflight < 0
            if not over:
                self._top_up_locked()
        if over:
            self._protocol_failure(
                f"the remote publisher sent more than was requested: {self._received} "
                f"{self._unit} received against the credits granted (rule 1.1)"
            )
            return False
        if k:
            br = self._batch_rows
            if br and k > br:  # deliver at most batch_rows rows per on_next (zero-copy slices)
                for off in range(0, k, br):
                    self._queue.append(item.slice(off, br))
            else:
                self._queue.append(item)
        return True

    def on_connection_closed(self, error: BaseException) -> None:
        with self._wlock:
            self._wire_open = False
        cls = type(error) if type(error) in (ConnectionLost, Refused, ProtocolError) else ConnectionLost
        self.enqueue_terminal(
            cls(
                f"{self._where} ended after {self._received} {self._unit}: {error}",
                getattr(error, "address", None),
                self._where,
            )
        )
        self._kick()

    @property
    def where(self) -> str:
        """Names the stream in errors (endpoint, address)."""
        return self._where

    @property
    def _unit(self) -> str:
        return "rows" if self._codec.counts_rows else "elements"

    def _protocol_failure(self, message: str) -> None:
        err = ProtocolError(f"{self._where}: {message}", self._address, self._where)
        with self._wlock:
            was_open, self._wire_open = self._wire_open, False
        if was_open:
            conn = self._conn
            conn.remove_stream(self._sid)
            conn.send(F.encode_cancel(self._sid) if self._requester else F.encode_error(self._sid, F.INVALID, message))
        self.enqueue_terminal(err)
        self._queue.clear()  # what came before the broken frame is not delivered either
        self._kick()

    def _wire_closed(self) -> None:
        with self._wlock:
            self._wire_open = False
        if self._conn is not None:
            self._conn.remove_stream(self._sid)

    def _kick(self) -> None:
        # One pending drain task at a time; the flag is cleared before draining, so an element
        # queued after the clear triggers another task and nothing is left behind.
        if not self._kicked:
            self._kicked = True
            conn = self._conn
            if conn is None:
                self._drain_now()
            else:
                conn.worker.submit(self._drain_now)

    def _drain_now(self) -> None:
        self._kicked = False
        self._schedule()

    # -- end ----------------------------------------------------------------------------
    def _released(self) -> None:
        """Cancelled or terminated locally (drain owner): tell the peer if it still listens."""
        self._released_wire()
        cb, self._on_end = self._on_end, None
        if cb is not None:
            cb()

    def _released_wire(self) -> None:
        with self._wlock:
            was_open, self._wire_open = self._wire_open, False
            self._opener = None
        conn = self._conn
        if was_open and conn is not None:
            conn.remove_stream(self._sid)
            conn.send(F.encode_cancel(self._sid))


class _RowCounter:
    """Arrow only: counts rows handed to the subscriber, for :meth:`InboundSubscription._grant_rows_locked`."""

    __slots__ = ("_s", "_inbound")

    def __init__(self, s: Subscriber[Any], inbound: InboundSubscription) -> None:
        self._s = s
        self._inbound = inbound

    def on_subscribe(self, subscription: Subscription) -> None:  # pragma: no cover - never called
        self._s.on_subscribe(subscription)

    def on_next(self, item: Any) -> None:
        self._inbound.rows_delivered += item.num_rows
        self._s.on_next(item)

    def on_error(self, error: BaseException) -> None:
        self._s.on_error(error)

    def on_complete(self) -> None:
        self._s.on_complete()


class OutboundStream:
    """The Subscriber a local Publisher gets; forwards its elements as PAYLOAD frames."""

    def __init__(
        self,
        codec: Codec,
        where: str,
        *,
        on_end: Callable[[BaseException | None], None] | None = None,
        address: str | None = None,
    ) -> None:
        self._codec = codec
        self._arrow = codec if isinstance(codec, ArrowCodec) else None  # batches are split to fit credit
        self._where = where
        self._address = address
        self._on_end = on_end
        self._lock = threading.Lock()
        self._conn: Any = None
        self._sid = 0
        self._sub: Subscription | None = None
        self._credit = 0  # what the peer allows us to send (rows for arrow)
        self._asked = 0  # requested from the local publisher, not yet received
        self._el_rows = 0  # arrow: rows of the last element received (sizes the next request)
        self._pending: deque[Any] = deque()  # arrow: batches (or their rest) waiting for credit
        self._terminal: Any = None  # a terminal signal waiting behind pending batches
        self._closed = False
        self._cancel_wanted = False
        self._pump_scheduled = False
        self._opening: tuple[bytes | None, int] | None = None  # (route metadata, n): see attach
        self.sent = 0  # elements (rows for arrow) sent
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
            self._credit = add_cap(self._credit, credit)
            if self._terminal is not None and not self._pending:
                self._send_terminal_locked()
        self._schedule_pump()

    def fail(self, error: BaseException) -> None:
        """The stream could not be opened (or broke locally): cancel the publisher and record why."""
        with self._lock:
            if self._closed:
                return
            self._pending.clear()
        self._end(error)
        self._cancel_upstream()

    # -- Subscriber (the local publisher's threads) -------------------------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None) is illegal (rule 2.13)")
        with self._lock:
            dup = self._sub is not None
            if not dup:
                self._sub = subscription
            cancel = self._cancel_wanted or self._closed
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
            if self._closed:
                return  # late elements after cancel are allowed (rule 2.8) and dropped
            self._asked -= 1
            overflow = self._asked < 0
            if not overflow:
                try:
                    more = self._send_element_locked(item)
                except (TypeError, ValueError, F.FrameError) as exc:
                    unencodable = exc
        if overflow:
            self._publisher_broke("1.1", "the publisher signalled more on_next than were requested")
        elif unencodable is not None:
            self._fail_both(
                f"{unencodable} (element after {self.sent} {self._unit} sent); serve elements the "
                f"codec '{self._codec.name}' can encode, or connect with another codec"
            )
        elif more:
            self._schedule_pump()

    def _send_element_locked(self, item: Any) -> bool:
        """Encode and send ``item`` as far as credit allows; True if the publisher should be asked for more."""
        if self._arrow is not None:
            pieces = self._arrow.pieces(item)
            self._el_rows = sum(p.num_rows for p in pieces)
            self._pending.extend(pieces)
            self._send_pending_locked(self._arrow)
            return not self._closed and not self._pending and self._credit > 0 and self._asked == 0
        self._conn.send(self._payload_frame(self._codec.encode(item)))
        self.sent += 1
        if self._credit != MAX_DEMAND:
            self._credit -= 1
        return self._asked <= _CHUNK // 2 and self._credit > self._asked

    def on_error(self, error: BaseException) -> None:
        with self._lock:
            if self._closed:
                return
            self._terminal = error if error is not None else TypeError("on_error(None) is illegal (rule 2.13)")
            if not self._pending and self._conn is not None:
                self._send_terminal_locked()

    def on_complete(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._terminal = _COMPLETED
            if not self._pending and self._conn is not None:
                self._send_terminal_locked()

    # -- frames (reader thread) ---------------------------------------------------------
    def on_frame(self, f: F.Frame) -> None:
        t = f.type
        if t == F.REQUEST_N:
            with self._lock:
                self._credit = add_cap(self._credit, f.request_n)
            self._schedule_pump()
        elif t == F.CANCEL:
            self.cancel_with(None)
        elif t == F.ERROR:
            self.cancel_with(remote_error(f, self._address, self._where, self.sent, self._unit))
        # PAYLOAD: a channel responder's own direction; ours does not carry elements.

    def on_connection_closed(self, error: BaseException) -> None:
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

    # -- demand (signal thread) ---------------------------------------------------------
    def _schedule_pump(self) -> None:
        conn = self._conn
        if conn is None or self._pump_scheduled:
            return
        self._pump_scheduled = True
        conn.worker.submit(self._pump)

    def _pump(self) -> None:
        self._pump_scheduled = False
        failure: str | None = None
        with self._lock:
            if self._closed:
                return
            try:
                if self._pending and self._arrow is not None:  # only Arrow batches wait in _pending
                    self._send_pending_locked(self._arrow)
                    if self._pending or self._closed:
                        return  # more credit is needed first, or the stream just ended
            except (TypeError, ValueError, F.FrameError) as exc:
                failure = str(exc)
            k = 0 if failure is not None else self._next_ask_locked()
            s = self._sub
        if failure is not None:
            self._fail_both(failure)
        elif k > 0 and s is not None:  # k > 0 only with a subscription
            s.request(k)  # only here, on the signal thread: serial (rule 2.7)

    def _next_ask_locked(self) -> int:
        """How many elements to request from the local publisher now (0: none)."""
        if self._sub is None or self._terminal is not None:
            return 0
        k = 0
        if self._arrow is not None:
            # Ask for as many elements as the peer's credit (in rows) covers at the last element's
            # size, 1..16: one request, and one pump hand-off, per several batches. What arrives
            # beyond the credit waits in _pending: at most that many.
            if self._asked == 0 and self._credit > 0:
                k = 1 if self._el_rows <= 0 else max(1, min(_ARROW_ASK, self._credit // self._el_rows))
        elif self._asked <= _CHUNK // 2:
            k = min(self._credit, _CHUNK) - self._asked
        if k > 0 and self._conn.wait_drain(self._sid, self._pump):
            return 0  # the socket is behind: resume when the writer has drained
        if k > 0:
            self._asked += k
        return max(k, 0)

    def _send_pending_locked(self, codec: ArrowCodec) -> None:
        pending = self._pending
        max_bytes = self._conn.limits.max_frame_bytes - 1024
        while pending and self._credit > 0:
            b = pending[0]
            rows = min(self._credit, b.num_rows, codec.rows_for_bytes(b, max_bytes))
            head, rest = codec.split(b, rows)
            self._conn.send(self._payload_frame(codec.encode(head)))
            self.sent += rows
            if self._credit != MAX_DEMAND:
                self._credit -= rows
            if rest is None:
                pending.popleft()
            else:
                pending[0] = rest
        if not pending and self._terminal is not None:
            self._send_terminal_locked()

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
        self._closed = True
        conn.remove_stream(self._sid)
        self.error = err
        self.done.set()
        cb, self._on_end = self._on_end, None
        if cb is not None:
            conn.worker.submit(lambda: cb(err))

    # -- end ----------------------------------------------------------------------------
    def _end(self, error: BaseException | None) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._pending.clear()
        if self._conn is not None:
            self._conn.remove_stream(self._sid)
        self.error = error
        self.done.set()
        cb, self._on_end = self._on_end, None
        if cb is not None:
            cb(error)

    def _cancel_upstream(self) -> None:
        self._cancel_wanted = True
        conn = self._conn

        def cancel() -> None:
            s = self._sub
            if s is not None:
                s.cancel()

        if conn is None:
            cancel()
        else:
            conn.worker.submit(cancel)  # after any request() in flight: calls stay serial (rule 2.7)

    def _fail_both(self, message: str) -> None:
        """Our side failed (e.g. an element could not be encoded): tell the peer, cancel the publisher."""
        text = f"{self._where}: {message}"
        err = NetError(text, self._address, self._where)
        conn = self._conn
        with self._lock:
            was_closed = self._closed
        if not was_closed and conn is not None:
            with self._lock:
                self._open_empty_locked()
            conn.send(F.encode_error(self._sid, F.APPLICATION_ERROR, error_text(err)))
        self._end(err)
        self._cancel_upstream()
        report_dropped(err, "rs_spark.net: an outbound stream failed")

    def _publisher_broke(self, rule: str, what: str) -> None:
        self._fail_both(f"{what} (Reactive Streams rule {rule}); the stream was cancelled. Fix the publisher")

    @property
    def _unit(self) -> str:
        return "rows" if self._codec.counts_rows else "elements"


__all__ = ["InboundSubscription", "OutboundStream", "remote_error"]
