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

The hub is composed of parts with no lock of their own, run under its one lock (the commits in flight
per partition, the queue, the ledger and the end change together): in_flight.py (the commits and
what they queued), lifecycle.py (the end: the query's or the Subscriber's; a Subscriber kept after
a failure), decide.py (what each record batch, and each answer, is against the ledger: pure, its
cases a table) and ledger.py. The hub serves, runs the decisions and delivers. Its collaborators see
only the calls they make (``CommitTarget``, ``ControlTarget``, ``DeliveryFeed``, ``SubscriberEnds``).
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
from .decide import Answer, Decision, MovedOn, Offered, Verdict, answer, decide, delivered_ahead, taken
from .elements import check_elements
from .end import HubEnd
from .errors import SinkError
from .in_flight import InFlight
from .ledger import Entry, Ledger
from .lifecycle import EndLifecycle
from .queued import QueuedBatch
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
        self.name = name or f"sink-{uuid.uuid4().hex[:10]}"
        self._lock = threading.Lock()
        self.ledger = Ledger(ledger)
        self._commits = InFlight(self._lock)
        self._pending = self._commits.pending
        self._end = EndLifecycle(self.name, self._lock, self._commits, self.ledger, lambda: self._sub.drain())
        self.delivered = 0  # elements handed to on_next in total
        self.batches_delivered = 0
        self._sub = DeliverySubscription(subscriber, self, self._end)
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
        server.add_subscriber(f"{self.name}.control", lambda: ControlSubscriber(self._end))
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
        return self._end.end

    @property
    def ended(self) -> str | None:
        """Why the hub takes no more batches (None while it does)."""
        end = self._end.end
        return None if end is None else end.text

    @property
    def kept(self) -> bool:
        """Whether the Subscriber is kept for a restarted run (see :meth:`keep`)."""
        return self._end.kept

    @property
    def defer_abort(self) -> bool:
        """True when the query's end is watched (rs_spark.write_stream): an abort then waits for it."""
        return self._end.defer_abort

    @defer_abort.setter
    def defer_abort(self, value: bool) -> None:
        self._end.defer_abort = value

    def stats(self) -> DeliveryHubStats:
        """Its counts now: what reached the Subscriber, what waits for it, and whether it ended."""
        with self._lock:
            buffered = self._pending.elements
            delivered, batches = self.delivered, self.batches_delivered
        return DeliveryHubStats(delivered, batches, self.outstanding, buffered, self.ended, self.kept)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no commit is being delivered."""
        with self._lock:
            return self._commits.idle.wait_for(lambda: not self._commits, timeout)

    # -- the query's side (control messages, write_stream): the hub's end ------------------
    def finish(self, error: BaseException | None = None) -> None:
        """The query ended: ``on_complete`` (or ``on_error(error)``) after what was delivered
        (:meth:`.lifecycle.EndLifecycle.finish`)."""
        self._end.finish(error)

    def keep(self, error: BaseException, window: float, on_expiry: Callable[[], None] | None = None) -> bool:
        """The query failed: keep the Subscriber ``window`` seconds for a restarted run
        (:meth:`.lifecycle.EndLifecycle.keep`)."""
        return self._end.keep(error, window, on_expiry)

    def take_over_kept(self) -> None:
        """A restarted run takes over the kept Subscriber (:meth:`.lifecycle.EndLifecycle.take_over_kept`)."""
        self._end.take_over_kept()

    def abort(self, batch_id: int, reason: str, keep: float | None = None) -> None:
        """Spark aborted ``batch_id`` (:meth:`.lifecycle.EndLifecycle.abort`)."""
        self._end.abort(batch_id, reason, keep)

    # -- commits (connection signal threads) --------------------------------------------
    def attach(self, ch: CommitChannel) -> BaseException | None:
        """A commit opened ``ch``: it is in flight (it takes its partition's lane with its first record
        batch, :meth:`offer`), or gets the refusal returned."""
        with self._lock:
            end = self._end.end
            if end is not None:
                return end.refusal(self.name)
            self._commits.add(ch)
        self._end.take_over_kept()  # a commit while the Subscriber is kept: a run restarted from the checkpoint
        return None

    def offer(self, ch: CommitChannel, batch: pa.RecordBatch, offered: Offered, partition: int) -> Offer:
        """A record batch of ``partition`` from ``ch``: queued for delivery, skipped, or a duplicate (see
        :class:`Offer`). An open-ended batch is the real-time sink's epoch, whose total grows as its rows
        arrive; rows of it delivered before are skipped, the rest are new. Partitions are delivered side
        by side, each in order, each with its own line in the ledger."""
        with self._lock:
            if ch not in self._commits:
                return Offer.SKIP  # superseded, or its partition's commit failed
            old = self._commits.take_lane(ch, partition, self.name)
            what = self._queue(ch, batch, offered, partition)
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

    def _queue(self, ch: CommitChannel, batch: pa.RecordBatch, offered: Offered, partition: int) -> Offer:
        """Do what :func:`.decide.decide` says of ``batch`` against its partition's ledger line (under the lock)."""
        line = self.ledger.partition(partition)
        if offered.batch_id == -1:  # a batch write: new data, numbered after what was delivered
            offered, batch = self._number_write(batch, offered)
        decision = decide(line, offered, self._pending.queued_to(partition))
        if decision.verdict in (Verdict.OLDER, Verdict.DUPLICATE):
            if decision.verdict is Verdict.OLDER:
                self._warn_older(line, offered.batch_id, partition)
            self._commits.drop(ch)
            return Offer.DUPLICATE
        self._say_moved_on(decision.moved, line, offered.batch_id, partition)
        decision.step.apply(line, offered)
        return self._take_rows(decision, batch, offered, partition)

    def _number_write(self, batch: pa.RecordBatch, offered: Offered) -> tuple[Offered, pa.RecordBatch]:
        commits = self._commits
        if commits.write_batch_id is None:
            commits.write_batch_id = max(self.ledger.batch_id + 1, 0)
        bid = commits.write_batch_id
        return dataclasses.replace(offered, batch_id=bid), tag_batch(batch, bid, offered.start, offered.total)

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
            if ch not in self._commits:
                return
            if error is not None:  # the commit process failed or vanished: drop what it sent
                self._commits.drop(ch)
                self.ledger.save()
                return
        self._sub.drain()

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
            line = self.ledger.partition(cur.partition)
            rows = taken(line, cur.batch_id, cur.start + upto)
            if rows is not None:
                line.rows = rows
            self._pending.remove_done(cur)

    def queue_empty(self) -> HubEnd | None:
        """The Subscriber took everything queued: acknowledge each commit that sent everything, and
        pull the others' next record batch. Returns the query's end when the Subscriber is owed it
        now (no commit in flight)."""
        with self._lock:
            if not self._commits:
                end = self._end.end
                return end if end is not None and end.owes_terminal else None
            acks = [(ch, self._acknowledgement(ch)) for ch in list(self._commits.channels)]
        for ch, ack in acks:
            if ack is None:
                ch.pull()
            else:
                ch.answer(ack.status, ack.batch_id, ack.rows, ack.delivered)
        return None

    def _acknowledgement(self, ch: CommitChannel) -> Answer | None:
        """What ``ch`` is answered once it sent everything and its rows were taken (under the lock);
        the ledger is saved and the commit is no longer in flight."""
        if not ch.complete or self._commits.owes_rows(ch):
            return None  # its last record batch is still queued: the drain pass after it acknowledges
        self._commits.answered(ch)
        if ch.partition is None:  # it sent no record batch (an empty micro-batch or epoch)
            return answer(self.ledger, None)
        line = self.ledger.partition(ch.partition)
        ack = answer(line, ch.last_sent)
        if ack.settle is not None:
            line.settle(ack.settle)  # this run's attempt of the epoch is over: it had that many rows
        self.batches_delivered += 1
        self.ledger.save()
        return ack


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
