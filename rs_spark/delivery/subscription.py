"""The one Subscription a sink's Subscriber holds: delivers what the delivery hub queued, within demand."""

from __future__ import annotations

from typing import Any, Protocol

from ..streams.drain import DrainSubscription
from ..streams.errors import throw_if_fatal
from ..streams.types import Subscriber
from .end import HubEnd
from .queued import QueuedBatch


class DeliveryFeed(Protocol):
    """What the Subscription's drain needs of the hub (:class:`rs_spark.delivery.DeliveryHub` is one): its
    three calls, so this module does not import the hub."""

    def head(self) -> QueuedBatch | None: ...

    def took(self, cur: QueuedBatch, upto: int) -> None: ...

    def queue_empty(self) -> HubEnd | None: ...


class SubscriberEnds(Protocol):
    """Where the three ways the Subscriber ends the stream go (the hub's end,
    :class:`rs_spark.delivery.lifecycle.EndLifecycle`)."""

    def subscriber_raised(self, error: BaseException, batch_id: int, row: int) -> None: ...

    def subscriber_violated(self, error: BaseException, batch_id: int, row: int) -> None: ...

    def subscription_ended(self, batch_id: int, row: int) -> None: ...


class DeliverySubscription(DrainSubscription):
    """The Subscription the user's Subscriber holds. Demand counts rows (``dicts``/``rows``/
    ``tuples``) or record batches (``batches``). ``batch_id`` is the micro-batch of the element
    last delivered, ``row`` its index within that micro-batch.

    Its drain loop takes record batches from the hub (:meth:`DeliveryHub.head`), delivers them
    within demand and reports what was taken (:meth:`DeliveryHub.took`); how the Subscriber ends
    the stream reaches the hub's end (``ends``: :class:`SubscriberEnds`)."""

    __slots__ = ("_hub", "_ends", "batch_id", "row")

    def __init__(self, subscriber: Subscriber[Any], hub: DeliveryFeed, ends: SubscriberEnds) -> None:
        super().__init__(subscriber)
        self._hub = hub
        self._ends = ends
        self.batch_id = -1
        self.row = -1

    def drain(self) -> None:
        """Deliver what the hub holds, within demand (here, or on the thread already draining)."""
        self._schedule()

    # -- the drain loop (drain owner only) ----------------------------------------------
    def _emit(self) -> None:
        s = self._downstream
        if s is None:  # the stream ended: nothing is delivered any more
            return
        hub = self._hub
        while not self._cancelled:
            cur = hub.head()
            if cur is None:  # the Subscriber took everything queued: acknowledge, pull or end
                end = hub.queue_empty()
                if end is not None:
                    self._signal_end(end)
                return
            if self._emitted >= self._requested:
                return
            self.batch_id = cur.batch_id
            rows = cur.rows
            delivered = self._emit_batch(s, cur) if rows is None else self._emit_rows(s, cur, rows)
            if not delivered:
                return

    def _emit_batch(self, s: Subscriber[Any], cur: QueuedBatch) -> bool:
        """Deliver ``cur`` as one element (``batches``); False when on_next raised."""
        self.row = cur.start
        self._emitted += 1
        try:
            s.on_next(cur.batch)
        except BaseException as exc:
            throw_if_fatal(exc)  # Ctrl-C / exit stop the drain here; the batch counts as not taken
            self._on_next_raised(exc, cur.batch_id, cur.start)
            return False
        self._hub.took(cur, cur.batch.num_rows)
        return True

    def _emit_rows(self, s: Subscriber[Any], cur: QueuedBatch, rows: list[Any]) -> bool:
        """Deliver ``cur``'s rows within demand, stopping at a cancel (rule 3.6) or when the hub
        drops the batch; False when on_next raised."""
        pos = i = cur.pos
        stop = min(len(rows), pos + (self._requested - self._emitted))
        try:
            while i < stop and not self._cancelled and not cur.dropped:
                s.on_next(rows[i])
                i += 1
        except BaseException as exc:
            self._took_rows(cur, pos, i)  # rows before i were taken; the row that raised was not
            throw_if_fatal(exc)  # Ctrl-C / exit stop the drain here, with the ledger up to date
            self._on_next_raised(exc, cur.batch_id, cur.start + i)
            return False
        self._took_rows(cur, pos, i)
        return True

    def _took_rows(self, cur: QueuedBatch, pos: int, i: int) -> None:
        self._emitted += i - pos
        self.row = cur.start + i - 1
        self._hub.took(cur, i)

    def _on_next_raised(self, exc: BaseException, batch_id: int, row: int) -> None:
        # Rule 2.13: on_next raised -> the subscription is cancelled; the query must fail with it.
        self._ends.subscriber_raised(exc, batch_id, row)
        self._subscriber_failed(exc, "on_next")

    def _signal_end(self, end: HubEnd) -> None:
        """The query's end, owed to the Subscriber now that everything queued was delivered."""
        if end.error is None:
            self._complete()
        else:
            super()._error(end.error)  # the query's failure, not a rule the Subscriber broke

    # -- DrainSubscription hooks ----------------------------------------------------------
    def _error(self, error: BaseException) -> None:
        # The drain signals on_error itself only when the Subscriber broke a rule (request(n <= 0),
        # rule 3.9) or delivery failed: the hub refuses the next commit with it.
        self._ends.subscriber_violated(error, self.batch_id, self.row)
        super()._error(error)

    def _release(self) -> None:
        self._ends.subscription_ended(self.batch_id, self.row)


__all__ = ["DeliveryFeed", "DeliverySubscription", "SubscriberEnds"]
