"""Out of a Publisher: a blocking iterator, ``to_list``, and a callback subscriber.

Each keeps at most a fixed number of elements outstanding: it requests ``prefetch`` (or
``request_size``) up front and replenishes 3/4 of it at a time, as Reactor's ``limitRate``
does, so the publisher never waits for a full round trip and memory stays bounded.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from .errors import null_element_error, report_dropped, throw_if_fatal
from .types import Publisher, Subscription


def validate_prefetch(n: int, name: str = "prefetch") -> int:
    """``n`` if it is an int >= 1 (not a bool); ValueError naming ``name`` otherwise."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{name} must be an int >= 1, got {n!r}")
    return n


def replenish_limit(prefetch: int) -> int:
    """Replenish after this many elements: 3/4 of the prefetch (at least 1)."""
    return max(1, prefetch - (prefetch >> 2))


class _SingleSubscription:
    """Rules 2.5 and 2.13 for our subscribers: one Subscription, no None arguments."""

    __slots__ = ()

    def _accept(self, subscription: Subscription) -> bool:
        if subscription is None:
            raise null_element_error("the subscription passed to on_subscribe()")
        if getattr(self, "_subscription", None) is not None or getattr(self, "_terminal", None) is not None:
            subscription.cancel()  # rule 2.5
            return False
        setattr(self, "_subscription", subscription)  # noqa: B010 - a slot of the subclass, not of this mixin
        return True


class BlockingIterator(_SingleSubscription, Iterator[Any]):
    """Iterate a Publisher from a plain thread; at most ``prefetch`` elements wait in memory.

    Use as a context manager (or call :meth:`close`) to cancel when leaving early.
    ``timeout`` (seconds) bounds each wait for the next signal; ``TimeoutError`` says so.
    """

    __slots__ = (
        "_prefetch",
        "_limit",
        "_queue",
        "_cond",
        "_waiting",
        "_subscription",
        "_terminal",
        "_consumed",
        "_timeout",
    )

    def __init__(self, prefetch: int = 256, timeout: float | None = None) -> None:
        self._prefetch = validate_prefetch(prefetch)
        self._limit = replenish_limit(self._prefetch)
        self._queue: deque[Any] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._waiting = False
        self._subscription: Subscription | None = None
        self._terminal: Any = None
        self._consumed = 0
        self._timeout = timeout

    # Subscriber: any thread
    def on_subscribe(self, subscription: Subscription) -> None:
        if self._accept(subscription):
            subscription.request(self._prefetch)

    def on_next(self, item: Any) -> None:
        if item is None:
            raise null_element_error("the element passed to on_next()")  # rule 2.13
        self._queue.append(item)
        if self._waiting:
            with self._cond:
                self._cond.notify()

    def on_error(self, error: BaseException) -> None:
        if error is None:
            raise null_element_error("the error passed to on_error()")
        self._terminal = error
        with self._cond:
            self._cond.notify()

    def on_complete(self) -> None:
        self._terminal = StopIteration()
        with self._cond:
            self._cond.notify()

    # Iterator: the consuming thread
    def __iter__(self) -> BlockingIterator:
        return self

    def __next__(self) -> Any:
        q = self._queue
        while True:
            if q:
                item = q.popleft()
                self._consumed += 1
                if self._consumed == self._limit:
                    self._consumed = 0
                    s = self._subscription
                    if s is not None and self._terminal is None:
                        s.request(self._limit)
                return item
            t = self._terminal
            if t is not None:
                self._subscription = None
                if isinstance(t, StopIteration):
                    raise StopIteration
                raise t
            with self._cond:
                self._waiting = True
                try:
                    if not q and self._terminal is None:
                        if not self._cond.wait(self._timeout) and not q and self._terminal is None:
                            raise TimeoutError(
                                f"no signal from the publisher within {self._timeout} s while waiting "
                                f"for the next element; raise timeout= or check that the publisher emits"
                            )
                finally:
                    self._waiting = False

    def close(self) -> None:
        """Cancel the subscription (rule 2.6) and drop buffered elements."""
        s, self._subscription = self._subscription, None
        if s is not None and self._terminal is None:
            s.cancel()
        self._terminal = StopIteration()
        self._queue.clear()

    def __enter__(self) -> BlockingIterator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def iterate(publisher: Publisher[Any], prefetch: int = 256, timeout: float | None = None) -> BlockingIterator:
    """``for x in iterate(pub)``: see :class:`BlockingIterator`."""
    it = BlockingIterator(prefetch, timeout)
    publisher.subscribe(it)
    return it


class CallbackSubscriber(_SingleSubscription):
    """Calls ``on_next`` for each element with at most ``request_size`` outstanding.

    ``wait(timeout)`` blocks until the stream ends (re-raising its error); ``cancel()`` stops it.
    An exception from the ``on_next`` callback cancels the subscription and ends the
    stream with that error (it is the callback's failure, rule 2.13).
    """

    __slots__ = (
        "_on_next",
        "_on_error",
        "_on_complete",
        "_request_size",
        "_limit",
        "_subscription",
        "_terminal",
        "_consumed",
        "_done_event",
    )

    def __init__(
        self,
        on_next: Callable[[Any], Any],
        on_error: Callable[[BaseException], Any] | None = None,
        on_complete: Callable[[], Any] | None = None,
        request_size: int = 256,
    ) -> None:
        self._on_next = on_next
        self._on_error = on_error
        self._on_complete = on_complete
        self._request_size = validate_prefetch(request_size, "request_size")
        self._limit = replenish_limit(self._request_size)
        self._subscription: Subscription | None = None
        self._terminal: Any = None
        self._consumed = 0
        self._done_event = threading.Event()

    def on_subscribe(self, subscription: Subscription) -> None:
        if self._accept(subscription):
            subscription.request(self._request_size)

    def on_next(self, item: Any) -> None:
        if item is None:
            raise null_element_error("the element passed to on_next()")  # rule 2.13
        if self._terminal is not None:
            return  # cancelled: late elements are allowed (rule 2.8) and ignored
        try:
            self._on_next(item)
        except BaseException as exc:
            throw_if_fatal(exc)  # out of on_next to the publisher's drain, which lets it through too
            self._fail(exc)
            return
        c = self._consumed + 1
        if c == self._limit:
            self._consumed = 0
            s = self._subscription
            if s is not None:
                s.request(c)
        else:
            self._consumed = c

    def on_error(self, error: BaseException) -> None:
        if error is None:
            raise null_element_error("the error passed to on_error()")
        if self._terminal is not None:
            return
        self._terminal = error
        self._subscription = None
        try:
            if self._on_error is not None:
                self._on_error(error)
        except BaseException as exc:
            throw_if_fatal(exc)
            report_dropped(exc, "the on_error callback raised")
        finally:
            self._done_event.set()  # the stream has ended even if the callback stopped the program

    def on_complete(self) -> None:
        if self._terminal is not None:
            return
        self._terminal = True
        self._subscription = None
        try:
            if self._on_complete is not None:
                self._on_complete()
        except BaseException as exc:
            throw_if_fatal(exc)
            report_dropped(exc, "the on_complete callback raised")
        finally:
            self._done_event.set()  # the stream has ended even if the callback stopped the program

    def _fail(self, exc: BaseException) -> None:
        s, self._subscription = self._subscription, None
        if s is not None:
            s.cancel()
        self.on_error(exc)

    def cancel(self) -> None:
        s, self._subscription = self._subscription, None
        if s is not None and self._terminal is None:
            self._terminal = True
            s.cancel()
            self._done_event.set()

    @property
    def done(self) -> bool:
        """Whether the stream ended (completed, failed or cancelled)."""
        return self._done_event.is_set()

    def wait(self, timeout: float | None = None) -> None:
        """Block until the stream ends; re-raise its error; ``TimeoutError`` after ``timeout`` s."""
        if not self._done_event.wait(timeout):
            raise TimeoutError(f"the stream did not end within {timeout} s")
        if isinstance(self._terminal, BaseException):
            raise self._terminal


def subscribe_callbacks(
    publisher: Publisher[Any],
    on_next: Callable[[Any], Any],
    on_error: Callable[[BaseException], Any] | None = None,
    on_complete: Callable[[], Any] | None = None,
    *,
    request_size: int = 256,
) -> CallbackSubscriber:
    """Subscribe callbacks with an explicit request size; returns the running subscriber."""
    sub = CallbackSubscriber(on_next, on_error, on_complete, request_size)
    publisher.subscribe(sub)
    return sub


def to_list(publisher: Publisher[Any], timeout: float | None = None, request_size: int = 4096) -> list[Any]:
    """Collect every element into a list (requests ``request_size`` at a time); re-raises the
    stream's error; ``TimeoutError`` (after cancelling) if it does not end within ``timeout`` s."""
    out: list[Any] = []
    sub = CallbackSubscriber(out.append, request_size=request_size)
    publisher.subscribe(sub)
    try:
        sub.wait(timeout)
    except TimeoutError:
        sub.cancel()
        raise TimeoutError(
            f"to_list(): the publisher did not complete within {timeout} s "
            f"({len(out)} elements received); it was cancelled"
        ) from None
    return out


__all__ = ["BlockingIterator", "iterate", "CallbackSubscriber", "subscribe_callbacks", "to_list"]
