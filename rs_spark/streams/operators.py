"""Operators: ``map``, ``filter``, ``take``, ``batch``. Each is a conformant Processor (rule 4.1).

``map``, ``filter`` and ``take`` are pass-through stages: they hold no queue, forward demand
upstream and forward signals downstream on the upstream's thread, so they inherit the
upstream's serial signalling (rule 1.3). ``batch`` regroups elements and has a timer, so it
emits through the shared drain loop. Errors from upstream propagate at once (rule 4.2).

Use them with ``publisher.pipe(map(f), filter(p))`` (fresh Processors per subscription), or
directly as a Processor: ``pub.subscribe(proc); proc.subscribe(sub)`` (one subscriber).

Why this module is long: four small Processors and the pass-through stage they share; each fits on
a screen, and one module is where a user looks for the operator catalogue.
"""

from __future__ import annotations

import builtins
import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any

from .demand import MAX_DEMAND, add_cap, is_valid_request
from .drain import QueueSubscription, TerminalSubscription, check_subscriber, subscribe_with
from .errors import null_element_error, report_dropped, throw_if_fatal
from .pipeline import PublisherBase
from .scheduler import SchedulerLike, TimerHandle, default_scheduler
from .types import Subscriber, Subscription

_COMPLETE = object()


def _one_subscriber_error(stage: object) -> RuntimeError:
    return RuntimeError(
        f"{type(stage).__name__} is a single-subscriber Processor and already has a subscriber "
        "(rule 1.11 lets a Publisher choose this). Use publisher.pipe(op) to get a fresh stage per subscriber."
    )


class _Upstream:
    """The upstream half every stage shares: one Subscription (rule 2.5), deferred demand.

    Demand and cancellation that arrive before ``on_subscribe`` are kept and forwarded when
    the upstream Subscription arrives.
    """

    __slots__ = ("_ulock", "_upstream", "_pending", "_bad", "_ucancelled")

    def __init__(self) -> None:
        self._ulock = threading.Lock()
        self._upstream: Subscription | None = None
        self._pending = 0
        self._bad: object = None
        self._ucancelled = False

    def _set_upstream(self, s: Subscription) -> bool:
        if s is None:
            raise null_element_error("the subscription passed to on_subscribe()")  # rule 2.13
        with self._ulock:
            dup = self._upstream is not None
            if not dup:
                self._upstream = s
                n, self._pending = self._pending, 0
                bad, cancelled = self._bad, self._ucancelled
        if dup:
            s.cancel()  # rule 2.5: a second Subscription is cancelled
            return False
        if cancelled:
            s.cancel()
        elif bad is not None:
            s.request(bad)  # type: ignore[arg-type]  # the upstream answers with on_error (rule 3.9)
        elif n:
            s.request(n)
        return True

    def _request_up(self, n: int) -> None:
        up = self._upstream
        if up is None:
            with self._ulock:
                up = self._upstream
                if up is None:
                    if not self._ucancelled:
                        if is_valid_request(n):
                            self._pending = add_cap(self._pending, n)
                        elif self._bad is None:
                            self._bad = n if n is not None else "None"
                    return
        up.request(n)

    def _cancel_up(self) -> None:
        with self._ulock:
            self._ucancelled = True
            up = self._upstream
        if up is not None:
            up.cancel()


class Stage(_Upstream, PublisherBase[Any]):
    """A pass-through Processor: it is the downstream's Subscription as well."""

    __slots__ = ("_downstream", "_taken", "_ready", "_held", "_done")

    def __init__(self) -> None:
        _Upstream.__init__(self)
        self._downstream: Subscriber[Any] | None = None
        self._taken = False  # a downstream subscribed (unicast)
        self._ready = False  # downstream.on_subscribe has returned
        self._held: Any = None  # a terminal signal waiting for on_subscribe to return
        self._done = False  # a terminal signal was sent downstream (or will be, once ready)

    def fresh(self) -> Stage:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- Publisher ----------------------------------------------------------------------
    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        check_subscriber(subscriber)  # rule 1.9
        with self._ulock:
            taken = self._taken
            self._taken = True
            if not taken:
                self._downstream = subscriber
        if taken:
            subscribe_with(subscriber, TerminalSubscription(subscriber, _one_subscriber_error(self)), start=True)
            return
        try:
            subscriber.on_subscribe(self)
        except BaseException as exc:  # rule 2.13
            throw_if_fatal(exc)  # out of subscribe(), on this thread: the stage stays unready
            report_dropped(exc, f"{type(subscriber).__name__}.on_subscribe raised (rule 2.13)")
            self.cancel()
            return
        with self._ulock:
            self._ready = True
            held, self._held = self._held, None
        if held is not None:
            self._send_terminal(held)

    # -- Subscription (for the downstream) ----------------------------------------------
    def request(self, n: int) -> None:
        self._request_up(n)

    def cancel(self) -> None:
        self._downstream = None  # rule 3.13
        self._cancel_up()

    # -- Subscriber (from the upstream) -------------------------------------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        self._set_upstream(subscription)

    def on_error(self, error: BaseException) -> None:
        if error is None:
            raise null_element_error("the error passed to on_error()")  # rule 2.13
        self._terminate(error)

    def on_complete(self) -> None:
        self._terminate(_COMPLETE)

    # -- helpers ------------------------------------------------------------------------
    def _terminate(self, signal: Any) -> None:
        """Send a terminal signal downstream once, after its on_subscribe has returned."""
        with self._ulock:
            if self._done:
                return
            self._done = True
            if not self._ready:
                self._held = signal
                return
        self._send_terminal(signal)

    def _send_terminal(self, signal: Any) -> None:
        d = self._downstream
        self._downstream = None
        if d is None:
            return
        try:
            if signal is _COMPLETE:
                d.on_complete()
            else:
                d.on_error(signal)
        except BaseException as exc:  # rule 2.13
            throw_if_fatal(exc)
            report_dropped(exc, f"{type(d).__name__} raised from a terminal signal (rule 2.13)")

    def _fail(self, error: BaseException) -> None:
        """This stage's own function failed: cancel upstream, error downstream (rule 4.2 style)."""
        self._cancel_up()
        self._terminate(error)

    def _downstream_failed(self, d: Subscriber[Any], exc: BaseException) -> None:
        self._downstream = None
        self._done = True
        self._cancel_up()
        report_dropped(exc, f"{type(d).__name__}.on_next raised; subscription cancelled (rule 2.13)")


class MapProcessor(Stage):
    """Emits ``fn(x)`` for each ``x``; an exception from ``fn`` cancels upstream and errors downstream."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        super().__init__()
        if not callable(fn):
            raise TypeError(f"map() needs a callable, got {fn!r}")
        self._fn = fn

    def fresh(self) -> MapProcessor:
        return MapProcessor(self._fn)

    def fuse_iterator(self, it: Iterator[Any]) -> Iterator[Any]:
        return builtins.map(self._fn, it)

    def on_next(self, item: Any) -> None:
        if item is None:
            raise null_element_error("the element passed to on_next()")  # rule 2.13
        d = self._downstream
        if d is None or self._done:
            return
        try:
            v = self._fn(item)
        except BaseException as exc:
            throw_if_fatal(exc)  # up through the upstream's on_next to whoever drove it
            self._fail(exc)
            return
        if v is None:
            self._fail(null_element_error(f"map function {self._fn!r} returned a value that"))
            return
        try:
            d.on_next(v)
        except BaseException as exc:
            throw_if_fatal(exc)
            self._downstream_failed(d, exc)


class FilterProcessor(Stage):
    """Emits the elements for which ``predicate(x)`` is true; requests one more for each dropped."""

    __slots__ = ("_pred",)

    def __init__(self, predicate: Callable[[Any], Any]) -> None:
        super().__init__()
        if not callable(predicate):
            raise TypeError(f"filter() needs a callable, got {predicate!r}")
        self._pred = predicate

    def fresh(self) -> FilterProcessor:
        return FilterProcessor(self._pred)

    def fuse_iterator(self, it: Iterator[Any]) -> Iterator[Any]:
        return builtins.filter(self._pred, it)

    def on_next(self, item: Any) -> None:
        if item is None:
            raise null_element_error("the element passed to on_next()")  # rule 2.13
        d = self._downstream
        if d is None or self._done:
            return
        try:
            keep = self._pred(item)
        except BaseException as exc:
            throw_if_fatal(exc)
            self._fail(exc)
            return
        if keep:
            try:
                d.on_next(item)
            except BaseException as exc:
                throw_if_fatal(exc)
                self._downstream_failed(d, exc)
        else:
            up = self._upstream
            if up is not None:
                up.request(1)  # the dropped element's demand is still owed downstream


class TakeProcessor(Stage):
    """Emits the first ``limit`` elements, then cancels upstream and completes.

    It never requests more than ``limit`` elements upstream in total.
    """

    __slots__ = ("_limit", "_seen", "_asked")

    def __init__(self, limit: int) -> None:
        super().__init__()
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"take() needs a count >= 0, got {limit!r}")
        self._limit = limit
        self._seen = 0
        self._asked = 0  # total requested upstream

    def fresh(self) -> TakeProcessor:
        return TakeProcessor(self._limit)

    def fuse_iterator(self, it: Iterator[Any]) -> Iterator[Any]:
        return itertools.islice(it, self._limit)

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        if self._limit == 0 and subscriber is not None and not self._taken:
            self._cancel_up()
            self._terminate(_COMPLETE)  # held until on_subscribe returns
        super().subscribe(subscriber)

    def request(self, n: int) -> None:
        if not is_valid_request(n):
            self._request_up(n)
            return
        with self._ulock:
            give = min(n, self._limit - self._asked)
            self._asked += give
        if give > 0:
            self._request_up(give)

    def on_next(self, item: Any) -> None:
        if item is None:
            raise null_element_error("the element passed to on_next()")  # rule 2.13
        d = self._downstream
        if d is None or self._done:
            return
        self._seen += 1
        last = self._seen >= self._limit
        if last:
            self._cancel_up()
        try:
            d.on_next(item)
        except BaseException as exc:
            throw_if_fatal(exc)
            self._downstream_failed(d, exc)
            return
        if last:
            self._terminate(_COMPLETE)


class _BatchSubscription(QueueSubscription):
    __slots__ = ("_stage",)

    def __init__(self, subscriber: Subscriber[Any], stage: BatchProcessor) -> None:
        super().__init__(subscriber, on_release=stage._cancel_up, delay_error=False)
        self._stage = stage

    def request(self, n: int) -> None:
        super().request(n)
        if not self._done and is_valid_request(n):
            self._stage._replenish(flush_expired=True)


class BatchProcessor(_Upstream, PublisherBase[list[Any]]):
    """Emits lists of up to ``size`` elements; a partial list once ``timeout`` seconds pass
    after its first element (only when the downstream has demand for it) and at completion.

    Demand is counted in lists: ``request(k)`` asks upstream for at most ``k * size``
    elements, so at most that many are ever buffered.
    """

    __slots__ = (
        "_size",
        "_timeout",
        "_buf",
        "_received",
        "_asked",
        "_sub",
        "_timer",
        "_expired",
        "_taken",
        "_done",
        "_early",
        "_gen",
        "_scheduler",
    )

    def __init__(self, size: int, timeout: float | None = None, scheduler: SchedulerLike | None = None) -> None:
        super().__init__()
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise ValueError(f"batch() needs a size > 0, got {size!r}")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"batch() timeout must be > 0 seconds or None, got {timeout!r}")
        self._size = size
        self._timeout = timeout
        self._buf: list[Any] = []
        self._received = 0  # elements received from upstream
        self._asked = 0  # elements requested from upstream
        self._sub: _BatchSubscription | None = None
        self._timer: TimerHandle | None = None
        self._expired = False
        self._taken = False
        self._done = False
        self._early: Any = None  # (error, rest) of a terminal that came before the subscriber
        self._gen = 0  # timer generation: a stale timer must not flush a newer batch
        self._scheduler = scheduler  # None: the process's timer thread, looked up when first needed

    def fresh(self) -> BatchProcessor:
        return BatchProcessor(self._size, self._timeout, self._scheduler)

    # -- Publisher ----------------------------------------------------------------------
    def subscribe(self, subscriber: Subscriber[list[Any]]) -> None:
        check_subscriber(subscriber)
        with self._ulock:
            taken, self._taken = self._taken, True
        if taken:
            subscribe_with(subscriber, TerminalSubscription(subscriber, _one_subscriber_error(self)), start=True)
            return
        sub = _BatchSubscription(subscriber, self)
        with self._ulock:
            self._sub = sub
            early, self._early = self._early, None
        if early is not None:
            error, rest = early
            if rest:
                sub.enqueue(rest)
            sub.enqueue_terminal(error)
        subscribe_with(subscriber, sub, start=True)  # start: deliver a terminal that came first

    # -- Subscriber ---------------------------------------------------------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        if self._set_upstream(subscription):
            self._replenish(flush_expired=False)

    def on_next(self, item: Any) -> None:
        if item is None:
            raise null_element_error("the element passed to on_next()")  # rule 2.13
        sub = self._sub
        if self._done or sub is None:
            return
        drain = True
        with self._ulock:
            buf = self._buf
            buf.append(item)
            self._received += 1
            if len(buf) >= self._size:
                self._buf = []
                self._cancel_timer()
                sub.enqueue(buf)  # under the lock, so batches keep their order
            elif len(buf) == 1 and self._timeout is not None:
                self._gen += 1
                gen = self._gen
                scheduler = self._scheduler if self._scheduler is not None else default_scheduler()
                self._timer = scheduler.schedule(self._timeout, lambda: self._on_timeout(gen))
            else:
                drain = False  # nothing new for the downstream
        if drain:
            sub.drain()

    def on_error(self, error: BaseException) -> None:
        if error is None:
            raise null_element_error("the error passed to on_error()")
        self._finish(error)

    def on_complete(self) -> None:
        self._finish(None)

    # -- internals ----------------------------------------------------------------------
    def _finish(self, error: BaseException | None) -> None:
        with self._ulock:
            if self._done:
                return
            self._done = True
            # The upstream has terminated: never cancel it from here on (rule 2.3).
            self._upstream = None
            self._ucancelled = True
            self._cancel_timer()
            rest, self._buf = self._buf, []
            sub = self._sub
            if sub is None:
                # No downstream yet: subscribe() delivers this after on_subscribe.
                self._early = (error, rest if error is None else [])
                return
            if error is None and rest:
                sub.enqueue(rest)
        if error is None:
            sub.offer_complete()
        else:
            sub.offer_error(error)

    def _cancel_timer(self) -> None:
        t = self._timer
        if t is not None:
            t.cancel()
            self._timer = None
        self._expired = False

    def _on_timeout(self, gen: int) -> None:
        with self._ulock:
            if gen != self._gen or not self._buf:
                return
            self._expired = True
        self._replenish(flush_expired=True)

    def _replenish(self, flush_expired: bool) -> None:
        """Flush an expired partial batch if there is demand for it, then ask upstream for
        exactly what the downstream's outstanding batches still need."""
        sub = self._sub
        if sub is None:
            return
        flushed = False
        with self._ulock:
            if self._done:
                return
            want_batches = sub.outstanding - sub.queued
            if flush_expired and self._expired and self._buf and want_batches > 0:
                sub.enqueue(self._buf)
                self._buf = []
                self._cancel_timer()
                want_batches -= 1
                flushed = True
            if want_batches > 0:
                want = MAX_DEMAND if want_batches >= MAX_DEMAND // self._size else want_batches * self._size
                have = len(self._buf) + (self._asked - self._received)
                more = want - have
                if more > 0:
                    self._asked += more
                else:
                    more = 0
            else:
                more = 0
        if flushed:
            sub.drain()
        if more:
            self._request_up(more)


def map(fn: Callable[[Any], Any]) -> MapProcessor:  # noqa: A001 - mirrors the builtin on purpose
    """Operator: emit ``fn(x)`` for each element ``x``."""
    return MapProcessor(fn)


def filter(predicate: Callable[[Any], Any]) -> FilterProcessor:  # noqa: A001 - shadows the builtin on purpose: rs.filter, like rx.operators.filter
    """Operator: emit the elements for which ``predicate`` is true."""
    return FilterProcessor(predicate)


def take(limit: int) -> TakeProcessor:
    """Operator: emit the first ``limit`` elements, then cancel upstream and complete."""
    return TakeProcessor(limit)


def batch(size: int, timeout: float | None = None, *, scheduler: SchedulerLike | None = None) -> BatchProcessor:
    """Operator: emit lists of ``size`` elements (fewer after ``timeout`` seconds or at the end).

    ``scheduler`` runs the timeout (default: the process's timer thread); tests pass a manual clock."""
    return BatchProcessor(size, timeout, scheduler)


__all__ = [
    "Stage",
    "MapProcessor",
    "FilterProcessor",
    "TakeProcessor",
    "BatchProcessor",
    "map",
    "filter",
    "take",
    "batch",
]
