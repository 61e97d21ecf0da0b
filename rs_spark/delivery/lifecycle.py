"""The delivery hub's end: the query's (finish, an abort, a failure that keeps the Subscriber) or the
Subscriber's own (it cancelled, raised in ``on_next``, broke a rule). The first end counts; it drops the
commits in flight and every later commit is refused with it (:mod:`.end` holds what an end is).

It shares the hub's lock: a commit attaches only while no end is set, and an end drops every commit in
flight, so the two must be one state. The control endpoint talks to it directly (:class:`ControlTarget`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from .commit_channel import CommitChannel
from .end import EndReason, HubEnd, KeptEnd
from .errors import BatchAborted, SinkError
from .in_flight import InFlight
from .ledger import Ledger

log = logging.getLogger("rs_spark.sink")


class EndLifecycle:
    """How and when the hub of sink ``name`` ends; ``drain`` runs the Subscription's drain (which signals
    the end the Subscriber is owed once what was queued is delivered)."""

    def __init__(
        self, name: str, lock: threading.Lock, commits: InFlight, ledger: Ledger, drain: Callable[[], None]
    ) -> None:
        self.name = name
        self.defer_abort = False  # True when the query's end is watched (rs_spark.write_stream)
        self.end: HubEnd | None = None  # set once: why the hub takes no more batches
        self._kept: KeptEnd | None = None  # the query failed and the Subscriber waits for a restarted run
        self._lock = lock
        self._commits = commits
        self._ledger = ledger
        self._drain = drain

    @property
    def kept(self) -> bool:
        """Whether the Subscriber is kept for a restarted run (see :meth:`keep`)."""
        return self._kept is not None

    # -- the query's side (control messages, write_stream) --------------------------------
    def finish(self, error: BaseException | None = None) -> None:
        """The query ended: ``on_complete`` (or ``on_error(error)``) after what was delivered.
        Idempotent (the first end counts); a batch in flight is cut off (its delivered rows stay
        delivered)."""
        with self._lock:
            if self.end is None:
                self.end = HubEnd(EndReason.QUERY_ENDED if error is None else EndReason.QUERY_FAILED, error)
            end = self.end
            active = self._commits.drop_all()
            kept, self._kept = self._kept, None
        if kept is not None:
            kept.timer.cancel()
        self._refuse(active, end.text)
        self._drain()

    def keep(self, error: BaseException, window: float, on_expiry: Callable[[], None] | None = None) -> bool:
        """The query failed with ``error`` (option ``keepSubscriberOnAbort``): the Subscriber is kept, and the
        hub served, for a run restarted from the checkpoint, whose commits go on after the ledger (Spark replays
        the failed batch under the same id). If no commit arrives within ``window`` seconds the Subscriber gets
        ``on_error(error)`` and ``on_expiry`` runs. A later :meth:`finish` ends it as usual. False (nothing
        kept) when the hub ended already, e.g. because the Subscriber cancelled."""
        with self._lock:
            if self.end is not None:
                return False
            active = self._commits.drop_all()
            old = self._kept
            kept = self._kept = KeptEnd(error, window, self._keep_expired, on_expiry, self.name)
        if old is not None:
            old.timer.cancel()
        self._refuse(active, f"the query failed: {error}")
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
                "sink '%s': a restarted run resumes delivery after micro-batch %d", self.name, self._ledger.batch_id
            )

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
        if self.defer_abort:
            with self._lock:
                active = self._commits.drop_all()
            self._refuse(active, f"Spark aborted micro-batch {batch_id}")
            return
        if keep and self.keep(BatchAborted(f"Spark aborted micro-batch {batch_id}: {reason}"), keep):
            return
        with self._lock:
            cut = " while it was being delivered" if self._commits else ""
        self.finish(BatchAborted(f"Spark aborted micro-batch {batch_id}{cut}: {reason}"))

    def _refuse(self, active: list[CommitChannel], why: str) -> None:
        for ch in active:
            ch.refuse(SinkError(f"sink '{self.name}': {why}"))

    # -- how the Subscriber ended the stream (from its subscription) ------------------------
    def subscriber_raised(self, error: BaseException, batch_id: int, row: int) -> None:
        """``on_next`` raised at ``row`` of ``batch_id`` (rule 2.13): the query must fail with it."""
        self._ended_by(HubEnd(EndReason.SUBSCRIBER_RAISED, error, batch_id, row))

    def subscriber_violated(self, error: BaseException, batch_id: int, row: int) -> None:
        """The Subscriber got ``on_error(error)`` for breaking a rule after ``row`` of ``batch_id``
        (ignored once the query ended: then the stream is ending anyway)."""
        self._ended_by(HubEnd(EndReason.SUBSCRIBER_VIOLATED, error, batch_id, row))

    def subscription_ended(self, batch_id: int, row: int) -> None:
        """The subscription ended after ``row`` of ``batch_id`` (the Subscriber cancelled, raised, broke a
        rule, or got its terminal signal): refuse the commits in flight, saying why."""
        with self._lock:
            if self.end is None:
                self.end = HubEnd(EndReason.SUBSCRIBER_CANCELLED, None, batch_id, row)
            refusal = self.end.refusal(self.name)
            active = self._commits.drop_all()
            self._ledger.save()
        for ch in active:
            ch.refuse(refusal)

    def _ended_by(self, end: HubEnd) -> None:
        with self._lock:
            if self.end is None:
                self.end = end


__all__ = ["EndLifecycle"]
