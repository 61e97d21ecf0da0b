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

No pyspark here: this package runs in any Python process (``rows`` elements import it when used).
"""

from __future__ import annotations

import logging
import secrets
import threading
import uuid
from collections import deque
from typing import Any

import pyarrow as pa

from ..streams.drain import DrainSubscription, subscribe_with
from ..streams.types import Subscriber
from .commit_channel import CommitChannel, Offer
from .control import ControlSubscriber
from .elements import batch_elements
from .errors import BatchAborted, SinkError, SubscriberCancelled
from .ledger import Ledger
from .wire import tag_batch

log = logging.getLogger("rs_spark.spark.sink")

ELEMENTS = ("dicts", "rows", "tuples", "batches")


class DeliverySubscription(DrainSubscription):
    """The Subscription the user's Subscriber holds. Demand counts rows (``dicts``/``rows``/
    ``tuples``) or record batches (``batches``). ``batch_id`` is the micro-batch of the element
    last delivered, ``row`` its index within that micro-batch."""

    __slots__ = ("_hub", "batch_id", "row")

    def __init__(self, subscriber: Subscriber[Any], hub: DeliveryHub) -> None:
        super().__init__(subscriber)
        self._hub = hub
        self.batch_id = -1
        self.row = -1

    def _emit(self) -> None:
        self._hub._emit(self)

    def _release(self) -> None:
        self._hub._downstream_gone(None)

    def _error(self, error: BaseException) -> None:
        if not self._hub._terminal_wanted:  # not the query's end: the Subscriber broke a rule (3.9)
            self._hub._violation = error
        super()._error(error)

    def _subscriber_failed(self, exc: BaseException, signal: str) -> None:
        # Rule 2.13: on_next raised -> the subscription is cancelled; the query must fail with it.
        self._hub._subscriber_raised = exc
        super()._subscriber_failed(exc, signal)


class _Current:
    """The record batch being delivered, with its rows converted once."""

    __slots__ = ("batch", "batch_id", "start", "rows", "pos")

    def __init__(self, batch: pa.RecordBatch, batch_id: int, start: int, elements: str) -> None:
        self.batch = batch
        self.batch_id = batch_id
        self.start = start
        self.pos = 0
        self.rows: list[Any] | None = None if elements == "batches" else batch_elements(batch, elements)


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
        if subscriber is None or not callable(getattr(subscriber, "on_subscribe", None)):
            raise TypeError(
                f"the sink needs a Reactive Streams Subscriber (on_subscribe/on_next/on_error/"
                f"on_complete), got {subscriber!r}"
            )
        self.elements = elements
        self.defer_abort = False  # True when the query's end is watched (rs_spark.write_stream)
        self.name = name or f"sink-{uuid.uuid4().hex[:10]}"
        self._lock = threading.Lock()
        self.ledger = Ledger(ledger)
        self._queue: deque[_Current] = deque()
        self._active: CommitChannel | None = None
        self._ended: str | None = None  # why the hub takes no more batches
        self._cancelled = False  # ended because the Subscriber cancelled
        self._subscriber_raised: BaseException | None = None
        self._violation: BaseException | None = None
        self._pending_terminal: BaseException | None = None
        self._terminal_wanted = False
        self.delivered = 0  # elements handed to on_next in total
        self.batches_delivered = 0
        self._idle = threading.Condition(self._lock)
        self._sub = DeliverySubscription(subscriber, self)
        self._server: Any = None
        subscribe_with(subscriber, self._sub)

    # -- serving ------------------------------------------------------------------------
    def serve(self, bind: str = "tcp://127.0.0.1:0", token: str | None = None) -> str:
        """Serve the hub; return the address (with ``?token=``) for the sink's ``endpoint`` option."""
        from ..net import Server

        token = token or secrets.token_urlsafe(24)
        self._server = server = Server(bind, token=token)
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
        return self._sub

    @property
    def outstanding(self) -> int:
        """Demand the Subscriber signalled and the hub has not yet satisfied."""
        return self._sub.outstanding

    @property
    def buffered(self) -> int:
        """Rows (or batches) received from the current commit and not yet delivered."""
        with self._lock:
            n = 0
            for c in self._queue:
                n += (len(c.rows) - c.pos) if c.rows is not None else 1
            return n

    @property
    def ended(self) -> str | None:
        """Why the hub takes no more batches (None while it does)."""
        return self._ended

    def finish(self, error: BaseException | None = None) -> None:
        """The query ended: ``on_complete`` (or ``on_error(error)``) after what was delivered.
        Idempotent; a batch in flight is cut off (its delivered rows stay delivered)."""
        with self._lock:
            if self._ended is None:
                self._ended = "the query ended" if error is None else f"the query failed: {error}"
            self._terminal_wanted = True
            if self._pending_terminal is None:
                self._pending_terminal = error
            active, self._active = self._active, None
            self._queue.clear()
            self._idle.notify_all()
        if active is not None:
            active.refuse(SinkError(f"sink '{self.name}': {self._ended}"))
        self._sub._schedule()

    def abort(self, batch_id: int, reason: str) -> None:
        """Spark aborted ``batch_id``: nothing of it is delivered; the Subscriber gets ``on_error``
        (or, when the query's end is watched (``defer_abort``), what the end says: a query
        stopped mid-batch completes, a failed one errors with the cause)."""
        if self.defer_abort:
            with self._lock:
                active, self._active = self._active, None
                self._queue.clear()
                self._idle.notify_all()
            if active is not None:
                active.refuse(SinkError(f"sink '{self.name}': Spark aborted micro-batch {batch_id}"))
            return
        with self._lock:
            cut = self._active is not None
        self.finish(
            BatchAborted(
                f"Spark aborted micro-batch {batch_id}{' while it was being delivered' if cut else ''}: {reason}"
            )
        )

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no commit is being delivered."""
        with self._lock:
            return self._idle.wait_for(lambda: self._active is None, timeout)

    # -- commits (connection signal threads) --------------------------------------------
    def attach(self, ch: CommitChannel) -> BaseException | None:
        with self._lock:
            if self._ended is not None:
                return self._refusal()
            old, self._active = self._active, ch
            self._queue.clear()
        if old is not None:
            log.warning(
                "sink '%s': a new commit arrived while an older one was still open; the older one "
                "(its process is probably gone) is dropped and its rows not yet delivered will be "
                "resent by the new one",
                self.name,
            )
            old.refuse(SinkError(f"sink '{self.name}': superseded by a newer commit"))
        return None

    def _refusal(self) -> BaseException:
        raised = self._subscriber_raised
        if raised is not None:
            return SinkError(
                f"sink '{self.name}': the Subscriber raised {type(raised).__name__}: {raised} in "
                f"on_next at micro-batch {self._sub.batch_id}, row {self._sub.row} (rule 2.13: "
                "treated as cancellation); the query stops. Fix the Subscriber, then restart "
                "the query from its checkpoint"
            )
        violation = self._violation
        if violation is not None:
            return SinkError(
                f"sink '{self.name}': the Subscriber broke the Reactive Streams spec after micro-batch "
                f"{self._sub.batch_id}, row {self._sub.row}: {violation} It got on_error and the query "
                "stops; fix the Subscriber, then restart the query from its checkpoint"
            )
        if self._cancelled:
            return SubscriberCancelled(
                f"sink '{self.name}': the Subscriber cancelled its subscription after "
                f"micro-batch {self._sub.batch_id}, row {self._sub.row}; the query stops. "
                "Restart it with a new Subscriber to continue from the checkpoint"
            )
        return SinkError(f"sink '{self.name}' takes no more batches: {self._ended}")

    def offer(self, ch: CommitChannel, batch: pa.RecordBatch, batch_id: int, start: int, total: int) -> Offer:
        """A record batch from ``ch``: queued for delivery, skipped, or a duplicate (see :class:`Offer`)."""
        led = self.ledger
        with self._lock:
            if ch is not self._active:
                return Offer.SKIP
            if batch_id == -1:  # a batch write: new data, numbered after what was delivered
                if ch.assigned is None:
                    ch.assigned = max(led.batch_id + 1, 0)
                batch_id = ch.assigned
                batch = tag_batch(batch, batch_id, start, total)
            if batch_id < led.batch_id or (batch_id == led.batch_id and led.complete and not self._queue):
                if batch_id < led.batch_id:
                    # A restart re-runs only the last batch; an older one is a late task attempt or a
                    # query whose checkpoint is behind this sink's ledger: say so, its rows are dropped.
                    log.warning(
                        "sink '%s': micro-batch %d is older than micro-batch %d, the last this sink "
                        "delivered; not delivering it. If this query started from a new or different "
                        "checkpointLocation than the one that wrote this sink's ledger, its first %d "
                        "micro-batches are skipped: use that checkpoint, or a new ledger/endpoint",
                        self.name,
                        batch_id,
                        led.batch_id,
                        led.batch_id + 1,
                    )
                self._active = None
                self._idle.notify_all()
                return Offer.DUPLICATE
            if batch_id > led.batch_id:
                if not led.complete:
                    log.warning(
                        "sink '%s': micro-batch %d was cut off after %d of %d rows and Spark moved on to "
                        "%d without retrying it",
                        self.name,
                        led.batch_id,
                        led.rows,
                        led.total,
                        batch_id,
                    )
                led.batch_id, led.rows, led.total = batch_id, 0, total
            q = self._queue
            expect = (q[-1].start + q[-1].batch.num_rows) if q else led.rows  # the next row not yet taken
            end = start + batch.num_rows
            if end <= expect:
                return Offer.SKIP  # delivered before the commit was cut off and retried
            if start > expect:
                raise SinkError(
                    f"sink '{self.name}': micro-batch {batch_id} arrived with a gap (rows {expect}.."
                    f"{start - 1} missing); the commit sent its record batches out of order"
                )
            if start < expect:
                batch, start = batch.slice(expect - start), expect
            ch.new_rows = True
            q.append(_Current(batch, batch_id, start, self.elements))
        self._sub._schedule()
        return Offer.QUEUED

    def channel_done(self, ch: CommitChannel, error: BaseException | None) -> None:
        with self._lock:
            if ch is not self._active:
                return
            if error is not None:  # the commit process failed or vanished: drop what it sent
                self._queue.clear()
                self._active = None
                self._idle.notify_all()
                self.ledger.save()
                return
            ch.complete = True
        self._sub._schedule()

    # -- delivery (drain owner only) ----------------------------------------------------
    def _emit(self, sub: DeliverySubscription) -> None:
        s = sub._downstream
        q = self._queue
        led = self.ledger
        batches = self.elements == "batches"
        while not sub.is_cancelled:
            e, r = sub._emitted, sub._requested
            if not q:
                self._queue_empty(sub)
                return
            if e >= r:
                return
            cur = q[0]
            sub.batch_id = cur.batch_id
            if batches:
                sub.row = cur.start
                sub._emitted = e + 1
                q.popleft()
                try:
                    s.on_next(cur.batch)  # type: ignore[union-attr]
                except BaseException as exc:
                    sub._subscriber_failed(exc, "on_next")  # rule 2.13; the batch counts as not taken
                    return
                led.rows = cur.start + cur.batch.num_rows
                self.delivered += 1
                continue
            rows = cur.rows
            assert rows is not None
            pos = cur.pos
            stop = min(len(rows), pos + (r - e))
            i = pos
            try:
                while i < stop and not sub.is_cancelled:  # cancel (rule 3.6) stops within the batch
                    s.on_next(rows[i])  # type: ignore[union-attr]
                    i += 1
            except BaseException as exc:
                self._took(sub, cur, i)  # rows before i were taken; the row that raised was not
                sub._subscriber_failed(exc, "on_next")  # rule 2.13
                return
            self._took(sub, cur, i)
            sub._emitted = e + (i - pos)
            if i == len(rows):
                q.popleft()

    def _took(self, sub: DeliverySubscription, cur: _Current, i: int) -> None:
        self.delivered += i - cur.pos
        cur.pos = i
        sub.row = cur.start + i - 1
        self.ledger.rows = cur.start + i

    def _queue_empty(self, sub: DeliverySubscription) -> None:
        """Nothing queued: acknowledge a finished commit, end the stream, or pull the next batch."""
        ack = None
        terminal = False
        with self._lock:
            ch = self._active
            if ch is not None and ch.complete:
                self._active = None
                led = self.ledger
                self.batches_delivered += 1
                status = "delivered" if led.complete else "incomplete"
                ack = (ch, status, led.batch_id, led.total, led.rows)
                led.save()
                self._idle.notify_all()
            elif ch is None and self._terminal_wanted and not sub.is_done:
                terminal = True
        if ack is not None:
            ack[0].answer(*ack[1:])
        elif terminal:
            err = self._pending_terminal
            if err is None:
                sub._complete()
            else:
                sub._error(err)
        elif ch is not None:
            ch.pull()

    def _downstream_gone(self, exc: BaseException | None) -> None:
        """The Subscriber cancelled, raised, or was terminated: refuse the commit in flight."""
        with self._lock:
            if self._ended is None:
                self._ended, self._cancelled = "the Subscriber cancelled its subscription", True
            active, self._active = self._active, None
            self._queue.clear()
            refusal = self._refusal()
            self._idle.notify_all()
            self.ledger.save()
        if active is not None:
            active.refuse(refusal)


__all__ = ["DeliveryHub", "DeliverySubscription", "Offer", "ELEMENTS"]
