"""asyncio in and out: ``from_async_iterable`` and ``aiterate`` (``async for`` with bounded prefetch).

Signals cross into an event loop with ``call_soon_threadsafe``; nothing busy-waits.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from .drain import QueueSubscription, check_subscriber, subscribe_with
from .errors import null_element_error, report_dropped
from .pipeline import PublisherBase
from .subscribers import replenish_limit, validate_prefetch
from .types import Publisher, Subscriber, Subscription


class _LoopThread:
    """A private event loop on a daemon thread, for subscribers outside any loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="rs-spark-aio", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        self.loop.close()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


class _AsyncIterablePublisher(PublisherBase[Any]):
    __slots__ = ("_source", "_loop")

    def __init__(self, source: Any, loop: asyncio.AbstractEventLoop | None) -> None:
        self._source = source
        self._loop = loop

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        check_subscriber(subscriber)  # rule 1.9
        loop, private = _pick_loop(self._loop)
        sub = QueueSubscription(subscriber)
        pump = _Pump(self._source, sub, loop, private)
        subscribe_with(subscriber, sub)
        loop.call_soon_threadsafe(pump.start)


def _pick_loop(loop: asyncio.AbstractEventLoop | None) -> tuple[asyncio.AbstractEventLoop, _LoopThread | None]:
    """The given loop, else the one running in this thread, else a private loop thread (returned too)."""
    if loop is not None:
        return loop, None
    try:
        return asyncio.get_running_loop(), None
    except RuntimeError:
        private = _LoopThread()
        return private.loop, private


class _Pump:
    """One subscription's task: pulls the async iterable on ``loop`` into ``sub``, within demand."""

    __slots__ = ("_source", "_sub", "_loop", "_private", "_wake", "_task")

    def __init__(
        self, source: Any, sub: QueueSubscription, loop: asyncio.AbstractEventLoop, private: _LoopThread | None
    ) -> None:
        self._source = source
        self._sub = sub
        self._loop = loop
        self._private = private
        self._wake = asyncio.Event()  # set (on the loop) after each request
        self._task: asyncio.Task[None] | None = None
        sub.set_hooks(on_release=self._on_release, on_demand=self._on_demand)

    # -- any thread ---------------------------------------------------------------------
    def _on_demand(self) -> None:
        self._loop.call_soon_threadsafe(self._wake.set)

    def _on_release(self) -> None:
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._cancel_task)

    # -- the loop -----------------------------------------------------------------------
    def _cancel_task(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def start(self) -> None:
        self._task = self._loop.create_task(self._run())

    async def _run(self) -> None:
        try:
            await self._run_source()
        finally:
            if self._private is not None:
                self._private.stop()  # after the source is closed: stopping first would strand it

    async def _run_source(self) -> None:
        it: Any = None
        try:
            it = self._open()
            await self._pull(it)
        except asyncio.CancelledError as exc:
            # Cancelled by our own release (the subscription ended: nothing to say), or from outside
            # (its loop shutting down...) while the subscriber still waits: then it must hear of it.
            if not self._sub.is_done:
                self._sub.offer_error(_cancelled_error(exc))
            raise  # the task ends cancelled, as asyncio expects
        except Exception as exc:  # the source failed; KeyboardInterrupt and SystemExit pass through
            self._sub.offer_error(exc)
        finally:
            await self._close(it)  # no more pulls: an async generator's finally runs now

    def _open(self) -> Any:
        source = self._source
        it = source() if callable(source) and not hasattr(source, "__aiter__") else source
        return it.__aiter__()

    async def _pull(self, it: Any) -> None:
        """Pull only what was requested and not yet buffered (rule 1.1), until the end or cancel."""
        sub = self._sub
        while await self._demand():
            try:
                item = await it.__anext__()
            except StopAsyncIteration:
                sub.offer_complete()
                return
            if item is None:
                sub.offer_error(null_element_error("an element of the async iterable"))
                return
            sub.offer(item)

    async def _demand(self) -> bool:
        """Wait until there is demand for one more element; False once the subscription ended."""
        sub = self._sub
        while sub.outstanding - sub.queued <= 0:
            if sub.is_done:
                return False
            self._wake.clear()
            if sub.outstanding - sub.queued > 0 or sub.is_done:
                continue  # a request came in between: do not wait for its wake-up
            await self._wake.wait()
        return not sub.is_done

    @staticmethod
    async def _close(it: Any) -> None:
        """Close an async generator (its ``finally`` runs now); a failure there has no one to go to."""
        aclose = getattr(it, "aclose", None)
        if aclose is None:
            return
        try:
            await aclose()
        except Exception as exc:  # a CancelledError (cancelled again meanwhile) passes through
            report_dropped(exc, "closing the async iterable raised")


def _cancelled_error(cause: asyncio.CancelledError) -> RuntimeError:
    """What the subscriber receives when the pumping task is cancelled before the stream ended: not
    the CancelledError itself, which would look like a cancellation of whichever task re-raises it."""
    err = RuntimeError(
        "from_async_iterable(): the task pulling the async iterable was cancelled before it ended "
        "(its event loop shut down, or something cancelled the task); no more elements will come. "
        "Keep the loop running until the stream ends, or cancel the subscription instead."
    )
    err.__cause__ = cause
    return err


def from_async_iterable(source: Any, *, loop: asyncio.AbstractEventLoop | None = None) -> PublisherBase[Any]:
    """A Publisher of what an async iterable yields, pulled only as demand arrives.

    ``source`` is an async iterable, or a callable returning one (called per subscriber:
    use that for async generators, which are single-use). It runs on ``loop``, else on the
    loop running in the subscribing thread, else on a private loop thread. Cancelling
    closes the async generator (``aclose``). If the task pulling it is cancelled otherwise
    (its loop shuts down) before the end, the subscriber gets ``on_error(RuntimeError)``
    whose ``__cause__`` is the ``CancelledError``, and the task ends cancelled.
    """
    if source is None:
        raise null_element_error("the source passed to from_async_iterable()")
    return _AsyncIterablePublisher(source, loop)


class AsyncIteratorSubscriber(AsyncIterator[Any]):
    """``async for`` over a Publisher, holding at most ``prefetch`` elements."""

    def __init__(self, prefetch: int) -> None:
        self._prefetch = validate_prefetch(prefetch)
        self._limit = replenish_limit(self._prefetch)
        self._queue: deque[Any] = deque()
        self._subscription: Subscription | None = None
        self._terminal: Any = None
        self._consumed = 0
        self._waiter: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # Subscriber side: any thread.
    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise null_element_error("the subscription passed to on_subscribe()")
        if self._subscription is not None:
            subscription.cancel()  # rule 2.5
            return
        self._subscription = subscription
        subscription.request(self._prefetch)

    def on_next(self, item: Any) -> None:
        if item is None:
            raise null_element_error("the element passed to on_next()")
        self._queue.append(item)
        self._wake()

    def on_error(self, error: BaseException) -> None:
        if error is None:
            raise null_element_error("the error passed to on_error()")
        self._terminal = error
        self._wake()

    def on_complete(self) -> None:
        self._terminal = StopAsyncIteration()
        self._wake()

    def _wake(self) -> None:
        w = self._waiter
        if w is not None:
            loop = self._loop
            assert loop is not None
            loop.call_soon_threadsafe(_resolve, w)

    # Consumer side: the event loop.
    def __aiter__(self) -> AsyncIteratorSubscriber:
        return self

    async def __anext__(self) -> Any:
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
                raise t
            loop = asyncio.get_running_loop()
            self._loop = loop
            fut: asyncio.Future[None] = loop.create_future()
            self._waiter = fut
            if q or self._terminal is not None:  # a signal slipped in before _waiter was set
                self._waiter = None
                continue
            try:
                await fut
            finally:
                self._waiter = None

    async def aclose(self) -> None:
        """Stop early: cancel the subscription (rule 2.6)."""
        s, self._subscription = self._subscription, None
        if s is not None and self._terminal is None:
            s.cancel()
        self._terminal = StopAsyncIteration()


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def aiterate(publisher: Publisher[Any], prefetch: int = 256) -> AsyncIteratorSubscriber:
    """``async for x in aiterate(pub)``: requests ``prefetch`` up front, then replenishes in
    steps of 3/4 of it, so at most ``prefetch`` elements wait in memory. Errors are raised
    at the ``async for``; leaving the loop early should ``await it.aclose()`` to cancel.
    Cancelling a task that waits for the next element raises ``CancelledError`` in that task
    only: the subscription stays as it is (a timeout around one ``__anext__`` loses nothing)."""
    sub = AsyncIteratorSubscriber(prefetch)
    publisher.subscribe(sub)
    return sub


__all__ = ["from_async_iterable", "aiterate", "AsyncIteratorSubscriber"]
