"""The serial-signalling core: one drain loop behind every Subscription rs_spark hands out.

Any thread may call ``request``/``cancel`` (and, for push sources, offer elements) at any
time; exactly one of them at a time becomes the *drain owner* and emits. The others only
record what they want and leave (a work-in-progress counter, as in RxJava's
``QueueDrainHelper``). Because the owner loops instead of recursing, ``request(1)`` from
inside ``on_next`` never grows the stack (rules 3.2, 3.3), and because only the owner
signals, signals never overlap (rule 1.3).

Demand is the total requested so far, saturating at ``MAX_DEMAND`` (then unbounded,
rule 3.17); the owner compares it with the total it has emitted (rule 1.1).

Why this module is long: the drain loop and the three Subscriptions built directly on it (iterator,
queue, terminal); they share its invariants, and keeping them beside it keeps each rule's enforcement in one place.
"""

from __future__ import annotations

import enum
import threading
from collections import deque
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any, NamedTuple

from .demand import MAX_DEMAND, invalid_request_error
from .errors import null_element_error, report_dropped, throw_if_fatal
from .types import Subscriber


class DrainSubscription:
    """Base Subscription: demand accounting, serial drain, terminal and cancel handling.

    Subclasses implement :meth:`_emit`, called only by the drain owner, which signals
    ``on_next`` while ``self._emitted < self._requested`` and may call :meth:`_complete` or
    :meth:`_error`. :meth:`_release` frees the source (called once, by the owner).
    """

    __slots__ = (
        "_lock",
        "_wip",
        "_requested",
        "_emitted",
        "_cancelled",
        "_done",
        "_downstream",
        "_bad_request",
        "__weakref__",
    )

    def __init__(self, subscriber: Subscriber[Any]) -> None:
        self._lock = threading.Lock()
        self._wip = 0
        self._requested = 0  # total requested, saturating at MAX_DEMAND
        self._emitted = 0  # total emitted; written by the drain owner only
        self._cancelled = False
        self._done = False  # a terminal signal was sent, or cancellation was processed
        self._downstream: Subscriber[Any] | None = subscriber
        self._bad_request: object = None

    # -- Subscription -------------------------------------------------------------------
    def request(self, n: int) -> None:
        if n.__class__ is not int or n <= 0:
            if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
                # Rule 3.9: signalled through on_error, by the drain owner (rule 1.3).
                if self._bad_request is None:
                    self._bad_request = n if n is not None else "None"
                self._schedule()
                return
        with self._lock:
            r = self._requested + n
            self._requested = MAX_DEMAND if r > MAX_DEMAND else r  # rule 3.17
            if self._wip:
                self._wip += 1
                return
            self._wip = 1
        self._run()

    @property
    def is_done(self) -> bool:
        """A terminal signal was sent, or the cancellation was processed."""
        return self._done

    @property
    def is_cancelled(self) -> bool:
        """``cancel()`` was called (it may not be processed yet)."""
        return self._cancelled

    def cancel(self) -> None:
        # Rules 3.5, 3.7: idempotent, thread-safe, returns at once; cleanup is the owner's.
        self._cancelled = True
        self._schedule()

    # -- drain machinery ----------------------------------------------------------------
    def _schedule(self) -> None:
        """Ask for a drain pass; run it here unless another thread owns the drain."""
        with self._lock:
            if self._wip:
                self._wip += 1
                return
            self._wip = 1
        self._run()

    def _run(self) -> None:
        missed = 1
        while True:
            if not self._done:
                if self._cancelled:
                    self._finish_cancelled()
                elif self._bad_request is not None:
                    self._error(invalid_request_error(self._bad_request))
                else:
                    try:
                        self._emit()
                    except BaseException as exc:  # a bug in the source itself: fail the stream
                        # A fatal error (KeyboardInterrupt, SystemExit, ...) from the source or the
                        # subscriber, whichever handler in this module re-raised it, leaves this loop
                        # on the thread that drove it with _wip still set: the subscription never
                        # drains again (later request/cancel calls only count themselves in _wip).
                        # That is the intended end for a program being stopped; nothing else is safe
                        # (running more user code, or signalling on_error, would hide the stop).
                        throw_if_fatal(exc)
                        if not self._done:
                            self._error(exc)
                        else:  # the stream already ended: nobody can receive it, so it is logged
                            report_dropped(exc, f"{type(self).__name__}: raised after the stream ended")
            with self._lock:
                w = self._wip - missed
                self._wip = w
                if w == 0:
                    return
                missed = w

    def _emit(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _release(self) -> None:
        """Free the source's resources. Called once by the drain owner at the end."""

    # -- terminal signals (drain owner only) --------------------------------------------
    def _finish_cancelled(self) -> None:
        self._done = True
        self._downstream = None  # rule 3.13
        self._release()

    def _complete(self) -> None:
        s = self._downstream
        self._done = True
        self._downstream = None  # rule 1.6: terminal means cancelled; rule 3.13
        self._release()
        if s is not None:
            try:
                s.on_complete()
            except BaseException as exc:  # rule 2.13
                throw_if_fatal(exc)
                report_dropped(exc, f"{type(s).__name__}.on_complete raised (rule 2.13)")

    def _error(self, error: BaseException) -> None:
        s = self._downstream
        self._done = True
        self._downstream = None
        self._release()
        if s is not None:
            try:
                s.on_error(error)
            except BaseException as exc:  # rule 2.13
                throw_if_fatal(exc)
                report_dropped(exc, f"{type(s).__name__}.on_error raised (rule 2.13)")

    def _subscriber_failed(self, exc: BaseException, signal: str) -> None:
        """``on_next`` raised: rule 2.13 says the subscription is cancelled and the error reported."""
        s = self._downstream
        self._cancelled = True
        self._done = True
        self._downstream = None
        self._release()
        report_dropped(exc, f"{type(s).__name__}.{signal} raised; subscription cancelled (rule 2.13)")

    @property
    def outstanding(self) -> int:
        """Demand not yet fulfilled (``MAX_DEMAND`` when unbounded)."""
        r = self._requested
        return MAX_DEMAND if r == MAX_DEMAND else r - self._emitted


_CHUNK = 1024


class IteratorSubscription(DrainSubscription):
    """Emits from a Python iterator, pulling only what was requested.

    A subscriber of rs_spark's own that defines ``on_next_many(items)`` receives chunks of up
    to 1024 elements in one call (fusion, as Reactor and RxJava do between their own
    operators): same demand and ordering rules, one call instead of one per element.
    """

    __slots__ = ("_it", "_close", "_many")

    def __init__(self, subscriber: Subscriber[Any], iterator: Any, close: bool) -> None:
        super().__init__(subscriber)
        self._it = iterator
        self._close = close
        self._many: Callable[[list[Any]], object] | None = getattr(subscriber, "on_next_many", None)

    def _emit(self) -> None:
        many = self._many
        if many is not None:
            self._emit_chunks(many)
            return
        s = self._downstream
        if s is None:  # pragma: no cover - the drain calls _emit only before the end
            return
        on_next = s.on_next
        while self._emitted < self._requested and not self._cancelled:
            if self._emit_run(on_next):
                return

    def _emit_run(self, on_next: Callable[[Any], object]) -> bool:
        """Emit up to the demand known now, pulling one element at a time (``islice`` is lazy, so
        a slow iterator's elements go out as they come); True once the stream ended. The loop body
        is all the per-element work there is: the hot path of every element a Subscriber gets."""
        e = self._emitted
        k = self._requested - e
        start = e
        try:
            for item in islice(self._it, k):
                if item is None:
                    self._emitted = e
                    self._error(null_element_error(f"element #{e} (0-based) of the iterable"))
                    return True
                e += 1
                try:
                    on_next(item)
                except BaseException as exc:
                    self._emitted = e
                    throw_if_fatal(exc)
                    self._subscriber_failed(exc, "on_next")
                    return True
                if self._cancelled:
                    self._emitted = e
                    return False  # the drain loop sees the cancel and finishes
        except BaseException as exc:  # the iterator raised (a fatal one from on_next passes through)
            self._emitted = e
            throw_if_fatal(exc)
            self._error(exc)
            return True
        self._emitted = e
        if e - start < k:  # the iterator is exhausted
            self._complete()
            return True
        return False

    def _emit_chunks(self, many: Callable[[list[Any]], object]) -> None:
        nxt = self._it.__next__
        e = self._emitted
        while e < self._requested and not self._cancelled:
            k = min(self._requested - e, _CHUNK)
            chunk: list[Any] = []
            append = chunk.append
            end: BaseException | bool | None = None
            try:
                for _ in range(k):
                    append(nxt())
            except StopIteration:
                end = True
            except BaseException as exc:
                throw_if_fatal(exc)  # the elements pulled into this chunk are not delivered
                end = exc
            if None in chunk:  # rule 2.13: deliver what came before the None, then fail
                i = chunk.index(None)
                del chunk[i:]
                end = null_element_error(f"element #{e + i} (0-based) of the iterable")
            if chunk:
                e += len(chunk)
                try:
                    many(chunk)
                except BaseException as exc:
                    self._emitted = e
                    throw_if_fatal(exc)
                    self._subscriber_failed(exc, "on_next_many")
                    return
            if end is not None:
                self._emitted = e
                if isinstance(end, BaseException):
                    self._error(end)
                else:
                    self._complete()
                return
        self._emitted = e

    def _release(self) -> None:
        self._many = None
        it = self._it
        self._it = None
        if self._close and it is not None:
            close = getattr(it, "close", None)
            if close is not None:
                try:
                    close()  # generators run their finally blocks now, not at GC time
                except BaseException as exc:
                    throw_if_fatal(exc)
                    report_dropped(exc, "closing the source iterator raised")


class Overflow(enum.Enum):
    """What a full bounded queue does with one more element."""

    ERROR = "error"  # refuse it; create() then ends the stream with BufferOverflowError (nothing silently lost)
    DROP_OLDEST = "drop_oldest"  # discard the oldest queued element
    DROP_NEWEST = "drop_newest"  # discard the element being pushed
    LATEST = "latest"  # replace the newest queued element: the subscriber sees the latest value


class Enqueued(NamedTuple):
    """What :meth:`QueueSubscription.enqueue` did with one element."""

    kept: bool  # the element is queued
    dropped: Any = None  # the element the overflow policy discarded: the new one, or the one it pushed out
    overflow: bool = False  # the queue was full, so its overflow policy decided


_KEPT = Enqueued(True)


class QueueSubscription(DrainSubscription):
    """Emits elements that producers offer from any thread; terminal signals wait behind them.

    Without a ``capacity`` the queue is not bounded here: producers bound it by demand. With one,
    at most ``capacity`` elements wait, and ``overflow`` decides what one more does (see
    :class:`Overflow`), whatever the demand.
    """

    __slots__ = ("_queue", "_terminal", "_on_release", "_on_demand", "_delay_error", "_capacity", "_overflow")

    _COMPLETE = object()

    def __init__(
        self,
        subscriber: Subscriber[Any],
        on_release: Callable[[], None] | None = None,
        delay_error: bool = True,
        *,
        capacity: int | None = None,
        overflow: Overflow = Overflow.ERROR,
    ) -> None:
        super().__init__(subscriber)
        self._queue: deque[Any] = deque()
        self._terminal: Any = None  # _COMPLETE or an exception, once offered
        self._on_release = on_release
        self._on_demand: Callable[[], None] | None = None
        # True: an error waits until queued elements are delivered (nothing lost while the
        # subscriber keeps requesting). False: it cuts ahead (operators, rule 4.2).
        self._delay_error = delay_error
        if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1):
            raise ValueError(f"QueueSubscription(capacity={capacity!r}) must be an int >= 1, or None (unbounded)")
        self._capacity = capacity
        self._overflow = overflow

    @property
    def capacity(self) -> int | None:
        """Most elements that wait for demand (None: unbounded)."""
        return self._capacity

    @property
    def overflow(self) -> Overflow:
        """What :meth:`enqueue` does with an element beyond :attr:`capacity`."""
        return self._overflow

    def offer(self, item: Any) -> Enqueued:
        """Queue one element (never ``None``), within the bound, and drain."""
        done = self.enqueue(item)
        self._schedule()
        return done

    def enqueue(self, item: Any) -> Enqueued:
        """Queue one element without draining, applying the overflow policy when the queue is full.

        A producer holding its own lock (to keep its order) calls :meth:`drain` after releasing it.
        """
        capacity = self._capacity
        if capacity is None:
            self._queue.append(item)
            return _KEPT
        with self._lock:  # producers one at a time; the drain only takes from the left meanwhile
            return self._enqueue_bounded(item, capacity)

    def _enqueue_bounded(self, item: Any, capacity: int) -> Enqueued:
        q = self._queue
        if len(q) < capacity:
            q.append(item)
            return _KEPT
        policy = self._overflow
        if policy is Overflow.DROP_OLDEST:
            try:
                oldest = q.popleft()
            except IndexError:  # the drain took it meanwhile: nothing to drop
                oldest = None
            q.append(item)
            return Enqueued(True, oldest, overflow=True)
        if policy is Overflow.LATEST:
            try:
                newest = q[-1]
                q[-1] = item  # fails only if the drain emptied the queue since the read
            except IndexError:
                q.append(item)
                newest = None  # it was delivered, not dropped
            return Enqueued(True, newest, overflow=True)
        return Enqueued(False, item, overflow=True)  # DROP_NEWEST, or ERROR: the producer fails the stream

    def enqueue_all(self, items: Iterable[Any]) -> None:
        """Queue elements (never ``None``) in order without draining; for unbounded queues only."""
        if self._capacity is not None:
            raise TypeError("enqueue_all() needs an unbounded queue; enqueue() each element to apply the overflow")
        self._queue.extend(items)

    def enqueue_terminal(self, error: BaseException | None) -> None:
        """Queue ``on_complete`` (``error`` None) or ``on_error(error)`` behind the elements, without draining."""
        if self._terminal is None:
            self._terminal = self._COMPLETE if error is None else error

    def drain(self) -> None:
        """Deliver what is queued, within demand (on this thread, or the one already draining)."""
        self._schedule()

    def set_hooks(
        self, on_release: Callable[[], None] | None = None, on_demand: Callable[[], None] | None = None
    ) -> None:
        """Callbacks for the producer: ``on_release`` when the subscription ends, ``on_demand`` after a request."""
        if on_release is not None:
            self._on_release = on_release
        if on_demand is not None:
            self._on_demand = on_demand

    def offer_complete(self) -> None:
        """Queue ``on_complete`` behind the elements and drain."""
        if self._terminal is None:
            self._terminal = self._COMPLETE
        self._schedule()

    def offer_error(self, error: BaseException) -> None:
        """Queue ``on_error(error)`` (behind the elements unless ``delay_error`` is False) and drain."""
        if self._terminal is None:
            self._terminal = error
        self._schedule()

    @property
    def queued(self) -> int:
        """Elements waiting for demand."""
        return len(self._queue)

    def request(self, n: int) -> None:
        super().request(n)
        cb = self._on_demand
        if cb is not None and not self._done:
            cb()

    def _emit(self) -> None:
        s = self._downstream
        if s is None:  # pragma: no cover - the drain calls _emit only before the end
            return
        q = self._queue
        t = self._terminal
        if t is not None and t is not self._COMPLETE and not self._delay_error:
            self._error(t)
            return
        e = self._emitted
        while e < self._requested:
            if self._cancelled or not q:
                break
            item = q.popleft()
            e += 1
            try:
                s.on_next(item)
            except BaseException as exc:
                self._emitted = e
                throw_if_fatal(exc)
                self._subscriber_failed(exc, "on_next")
                return
        self._emitted = e
        t = self._terminal
        if t is not None and not q and not self._cancelled:
            if t is self._COMPLETE:
                self._complete()
            else:
                self._error(t)

    def _release(self) -> None:
        self._queue.clear()
        cb = self._on_release
        self._on_release = None
        self._on_demand = None
        if cb is not None:
            try:
                cb()
            except BaseException as exc:
                throw_if_fatal(exc)
                report_dropped(exc, "releasing the source raised")


class TerminalSubscription(DrainSubscription):
    """Signals one terminal signal (``None`` error means complete) as soon as it drains."""

    __slots__ = ("_failure",)

    def __init__(self, subscriber: Subscriber[Any], failure: BaseException | None) -> None:
        super().__init__(subscriber)
        self._failure = failure

    def _emit(self) -> None:
        if self._failure is None:
            self._complete()
        else:
            self._error(self._failure)


def subscribe_with(subscriber: Subscriber[Any], subscription: DrainSubscription, start: bool = False) -> None:
    """Hand ``subscription`` to ``subscriber`` (rule 1.9: on_subscribe first); then, if
    ``start``, drain once so that sources with something to say at once (empty, error) say it."""
    try:
        subscriber.on_subscribe(subscription)
    except BaseException as exc:  # rule 2.13: consider it cancelled and report
        throw_if_fatal(exc)  # out of subscribe(), before any more user code (e.g. the source's release) runs
        subscription.cancel()
        report_dropped(exc, f"{type(subscriber).__name__}.on_subscribe raised (rule 2.13)")
        return
    if start:
        subscription._schedule()


def check_subscriber(subscriber: object) -> None:
    """Rule 1.9: ``subscribe(None)`` raises ``TypeError`` to the caller."""
    if subscriber is None:
        raise null_element_error("the subscriber passed to subscribe()")


__all__ = [
    "DrainSubscription",
    "IteratorSubscription",
    "Overflow",
    "Enqueued",
    "QueueSubscription",
    "TerminalSubscription",
    "subscribe_with",
    "check_subscriber",
]
