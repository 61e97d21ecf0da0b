"""Frames in, signals out: the Subscription a local Subscriber gets for a remote Publisher.

:class:`InboundSubscription` is used on the client side of request-stream and the server side of
request-channel. ``request(n)`` becomes REQUEST_N credits; PAYLOAD frames are queued and
delivered by the shared drain loop (:class:`~rs_spark.streams.drain.QueueSubscription`), never
more than requested (rule 1.1), never overlapping (rule 1.3), on the connection's signal thread or,
while the Subscriber is quick, on the reader thread itself (:mod:`.drain_place`).
The other direction (signals in, frames out) is :mod:`.outbound`.

Demand beyond 2^31-1: REQUEST_N carries 31 bits and credits are cumulative, so larger demand is
kept locally and sent in pieces, topped up whenever the credit in flight falls below 2^30.
Unbounded demand (2^63-1, rule 3.17) stays unbounded: it is topped up for ever.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ...streams.demand import MAX_DEMAND, add_cap, is_valid_request
from ...streams.drain import QueueSubscription
from ...streams.types import Subscriber, Subscription
from . import frames as F
from .codecs import Codec
from .drain_place import DrainPlace, Place, after_drain
from .errors import ConnectionLost, ProtocolError, Refused, remote_error

_UNDECODABLE = object()  # _decoded's answer for data that failed to decode (already reported)


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
        "_place",
        "_on_end",
        "_requester",
        "_address",
        "_batch_rows",
        "_granted",
        "rows_delivered",
        "_spare",
        "payload_bytes",
        "_keep_empty",
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
        # A record batch of 0 rows carries nothing and is dropped, unless the Subscriber reads the
        # batches' metadata (the delivery hub: a real-time task's epoch without rows names itself so).
        self._keep_empty = rows and bool(getattr(subscriber, "receives_empty_batches", False))
        self._granted = 0  # rows credited in total (sent or not), arrow only
        self.rows_delivered = 0
        self.payload_bytes = 0  # bytes of element payloads received (what a reader moves through itself)
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
        self._place = DrainPlace()  # replaced by the thread that drained last: a stale read only delays a move
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

    def _count_received_locked(self, k: int) -> bool:
        """Count ``k`` elements against the credits granted (under ``_wlock``) and top the credits
        up; True if they were more than requested (rule 1.1), the caller then fails the stream."""
        self._inflight -= k
        self._received += k
        if self._inflight < 0:
            return True
        self._top_up_locked()
        return False

    def _top_up_locked(self) -> None:
        # Sent under the lock: the opening frame must precede every REQUEST_N.
        conn = self._conn
        if conn is None or not self._wire_open or not self._unsent or self._inflight > F.MAX_REQUEST_N // 2:
            return
        if self._batch_rows and self._unsent != MAX_DEMAND and self._inflight > self._unsent:
            # Rows: top up once half the window is used (as the JVM's reader does), not after every
            # batch; a Subscriber taking one batch at a time would otherwise cost a REQUEST_N per row
            # sent one row a payload (a real-time sink at 10,000 rows/s: 10,000 frames/s back).
            return
        piece = min(self._unsent, F.MAX_REQUEST_N - self._inflight)
        if self._unsent != MAX_DEMAND:  # unbounded demand stays unbounded (rule 3.17)
            self._unsent -= piece
        self._inflight += piece
        opener, self._opener = self._opener, None
        if opener is not None:
            opener(piece)
        else:
            conn.reply(F.encode_request_n(self._sid, piece))  # for the peer's payloads: a reply

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
                self.payload_bytes += len(f.data)
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
        k = self.credit_cost(self._codec.count(item))
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

    def credit_cost(self, rows: int) -> int:
        """The credits an element of ``rows`` rows takes: its rows, and one for a kept empty batch
        (so a peer cannot queue them without bound; given back when it is delivered)."""
        return rows or int(self._keep_empty)

    def _deliver(self, item: Any) -> bool:
        """Count ``item`` against the credits granted and queue it; False if it broke rule 1.1."""
        k = self._codec.count(item)
        with self._wlock:
            if not self._wire_open:
                return False  # read off a connection after it closed: the stream already ended here (or resumes)
            over = self._count_received_locked(self.credit_cost(k))
        if over:
            self._protocol_failure(
                f"the remote publisher sent more than was requested: {self._received} "
                f"{self._unit} received against the credits granted (rule 1.1)"
            )
            return False
        if k or self._keep_empty:
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
        cls = type(error) if isinstance(error, (ConnectionLost, Refused, ProtocolError)) else ConnectionLost
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
            conn.reply(F.encode_cancel(self._sid) if self._requester else F.encode_error(self._sid, F.INVALID, message))
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
            elif self._place.place is Place.READER:
                self._drain_timed()
            else:
                conn.worker.submit(self._drain_timed)

    def _drain_timed(self) -> None:
        start = time.monotonic()
        self._drain_now()
        self._place = after_drain(self._place, time.monotonic() - start)

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
        self._inbound.rows_delivered += self._inbound.credit_cost(item.num_rows)
        self._s.on_next(item)

    def on_error(self, error: BaseException) -> None:
        self._s.on_error(error)

    def on_complete(self) -> None:
        self._s.on_complete()


__all__ = ["InboundSubscription"]
