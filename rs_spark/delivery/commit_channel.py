"""One commit's two-way channel into the hub: tagged record batches in, one acknowledgement out."""

from __future__ import annotations

import enum
import threading
from typing import Any, Protocol

import pyarrow as pa

from ..streams.drain import QueueSubscription, subscribe_with
from ..streams.types import Subscriber, Subscription
from .decide import Offered
from .errors import SinkError
from .wire import ack_batch, batch_meta, is_open_ended, partition_of


class Offer(enum.Enum):
    """What the hub did with a record batch a commit offered it."""

    QUEUED = "queued"  # taken for delivery to the Subscriber
    SKIP = "skip"  # delivered before, or from a superseded commit: the commit sends its next batch
    DUPLICATE = "duplicate"  # the whole micro-batch was delivered before: the commit stops


class CommitTarget(Protocol):
    """What a commit's channel needs of the hub (:class:`rs_spark.delivery.DeliveryHub` is one): the three
    calls a commit makes, so this module does not import the hub."""

    def attach(self, ch: CommitChannel) -> BaseException | None: ...

    def offer(self, ch: CommitChannel, batch: pa.RecordBatch, offered: Offered, partition: int) -> Offer: ...

    def channel_done(self, ch: CommitChannel, error: BaseException | None) -> None: ...


class _Answers(QueueSubscription):
    """The acknowledgement stream of one commit (one answer, then complete, or an error)."""


class CommitChannel:
    """The Processor one commit's channel talks to: batches in, one acknowledgement out."""

    receives_empty_batches = True  # an epoch without rows arrives as one batch of 0 rows naming it

    def __init__(self, hub: CommitTarget) -> None:
        self._hub = hub
        self._in: Subscription | None = None
        self._answers: _Answers | None = None
        self._pending: list[Any] = []  # an answer decided before the client subscribed to answers
        self._lock = threading.Lock()
        self._asked = False
        self._piece: tuple[int, int] = (-2, -1)
        self._piece_rows = 0
        self.complete = False  # the commit sent its last record batch
        self.last_sent: Offered | None = None  # the last record batch it sent: its batch, rows and kind
        self.partition: int | None = None  # the partition it delivers, from its first record batch (set by the hub)

    # Subscriber side (the commit's record batches)
    def on_subscribe(self, subscription: Subscription) -> None:
        self._in = subscription
        refusal = self._hub.attach(self)
        if refusal is not None:
            subscription.cancel()
            self._answer_error(refusal)
            return
        self.pull()

    def pull(self) -> None:
        with self._lock:
            if self._asked or self.complete:
                return
            self._asked = True
        s = self._in
        if s is not None:
            s.request(1)

    def on_next(self, batch: Any) -> None:
        with self._lock:
            self._asked = False
        try:
            bid, start, total = batch_meta(batch)
            # A record batch bigger than the channel's batch_rows arrives as slices that share
            # its metadata: a slice with the same (batch, start) continues the previous one.
            if (bid, start) == self._piece:
                start += self._piece_rows
            else:
                self._piece, self._piece_rows = (bid, start), 0
            self._piece_rows += batch.num_rows
            offered = Offered(bid, start, batch.num_rows, total, is_open_ended(batch))
            self.last_sent = offered
            what = self._hub.offer(self, batch, offered, partition_of(batch))
        except SinkError as exc:
            self.refuse(exc)
            return
        if what is Offer.SKIP:
            self.pull()
        elif what is Offer.DUPLICATE:
            bid, _, total = batch_meta(batch)
            s = self._in
            if s is not None:
                s.cancel()  # nothing to send: the commit stops reading its staged batches
            self.answer("duplicate", bid, total, 0)

    def on_error(self, error: BaseException) -> None:
        self._hub.channel_done(self, error)

    def on_complete(self) -> None:
        self.complete = True  # before telling the hub: it acknowledges once this is set
        self._hub.channel_done(self, None)

    # Publisher side (the answer)
    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        a = _Answers(subscriber)
        subscribe_with(subscriber, a)
        with self._lock:
            self._answers = a
            pending, self._pending = self._pending, []
        for p in pending:
            self._deliver(a, p)

    def answer(self, status: str, batch_id: int, rows: int, delivered: int) -> None:
        self._send(ack_batch(status, batch_id, rows, delivered))

    def refuse(self, error: BaseException) -> None:
        s = self._in
        if s is not None:
            s.cancel()
        self._answer_error(error)

    def _answer_error(self, error: BaseException) -> None:
        self._send(error)

    def _send(self, what: Any) -> None:
        with self._lock:
            a = self._answers
            if a is None:
                self._pending.append(what)
                return
        self._deliver(a, what)

    @staticmethod
    def _deliver(a: _Answers, what: Any) -> None:
        if isinstance(what, BaseException):
            a.offer_error(what)
        else:
            a.offer(what)
            a.offer_complete()


__all__ = ["CommitChannel", "CommitTarget", "Offer"]
