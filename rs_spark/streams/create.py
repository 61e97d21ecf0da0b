"""``create``: a Publisher for push sources that cannot be slowed down.

Clock ticks, sensors and callbacks produce whenever they like; Reactive Streams forbids
sending more than was requested (rule 1.1). ``create`` puts a *bounded* buffer between the
two and makes the choice explicit: when the buffer is full, ``Overflow`` says whether to fail
the stream, drop the oldest or the newest element, or keep only the latest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .drain import Overflow, QueueSubscription, check_subscriber, subscribe_with
from .errors import BufferOverflowError, null_element_error, report_dropped, throw_if_fatal
from .pipeline import PublisherBase
from .types import Subscriber


class Emitter:
    """Handed to the ``create`` function: push elements from any thread, within the buffer bound."""

    __slots__ = ("_sub", "_lock", "_on_drop", "_closed", "_dropped", "_cancel_callbacks", "__weakref__")

    def __init__(self, sub: QueueSubscription, on_drop: Callable[[Any], None] | None) -> None:
        self._sub = sub  # bounded: its capacity and overflow policy decide what a full buffer does
        self._lock = threading.Lock()
        self._on_drop = on_drop
        self._closed = False
        self._dropped = 0
        self._cancel_callbacks: list[Callable[[], None]] = []
        sub.set_hooks(on_release=self._released)  # the cancel callbacks run when the subscription ends

    def next(self, item: Any) -> bool:
        """Push one element. Returns False if it was not kept (dropped, or stream closed)."""
        if item is None:
            raise null_element_error("the element passed to Emitter.next()")  # rule 2.13
        sub = self._sub
        with self._lock:
            if self._closed or sub.is_done:
                return False
            outcome = sub.enqueue(item)  # strict bound, whatever the demand
            if outcome.overflow:
                self._dropped += 1
            failed = outcome.overflow and sub.overflow is Overflow.ERROR
            if failed:
                self._closed = True  # nothing after the element that did not fit
        if failed:
            sub.offer_error(self._overflow_error(item))
        else:
            sub.drain()
        if outcome.dropped is not None and self._on_drop is not None:
            try:
                self._on_drop(outcome.dropped)
            except BaseException as exc:
                throw_if_fatal(exc)
                report_dropped(exc, "the create() on_drop callback raised")
        return outcome.kept

    def _overflow_error(self, item: Any) -> BufferOverflowError:
        return BufferOverflowError(
            f"create(): the buffer of {self._sub.capacity} elements is full (the subscriber takes "
            f"elements slower than they are pushed), so element {item!r} cannot be kept "
            "(overflow=Overflow.ERROR). "
            "Request more, raise buffer_size, or choose Overflow.DROP_OLDEST / DROP_NEWEST / LATEST."
        )

    def error(self, error: BaseException) -> None:
        """End the stream with ``error`` after the buffered elements."""
        if error is None:
            raise null_element_error("the error passed to Emitter.error()")
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._sub.offer_error(error)

    def complete(self) -> None:
        """End the stream after the buffered elements."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._sub.offer_complete()

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the subscription ends (cancel or terminal): unhook the source here."""
        run_now = False
        with self._lock:
            if self._sub.is_done:
                run_now = True
            else:
                self._cancel_callbacks.append(callback)
        if run_now:
            callback()

    @property
    def is_cancelled(self) -> bool:
        """True once the subscriber cancelled or the stream ended."""
        return self._sub.is_done or self._sub.is_cancelled

    @property
    def requested(self) -> int:
        """Outstanding demand not yet covered by buffered elements."""
        return max(0, self._sub.outstanding - self._sub.queued)

    @property
    def dropped(self) -> int:
        """Elements discarded (or refused) because the buffer was full."""
        return self._dropped

    def _released(self) -> None:
        with self._lock:
            self._closed = True
            callbacks, self._cancel_callbacks = self._cancel_callbacks, []
        for cb in callbacks:
            try:
                cb()
            except BaseException as exc:
                throw_if_fatal(exc)  # the callbacks after this one do not run: the program is stopping
                report_dropped(exc, "a create() on_cancel callback raised")


class _Create(PublisherBase[Any]):
    __slots__ = ("_fn", "_overflow", "_capacity", "_on_drop")

    def __init__(
        self, fn: Callable[[Emitter], Any], overflow: Overflow, capacity: int, on_drop: Callable[[Any], None] | None
    ) -> None:
        self._fn = fn
        self._overflow = overflow
        self._capacity = capacity
        self._on_drop = on_drop

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        check_subscriber(subscriber)  # rule 1.9
        sub = QueueSubscription(subscriber, capacity=self._capacity, overflow=self._overflow)
        emitter = Emitter(sub, self._on_drop)
        subscribe_with(subscriber, sub)
        try:
            self._fn(emitter)
        except BaseException as exc:
            throw_if_fatal(exc)  # out of subscribe(); the stream stays open, as the producer stopped mid-way
            emitter.error(exc)


def create(
    fn: Callable[[Emitter], Any],
    overflow: Overflow | str = Overflow.ERROR,
    *,
    buffer_size: int = 1024,
    on_drop: Callable[[Any], None] | None = None,
) -> PublisherBase[Any]:
    """A Publisher fed by ``fn(emitter)``, called once per subscriber after ``on_subscribe``.

    ``fn`` may push synchronously and return, or register callbacks / start a thread that
    push later (use ``emitter.on_cancel`` to stop them). At most ``buffer_size`` elements
    wait for demand; beyond that, ``overflow`` decides (see :class:`Overflow`), and every
    element discarded is passed to ``on_drop`` and counted in ``emitter.dropped``.
    """
    if isinstance(overflow, str):
        try:
            overflow = Overflow(overflow.lower())
        except ValueError:
            raise ValueError(
                f"create(overflow={overflow!r}) is not a strategy; use one of {[o.value for o in Overflow]}"
            ) from None
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 1:
        raise ValueError(f"create(buffer_size={buffer_size!r}) must be an int >= 1")
    return _Create(fn, overflow, buffer_size, on_drop)


__all__ = ["Overflow", "Emitter", "create"]
