"""Publishers made from values, iterables and factories: ``from_iterable``, ``range``,
``just``, ``empty``, ``error``, ``defer``.

Every one of them is cold: each ``subscribe`` gets its own Subscription that pulls only what
was requested (rule 1.1), through the shared drain loop in :mod:`rs_spark.streams.drain`.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from .drain import IteratorSubscription, TerminalSubscription, check_subscriber, subscribe_with
from .errors import null_element_error, throw_if_fatal
from .pipeline import PublisherBase
from .types import Publisher, Subscriber

T = TypeVar("T")


class IterablePublisher(PublisherBase[T]):
    """Emits what a fresh iterator yields, one iterator per subscription.

    ``make_iterator`` is called once per subscriber. Fusable operators (``map``, ``filter``,
    ``take``) piped onto it are composed into the iterator itself, so the chain runs in one
    drain loop with no per-stage signalling.
    """

    __slots__ = ("_make_iterator", "_close", "_describe")

    def __init__(
        self, make_iterator: Callable[[], Iterator[T]], *, close: bool = True, describe: str = "iterable"
    ) -> None:
        self._make_iterator = make_iterator
        self._close = close
        self._describe = describe

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)  # rule 1.9
        try:
            it = self._make_iterator()
        except BaseException as exc:  # rule 1.9: refuse through on_error, after on_subscribe
            throw_if_fatal(exc)  # out of subscribe(), before the subscriber hears of it
            subscribe_with(subscriber, TerminalSubscription(subscriber, exc), start=True)
            return
        subscribe_with(subscriber, IteratorSubscription(subscriber, it, self._close))

    def _fuse(self, wrap: Callable[[Iterator[Any]], Iterator[Any]]) -> IterablePublisher[Any]:
        make = self._make_iterator
        return IterablePublisher(lambda: wrap(make()), close=self._close, describe=self._describe)

    def __repr__(self) -> str:
        return f"<IterablePublisher {self._describe}>"


class SequencePublisher(IterablePublisher[T]):
    """Emits a sequence (list, tuple, range): every subscriber from the start, or from any
    position with ``subscribe_at`` (:class:`~rs_spark.streams.types.Replayable`), so the
    ``reactive`` source can resume it where Spark last committed. Operators piped onto it give an
    ordinary IterablePublisher (a ``filter`` would change what a position means)."""

    __slots__ = ("_seq",)

    def __init__(self, seq: Sequence[T], describe: str) -> None:
        super().__init__(lambda: iter(seq), describe=describe)
        self._seq = seq

    def subscribe_at(self, subscriber: Subscriber[T], position: int) -> None:
        """Subscribe with element ``position`` (0-based) first; past the end it completes at once."""
        check_subscriber(subscriber)  # rule 1.9
        if isinstance(position, bool) or not isinstance(position, int) or position < 0:
            raise ValueError(f"subscribe_at needs a position >= 0, got {position!r}")
        seq = self._seq
        it = iter(seq[position:]) if isinstance(seq, builtins.range) else _from(seq, position)
        subscribe_with(subscriber, IteratorSubscription(subscriber, it, True))


def _from(seq: Sequence[T], position: int) -> Iterator[T]:
    for i in builtins.range(position, len(seq)):  # no copy of the sequence's tail
        yield seq[i]


class _OneShot:
    """Hands out a single iterator once; later subscribers are refused (rule 1.9 via on_error)."""

    __slots__ = ("_it", "_lock")

    def __init__(self, it: Iterator[Any]) -> None:
        self._it: Iterator[Any] | None = it
        self._lock = threading.Lock()

    def __call__(self) -> Iterator[Any]:
        with self._lock:
            it, self._it = self._it, None
        if it is None:
            raise RuntimeError(
                "this publisher wraps a one-shot iterator (e.g. a generator) that was already "
                "subscribed to; Reactive Streams publishers may be subscribed many times (rule 1.10), "
                "so use defer(lambda: make_generator()) or from_iterable(a_list) to get a fresh one per subscriber"
            )
        return it


def from_iterable(iterable: Iterable[T]) -> IterablePublisher[T]:
    """A Publisher of the elements of ``iterable``.

    Re-iterable collections (lists, tuples, ranges, dicts...) serve every subscriber from the
    start. An iterator or generator can be consumed once: a second subscriber gets
    ``on_error``. A generator is closed (its ``finally`` runs) when the subscription is
    cancelled. ``None`` elements end the stream with ``TypeError`` (rule 2.13).
    """
    if iterable is None:
        raise null_element_error("the iterable passed to from_iterable()")
    if iter(iterable) is iterable:  # an iterator: single use
        return IterablePublisher(_OneShot(iterable), describe=type(iterable).__name__)
    if isinstance(iterable, Sequence) and not isinstance(iterable, (str, bytes, bytearray)):
        return SequencePublisher(iterable, describe=type(iterable).__name__)
    return IterablePublisher(lambda: iter(iterable), describe=type(iterable).__name__)


def range_(start: int, count: int | None = None) -> IterablePublisher[int]:
    """``range_(n)`` emits 0..n-1; ``range_(start, count)`` emits ``count`` ints from ``start``."""
    if count is None:
        start, count = 0, start
    if count < 0:
        raise ValueError(f"range_ count must be >= 0, got {count}")
    return SequencePublisher(builtins.range(start, start + count), describe=f"range({start}, count={count})")


def just(*items: T) -> IterablePublisher[T]:
    """A Publisher of the given items, in order."""
    for i, x in enumerate(items):
        if x is None:
            raise null_element_error(f"item #{i} passed to just()")
    return SequencePublisher(items, describe=f"just({len(items)} items)")


class _Terminal(PublisherBase[Any]):
    __slots__ = ("_failure",)

    def __init__(self, failure: BaseException | None) -> None:
        self._failure = failure

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        check_subscriber(subscriber)
        subscribe_with(subscriber, TerminalSubscription(subscriber, self._failure), start=True)


def empty() -> PublisherBase[Any]:
    """A Publisher that completes at once, without waiting for demand (rule 1.5, 2.9)."""
    return _Terminal(None)


def error(exc: BaseException) -> PublisherBase[Any]:
    """A Publisher that signals ``on_error(exc)`` at once, without waiting for demand (rule 2.10)."""
    if exc is None:
        raise null_element_error("the exception passed to error()")
    return _Terminal(exc)


class _Deferred(PublisherBase[T]):
    __slots__ = ("_factory",)

    def __init__(self, factory: Callable[[], Publisher[T]]) -> None:
        self._factory = factory

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        try:
            pub = self._factory()
            if pub is None:
                raise null_element_error("the publisher returned by the defer() factory")
        except BaseException as exc:
            throw_if_fatal(exc)
            subscribe_with(subscriber, TerminalSubscription(subscriber, exc), start=True)
            return
        pub.subscribe(subscriber)


def defer(factory: Callable[[], Any]) -> PublisherBase[T]:
    """A Publisher that calls ``factory()`` for each subscriber.

    The factory may return a Publisher, or any iterable (a generator included), which is
    wrapped with :func:`from_iterable`; an exception from it becomes ``on_error``.
    """

    def make() -> Publisher[T]:
        made = factory()
        if made is None or hasattr(made, "subscribe"):
            return made
        return from_iterable(made)

    return _Deferred(make)


__all__ = ["IterablePublisher", "SequencePublisher", "from_iterable", "range_", "just", "empty", "error", "defer"]
