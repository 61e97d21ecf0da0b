"""create() overflow strategies, asyncio in/out, blocking iterator, callbacks: bounds and errors."""

from __future__ import annotations

import asyncio
import threading

import pytest

from rs_spark import streams as rs

from .strict import StrictSubscriber


def _pusher():
    box = {}
    return box, (lambda em: box.setdefault("em", em))


@pytest.mark.parametrize(
    "overflow,expected,dropped",
    [
        (rs.Overflow.DROP_OLDEST, [7, 8, 9], [0, 1, 2, 3, 4, 5, 6]),
        (rs.Overflow.DROP_NEWEST, [0, 1, 2], [3, 4, 5, 6, 7, 8, 9]),
        (rs.Overflow.LATEST, [0, 1, 9], [2, 3, 4, 5, 6, 7, 8]),
    ],
)
def test_create_overflow_strategies_keep_the_buffer_bounded(overflow, expected, dropped):
    box, fn = _pusher()
    drops = []
    s = StrictSubscriber()
    rs.create(fn, overflow, buffer_size=3, on_drop=drops.append).subscribe(s)
    em = box["em"]
    for i in range(10):
        em.next(i)
    assert em.dropped == 7 and drops == dropped
    s.request(100)
    em.complete()
    s.await_done()
    assert s.items == expected
    s.assert_clean()


def test_create_overflow_error_fails_with_clear_message_and_delivers_what_was_buffered():
    box, fn = _pusher()
    s = StrictSubscriber()
    rs.create(fn, "error", buffer_size=2).subscribe(s)
    em = box["em"]
    assert em.next("a") and em.next("b")
    assert em.next("c") is False
    assert em.next("d") is False  # closed now
    s.request(10)
    s.await_done()
    assert s.items == ["a", "b"]  # nothing buffered is lost
    assert isinstance(s.error, rs.BufferOverflowError)
    msg = str(s.error)
    assert "buffer of 2" in msg and "'c'" in msg and "DROP_OLDEST" in msg


def test_create_rejects_unknown_strategy_and_bad_buffer_size():
    with pytest.raises(ValueError, match="drop_oldest"):
        rs.create(lambda em: None, "drop_some")
    with pytest.raises(ValueError, match="buffer_size"):
        rs.create(lambda em: None, buffer_size=0)


def test_create_on_cancel_runs_when_subscriber_cancels_and_emitter_reports_cancelled():
    box, fn = _pusher()
    s = StrictSubscriber(initial_request=1)
    stopped = threading.Event()
    rs.create(lambda em: (fn(em), em.on_cancel(stopped.set))).subscribe(s)
    s.subscription.cancel()
    assert stopped.is_set() and box["em"].is_cancelled
    assert box["em"].next(1) is False


def test_create_function_raising_becomes_on_error():
    s = StrictSubscriber(initial_request=1)
    rs.create(lambda em: 1 / 0).subscribe(s)
    s.await_done()
    assert isinstance(s.error, ZeroDivisionError)


def test_create_emitter_none_raises_type_error_to_the_producer():
    box, fn = _pusher()
    rs.create(fn).subscribe(StrictSubscriber())
    with pytest.raises(TypeError, match="2.13"):
        box["em"].next(None)


class _OnTheLoop(StrictSubscriber):
    """Signals arrive on the loop thread here; ``until(n)`` lets the test coroutine wait for them."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self._changed = asyncio.Condition()

    def on_next(self, item):
        super().on_next(item)
        asyncio.get_running_loop().create_task(self._notify())

    def on_complete(self):
        super().on_complete()
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self):
        async with self._changed:
            self._changed.notify_all()

    async def until(self, n):
        async with self._changed:
            await self._changed.wait_for(lambda: len(self.items) >= n or self.done.is_set())


def test_from_async_iterable_pulls_only_what_was_requested():
    pulled = []

    async def gen():
        for i in range(100):
            pulled.append(i)
            yield i  # never awaits anything: a pump pulling ahead would do so in the same loop turn

    async def main():
        s = _OnTheLoop(initial_request=3)
        rs.from_async_iterable(gen).subscribe(s)  # on this loop: the pump runs only when main() waits
        await s.until(3)
        # The pump delivered the third element in a turn that ended before this one: it is now
        # waiting for demand, and had it pulled ahead, it would have done so in that same turn.
        assert s.items == [0, 1, 2] and pulled == [0, 1, 2]
        s.request(200)
        await s.until(100)
        await s.until(101)  # the completion
        return s

    s = asyncio.run(main())
    assert s.items == list(range(100)) and s.completed
    s.assert_clean()


def test_from_async_iterable_closes_the_async_generator_on_cancel():
    closed = threading.Event()

    async def gen():
        try:
            i = 0
            while True:
                yield i
                i += 1
        finally:
            closed.set()

    s = StrictSubscriber(initial_request=2)
    rs.from_async_iterable(gen).subscribe(s)
    s.await_items(2)
    s.subscription.cancel()
    assert closed.wait(2)


def test_from_async_iterable_runs_on_the_callers_loop():
    async def main():
        loop_thread = threading.get_ident()
        seen = []

        async def gen():
            for i in range(5):
                seen.append(threading.get_ident())
                yield i

        out = [x async for x in rs.aiterate(rs.from_async_iterable(gen), prefetch=2)]
        return out, set(seen) == {loop_thread}

    out, same = asyncio.run(main())
    assert out == [0, 1, 2, 3, 4] and same


def test_aiterate_holds_at_most_prefetch_elements():
    produced = []

    def gen():
        for i in range(1000):
            produced.append(i)
            yield i

    async def main():
        it = rs.aiterate(rs.defer(gen), prefetch=8)
        got = []
        async for x in it:
            got.append(x)
            assert len(produced) - len(got) <= 8
            if len(got) == 50:
                await it.aclose()
                break
        return got

    assert asyncio.run(main()) == list(range(50))
    assert len(produced) <= 58


def test_aiterate_raises_the_stream_error():
    async def main():
        async for _ in rs.aiterate(rs.error(KeyError("nope"))):
            pass

    with pytest.raises(KeyError):
        asyncio.run(main())


def test_blocking_iterator_holds_at_most_prefetch_elements_and_close_cancels():
    produced = []
    closed = threading.Event()

    def gen():
        try:
            for i in range(10**6):
                produced.append(i)
                yield i
        finally:
            closed.set()

    with rs.iterate(rs.defer(gen), prefetch=16) as it:
        for x in it:
            assert len(produced) - x - 1 <= 16
            if x == 100:
                break
    assert closed.is_set()
    assert len(produced) <= 101 + 16


def test_blocking_iterator_receives_from_another_thread_and_reraises_errors():
    box, fn = _pusher()
    it = rs.iterate(rs.create(fn, buffer_size=64), prefetch=4, timeout=5)

    taken = threading.Semaphore(0)  # the consumer took the previous element

    def produce():
        for i in range(20):
            if i:
                assert taken.acquire(timeout=5)  # so the consumer is (about to be) waiting for this one
            assert box["em"].next(i)
        box["em"].error(KeyError("late"))

    t = threading.Thread(target=produce)
    t.start()
    got = []
    with pytest.raises(KeyError):
        for x in it:
            got.append(x)
            taken.release()
    t.join()
    assert got == list(range(20))


def test_blocking_iterator_timeout_says_what_happened():
    it = rs.iterate(rs.create(lambda em: None), timeout=0.05)
    with pytest.raises(TimeoutError, match="no signal from the publisher"):
        next(it)


def test_prefetch_validation():
    with pytest.raises(ValueError, match="prefetch"):
        rs.iterate(rs.empty(), prefetch=0)
    with pytest.raises(ValueError, match="request_size"):
        rs.subscribe_callbacks(rs.empty(), print, request_size=-1)


def test_callback_subscriber_keeps_at_most_request_size_outstanding():
    box, fn = _pusher()
    got = []
    sub = rs.subscribe_callbacks(rs.create(fn, buffer_size=1000), got.append, request_size=4)
    em = box["em"]
    assert em.requested == 4
    for i in range(3):
        em.next(i)
    # 3/4 of 4 consumed -> replenished by 3: outstanding back to 4
    assert em.requested == 4
    em.complete()
    sub.wait(1)
    assert got == [0, 1, 2]


def test_callback_error_in_on_next_cancels_and_ends_with_that_error():
    sub = rs.subscribe_callbacks(rs.range_(10), lambda x: 1 / (x - 3))
    with pytest.raises(ZeroDivisionError):
        sub.wait(1)


def test_to_list_timeout_cancels_and_says_how_many_arrived():
    box, fn = _pusher()
    with pytest.raises(TimeoutError, match="0 elements"):
        rs.to_list(rs.create(fn), timeout=0.05)
    assert box["em"].is_cancelled
