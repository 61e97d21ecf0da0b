"""The delivery hub: ONE subscription to a user's Subscriber, fed by many micro-batch commits.

Spark runs a stream writer's ``commit(messages, batchId)`` in a short-lived Python process, so
the Subscriber cannot live there: subscribing it once per commit would break rule 2.12. The hub
lives in a long-lived process (the notebook, or a service started with :func:`serve_sink`), holds
the single subscription, and is served on an rs_spark.net endpoint:

- ``<name>``: a two-way channel (:meth:`rs_spark.net.Server.add_processor`). A commit sends the
  micro-batch as Arrow record batches whose schema metadata carries ``batch_id``, the batch's
  first row and its total; the hub asks the channel for the next record batch only when the
  Subscriber has consumed the previous one, so the Subscriber's ``request(n)`` paces the commit
  and the query. When every row has reached ``on_next``, the hub answers with an acknowledgement;
  only then does the commit return.
- ``<name>.control``: JSON messages from Spark's side: ``abort`` (the Subscriber gets
  ``on_error``) and ``end`` (query stopped -> ``on_complete``; failed -> ``on_error``).

Exactly once: the hub's ledger remembers the last batch and how many of its rows reached the
Subscriber. A batch already delivered is acknowledged as a duplicate without delivering it
again, and a batch cut off mid-way (commit process killed) resumes at the first row not yet
delivered when Spark retries it (its rows replay identically from the checkpoint). With
``ledger=`` the ledger is also kept in a file, so a restarted hub continues where it stopped.

No pyspark here: this package runs in any Python process (``rows`` elements are made by rs_spark.spark).

What the hub does with each record batch against the ledger is decided by the pure functions of
decide.py (their cases a table); the hub runs them under its lock and does what they say. Its
collaborators see only the calls they make (``CommitTarget``, ``ControlTarget``, ``DeliveryFeed``).

Why this module is longer than ~450 lines: :class:`DeliveryHub` is one state under one lock (the
commits in flight per partition, the queue and the ledger change together); the parts with no
lock of their own are already apart (decide.py, queued.py, subscription.py, end.py, ledger.py), and
much of what stays is the log lines and refusals that say what a decision meant.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import ssl as _ssl
import threading
import uuid
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ..streams.drain import subscribe_with
from ..streams.types import Subscriber
from .commit_channel import CommitChannel, Offer
from .control import ControlSubscriber
from .decide import Decision, MovedOn, Offered, Verdict, decide, delivered_ahead
from .elements import check_elements
from .end import EndReason, HubEnd, KeptEnd
from .errors import BatchAborted, SinkError
from .ledger import Entry, Ledger
from .queued import Pending, QueuedBatch
from .subscription import DeliverySubscription
from .wire import tag_batch

log = logging.getLogger("rs_spark.sink")

ELEMENTS = ("dicts", "rows", "tuples", "batches")


class DeliveryHub:
    """Holds one subscription to ``subscriber`` and delivers commits into it (see module doc)."""

    def __init__(
        self,
        subscriber: Subscriber[Any],
        *,
        elements: str = "dicts",
        ledger: str | None = None,
        name: str | None = None,
    ) -> None:
        if elements not in ELEMENTS:
            raise ValueError(f"elements={elements!r}: use one of {', '.join(ELEMENTS)}")
        check_elements(elements)
        if subscriber is None or not callable(getattr(subscriber, "on_subscribe", None)):
            raise TypeError(
                f"the sink needs a Reactive Streams Subscriber (on_subscribe/on_next/on_error/"
                f"on_complete), got {subscriber!r}"
            )
        self.elements = elements
        self.defer_abort = False  # True when the query's end is watched (rs_spark.write_stream)
        self.name = name or f"sink-{uuid.uuid4().hex[:10]}"
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self.ledger = Ledger(ledger)
        self._pending = Pending()
        self._channels: list[CommitChannel] = []  # the commits in flight, in the order they attached
        self._lanes: dict[int, CommitChannel] = {}  # partition -> the commit delivering it
        self._write_batch_id: int | None = None  # the number given to the active commit of a batch write
        self._end: HubEnd | None = None  # set once: why the hub takes no more batches
        self._kept: KeptEnd | None = None  # the query failed and the Subscriber waits for a restarted run
        self.delivered = 0  # elements handed to on_next in total
        self.batches_delivered = 0
        self._sub = DeliverySubscription(subscriber, self)
        self._server: Any = None
        subscribe_with(subscriber, self._sub)

    # -- serving ------------------------------------------------------------------------
    def serve(
        self, bind: str = "tcp://127.0.0.1:0", token: str | None = None, *, ssl: _ssl.SSLContext | None = None
    ) -> str:
        """Serve the hub; return the address (with ``?token=``) for the sink's ``endpoint`` option.
        ``ssl``: a server ``SSLContext`` with its certificate loaded; the hub is then served on
        ``tls://`` (as :func:`rs_spark.net.serve` does)."""
        from ..net import Server

        token = token or secrets.token_urlsafe(24)
        self._server = server = Server(bind, token=token, ssl=ssl)
        server.add_processor(self.name, lambda: CommitChannel(self))
        server.add_subscriber(f"{self.name}.control", lambda: ControlSubscriber(self))
        return f"{server.address_of(self.name)}?token={token}"

    def stop(self) -> None:
        """Stop serving (the Subscriber is not signalled: see :meth:`finish`)."""
        s, self._server = self._server, None
        if s is not None:
            s.stop()

    # -- state --------------------------------------------------------------------------
    @property
    def subscription(self) -> DeliverySubscription:
        """The one Subscription the Subscriber holds, fed by every commit."""
        return self._sub

    @property
    def outstanding(self) -> int:
        """Demand the Subscriber signalled and the hub has not yet satisfied."""
        return self._sub.outstanding

    @property
    def buffered(self) -> int:
        """Rows (or batches) received from the current commit and not yet delivered."""
        with self._lock:
            return self._pending.elements

    @property
    def end(self) -> HubEnd | None:
        """How the hub ended (None while it takes batches)."""
        return self._end

    @property
    def ended(self) -> str | None:
        """Why the hub takes no more batches (None while it does)."""
        end = self._end
        return None if end is None else end.text

    def stats(self) -> DeliveryHubStats:
        """Its counts now: what reached the Subscriber, what waits for it, and whether it ended."""
        with self._lock:
            buffered = self._pending.elements
            delivered, batches = self.delivered, self.batches_delivered
        return DeliveryHubStats(delivered, batches, self.outstanding, buffered, self.ended, self.kept)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no commit is being delivered."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._channels, timeout)

    # -- the query's side (control messages, write_stream) --------------------------------
    def finish(self, error: BaseException | None = None) -> None:
        """The query ended: ``on_complete`` (or ``on_error(error)``) after what was delivered.
        Idempotent (the first end counts); a batch in flight is cut off (its delivered rows stay
        delivered)."""
        with self._lock:
            if self._end is None:
                self._end = HubEnd(EndReason.QUERY_ENDED if error is None else EndReason.QUERY_FAILED, error)
            end = self._end
            active = self._drop_active()
            kept, self._kept = self._kept, None
        if kept is not None:
            kept.timer.cancel()
        for ch in active:
            ch.refuse(SinkError(f"sink '{self.name}': {end.text}"))
        self._sub.drain()

    def keep(self, error: BaseException, window: float, on_expiry: Callable[[], None] | None = None) -> bool:
        """The query failed with ``error`` (option ``keepSubscriberOnAbort``): the Subscriber is kept, and the
        hub served, for a run restarted from the checkpoint, whose commits go on after the ledger (Spark replays
        the failed batch under the same id). If no commit arrives within ``window`` seconds the Subscriber gets
        ``on_error(error)`` and ``on_expiry`` runs. A later :meth:`finish` ends it as usual. False (nothing
        kept) when the hub ended already, e.g. because the Subscriber cancelled."""
        with self._lock:
            if self._end is not None:
                return False
            active = self._drop_active()
            old = self._kept
            kept = self._kept = KeptEnd(error, window, self._keep_expired, on_expiry, self.name)
        if old is not None:
            old.timer.cancel()
        for ch in active:
            ch.refuse(SinkError(f"sink '{self.name}': the query failed: {error}"))
        log.info("sink '%s': the query failed; the Subscriber is kept %.0f s for a restarted run", self.name, window)
        kept.timer.start()
        return True

    def take_over_kept(self) -> None:
        """A run restarted from the checkpoint takes over the kept Subscriber (:meth:`keep`): the window no
        longer runs and delivery goes on after the ledger (the first commit of a restarted run does the
        same). Nothing to do with a network stream's resumption."""
        with self._lock:
            kept, self._kept = self._kept, None
        if kept is not None:
            kept.timer.cancel()
            log.info(
                "sink '%s': a restarted run resumes delivery after micro-batch %d", self.name, self.ledger.batch_id
            )

    @property
    def kept(self) -> bool:
        """Whether the Subscriber is kept for a restarted run (see :meth:`keep`)."""
        return self._kept is not None

    def _keep_expired(self, kept: KeptEnd) -> None:
        with self._lock:
            if self._kept is not kept:  # a restarted run took over, or the hub ended, first
                return
            self._kept = None
        log.warning(
            "sink '%s': no restarted run resumed within keepSubscriberOnAbort; the Subscriber gets on_error",
            self.name,
        )
        self.finish(kept.error)
        if kept.on_expiry is not None:
            kept.on_expiry()

    def abort(self, batch_id: int, reason: str, keep: float | None = None) -> None:
        """Spark aborted ``batch_id``: nothing of it is delivered; the Subscriber gets ``on_error``
        (or, when the query's end is watched (``defer_abort``), what the end says: a query
        stopped mid-batch completes, a failed one errors with the cause). ``keep`` (option
        ``keepSubscriberOnAbort``, seconds): the Subscriber is kept that long for a restarted run
        (:meth:`keep`) instead."""
        if (
            keep
            and not self.defer_abort
            and self.keep(BatchAborted(f"Spark aborted micro-batch {batch_id}: {reason}"), keep)
        ):
            return
        if self.defer_abort:
            with self._lock:
                active = self._drop_active()
            for ch in active:
                ch.refuse(SinkError(f"sink '{self.name}': Spark aborted micro-batch {batch_id}"))
            return
        with self._lock:
            cut = bool(self._channels)
        self.finish(
            BatchAborted(
                f"Spark aborted micro-batch {batch_id}{' while it was being delivered' if cut else ''}: {reason}"
            )
        )

    # -- commits (connection signal threads) --------------------------------------------
    def attach(self, ch: CommitChannel) -> BaseException | None:
        """A commit opened ``ch``: it is in flight (it takes its partition's lane with its first record
        batch, :meth:`offer`), or gets the refusal returned."""
        with self._lock:
            if self._end is not None:
                return self._end.refusal(self.name)
            self._channels.append(ch)
        self.take_over_kept()  # a commit while the Subscriber is kept: a run restarted from the checkpoint
        return None

    def offer(
        self,
        ch: CommitChannel,
        batch: pa.RecordBatch,
        batch_id: int,
        start: int,
        total: int,
        open_ended: bool = False,
        partition: int = 0,
    ) -> Offer:
        """A record batch of ``partition`` from ``ch``: queued for delivery, skipped, or a duplicate (see
        :class:`Offer`). ``open_ended``: the real-time sink's epoch, whose total grows as its rows arrive
        (``total`` is this batch's end); rows of it delivered before are skipped, the rest are new.
        Partitions are delivered side by side, each in order, each with its own line in the ledger."""
        with self._lock:
            if ch not in self._channels:
                return Offer.SKIP  # superseded, or its partition's commit failed
            old = self._take_lane(ch, partition)
            what = self._queue(ch, batch, batch_id, start, total, open_ended, partition)
        if old is not None:
            log.warning(
                "sink '%s': a new commit of partition %d arrived while an older one was still open; the older "
                "one (its process is gone, or its connection was lost and the commit is being tried again) is "
                "dropped and its rows not yet delivered will be resent by the new one",
                self.name,
                partition,
            )
            old.refuse(SinkError(f"sink '{self.name}': superseded by a newer commit"))
        if what is Offer.QUEUED:
            self._sub.drain()
        return what

    def _take_lane(self, ch: CommitChannel, partition: int) -> CommitChannel | None:
        """``ch`` delivers ``partition`` (under the lock); returns an older commit it supersedes."""
        holder = self._lanes.get(partition)
        if holder is ch:
            return None
        if ch.partition is not None:
            raise SinkError(
                f"sink '{self.name}': a commit sent partition {partition} after partition {ch.partition}; "
                "one channel carries one partition"
            )
        if holder is not None:
            self._drop(holder)
        self._lanes[partition] = ch
        ch.partition = partition
        if partition == 0:
            self._write_batch_id = None
        return holder

    def _queue(
        self,
        ch: CommitChannel,
        batch: pa.RecordBatch,
        batch_id: int,
        start: int,
        total: int,
        open_ended: bool,
        partition: int,
    ) -> Offer:
        """Do what :func:`.decide.decide` says of ``batch`` against its partition's ledger line (under the lock)."""
        line = self.ledger.partition(partition)
        if batch_id == -1:  # a batch write: new data, numbered after what was delivered
            batch_id, batch = self._number_write(batch, start, total)
        offered = Offered(batch_id, start, batch.num_rows, total, open_ended)
        decision = decide(line, offered, self._pending.queued_to(partition))
        if decision.verdict in (Verdict.OLDER, Verdict.DUPLICATE):
            if decision.verdict is Verdict.OLDER:
                self._warn_older(line, batch_id, partition)
            self._drop(ch)
            return Offer.DUPLICATE
        self._say_moved_on(decision.moved, line, batch_id, partition)
        decision.step.apply(line, offered)
        return self._take_rows(decision, batch, offered, partition)

    def _number_write(self, batch: pa.RecordBatch, start: int, total: int) -> tuple[int, pa.RecordBatch]:
        if self._write_batch_id is None:
            self._write_batch_id = max(self.ledger.batch_id + 1, 0)
        return self._write_batch_id, tag_batch(batch, self._write_batch_id, start, total)

    def _warn_older(self, led: Entry, batch_id: int, partition: int) -> None:
        # A restart re-runs only the last batch; an older one is a late task attempt or a query
        # whose checkpoint is behind this sink's ledger: say so, its rows are dropped.
        log.warning(
            "sink '%s': micro-batch %d%s is older than micro-batch %d, the last this sink delivered; not "
            "delivering it. If this query started from a new or different checkpointLocation than the one "
            "that wrote this sink's ledger, its first %d micro-batches are skipped: use that checkpoint, "
            "or a new ledger/endpoint",
            self.name,
            batch_id,
            f" (partition {partition})" if partition else "",
            led.batch_id,
            led.batch_id + 1,
        )

    def _say_moved_on(self, moved: MovedOn, led: Entry, batch_id: int, partition: int) -> None:
        """Log what becomes of the rows of the ledger's batch when ``batch_id`` follows it unfinished."""
        where = f" (partition {partition})" if partition else ""
        if moved is MovedOn.CARRIED:
            log.info(
                "sink '%s': epoch %d%s ran again without rows of the partition; the %d rows delivered of it "
                "before are the first of epoch %d",
                self.name,
                led.batch_id,
                where,
                led.rows,
                batch_id,
            )
        elif moved is MovedOn.CUT_OFF:
            log.warning(
                "sink '%s': micro-batch %d%s was cut off after %d of %d rows and Spark moved on to %d "
                "without retrying it",
                self.name,
                led.batch_id,
                where,
                led.rows,
                led.total,
                batch_id,
            )

    def _take_rows(self, decision: Decision, batch: pa.RecordBatch, offered: Offered, partition: int) -> Offer:
        """Queue the rows of ``batch`` not yet delivered or queued (SKIP: none is); a gap is refused."""
        first = decision.first_row
        if decision.verdict is Verdict.GAP:
            raise SinkError(
                f"sink '{self.name}': micro-batch {offered.batch_id} arrived with a gap (rows {first}.."
                f"{offered.start - 1} missing); the commit sent its record batches out of order"
            )
        if decision.verdict is Verdict.SKIP:
            return Offer.SKIP  # delivered before the commit was cut off and retried
        if first > offered.start:
            batch = batch.slice(first - offered.start)
        self._pending.append(QueuedBatch(batch, offered.batch_id, first, self.elements, partition))
        return Offer.QUEUED

    def channel_done(self, ch: CommitChannel, error: BaseException | None) -> None:
        """``ch`` sent everything (``error`` None: acknowledge once delivered) or failed."""
        with self._lock:
            if ch not in self._channels:
                return
            if error is not None:  # the commit process failed or vanished: drop what it sent
                self._drop(ch)
                self.ledger.save()
                return
        self._sub.drain()

    def _drop(self, ch: CommitChannel) -> None:
        """Let go of commit ``ch`` and what it queued (under the lock)."""
        if ch in self._channels:
            self._channels.remove(ch)
        if ch.partition is not None and self._lanes.get(ch.partition) is ch:
            del self._lanes[ch.partition]
            self._pending.drop(ch.partition)
        self._idle.notify_all()

    def _drop_active(self) -> list[CommitChannel]:
        """Let go of every commit in flight and what they queued (under the lock); return them."""
        active, self._channels = self._channels, []
        self._lanes.clear()
        self._pending.drop_all()
        self._idle.notify_all()
        return active

    # -- delivery (the subscription's drain owner) ----------------------------------------
    def head(self) -> QueuedBatch | None:
        """The record batch to deliver next, if any, from its first row not yet delivered."""
        with self._lock:
            while True:
                cur = self._pending.head()
                if cur is None or not self._skip_delivered(cur):
                    return cur

    def _skip_delivered(self, cur: QueuedBatch) -> bool:
        """Skip the rows of ``cur`` the ledger says reached the Subscriber (under the lock); True when
        none is left (it is removed). A commit that supersedes one whose rows the drain is handing
        out queues from where the ledger stood; the drain counts those rows into the ledger only
        when it returns (:meth:`took`), so the new commit's rows are trimmed here, by the drain
        itself, after it has."""
        ahead = delivered_ahead(self.ledger.partition(cur.partition), cur.batch_id, cur.start + cur.pos)
        if ahead is None:
            return False
        cur.skip_to(ahead)
        if not cur.done:
            return False
        self._pending.remove_done(cur)
        return True

    def took(self, cur: QueuedBatch, upto: int) -> None:
        """The rows of ``cur`` before ``upto`` (all of it for a ``batches`` element) reached ``on_next``."""
        with self._lock:
            self.delivered += 1 if cur.rows is None else upto - cur.pos
            cur.pos = upto
            led = self.ledger.partition(cur.partition)
            if led.batch_id == cur.batch_id:  # not when a newer commit moved the ledger on
                led.rows = cur.start + upto
            self._pending.remove_done(cur)

    def queue_empty(self) -> HubEnd | None:
        """The Subscriber took everything queued: acknowledge each commit that sent everything, and
        pull the others' next record batch. Returns the query's end when the Subscriber is owed it
        now (no commit in flight)."""
        with self._lock:
            if not self._channels:
                end = self._end
                return end if end is not None and end.owes_terminal else None
            acks = [(ch, self._acknowledgement(ch)) for ch in list(self._channels)]
        for ch, ack in acks:
            if ack is None:
                ch.pull()
            else:
                ch.answer(*ack)
        return None

    def _acknowledgement(self, ch: CommitChannel) -> tuple[str, int, int, int] | None:
        """(status, batch_id, rows, delivered) for ``ch`` once it sent everything (under the lock);
        the ledger is saved and the commit is no longer active."""
        if not ch.complete or (ch.partition is not None and self._pending.has(ch.partition)):
            return None  # its last record batch is still queued: the drain pass after it acknowledges
        self._channels.remove(ch)
        self._idle.notify_all()
        if ch.partition is None:  # it sent no record batch (an empty micro-batch or epoch)
            return ("delivered", -1, 0, 0)
        if self._lanes.get(ch.partition) is ch:
            del self._lanes[ch.partition]
        led = self.ledger.partition(ch.partition)
        sent = ch.last_sent
        if sent is not None and sent.open_ended and sent.batch_id == led.batch_id:
            led.settle(sent.end)  # this run's attempt of the epoch is over: it had sent.end rows
        self.batches_delivered += 1
        self.ledger.save()
        return ("delivered" if led.complete else "incomplete", led.batch_id, led.total, led.rows)

    # -- how the Subscriber ended the stream (from its subscription) ------------------------
    def subscriber_raised(self, error: BaseException, batch_id: int, row: int) -> None:
        """``on_next`` raised at ``row`` of ``batch_id`` (rule 2.13): the query must fail with it."""
        self._ended_by(HubEnd(EndReason.SUBSCRIBER_RAISED, error, batch_id, row))

    def subscriber_violated(self, error: BaseException, batch_id: int, row: int) -> None:
        """The Subscriber got ``on_error(error)`` for breaking a rule after ``row`` of ``batch_id``
        (ignored once the query ended: then the stream is ending anyway)."""
        self._ended_by(HubEnd(EndReason.SUBSCRIBER_VIOLATED, error, batch_id, row))

    def subscription_ended(self) -> None:
        """The subscription ended (the Subscriber cancelled, raised, broke a rule, or got its
        terminal signal): refuse the commit in flight, saying why."""
        sub = self._sub
        with self._lock:
            if self._end is None:
                self._end = HubEnd(EndReason.SUBSCRIBER_CANCELLED, None, sub.batch_id, sub.row)
            refusal = self._end.refusal(self.name)
            active = self._drop_active()
            self.ledger.save()
        for ch in active:
            ch.refuse(refusal)

    def _ended_by(self, end: HubEnd) -> None:
        with self._lock:
            if self._end is None:
                self._end = end


@dataclasses.dataclass(frozen=True, slots=True)
class DeliveryHubStats:
    """What :meth:`DeliveryHub.stats` reports."""

    delivered: int
    """Elements handed to the Subscriber's ``on_next`` in total."""
    batches_delivered: int
    """Micro-batches fully delivered and acknowledged."""
    outstanding: int
    """Demand the Subscriber signalled that the hub has not yet satisfied."""
    buffered: int
    """Rows (or batches, for ``elements="batches"``) of the current commit received and not yet delivered."""
    ended: str | None
    """Why the hub takes no more batches (None while it does)."""
    kept: bool
    """Whether the Subscriber is kept for a restarted run after a failure (:meth:`DeliveryHub.keep`)."""


__all__ = ["DeliveryHub", "DeliveryHubStats", "DeliverySubscription", "Offer", "ELEMENTS"]
