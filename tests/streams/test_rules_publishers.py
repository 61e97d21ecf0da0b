"""Spec rules enforced by rs_spark's publishers, one test per rule (and per source where it matters)."""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import threading
import weakref

import pytest

from rs_spark import streams as rs
from rs_spark.streams.demand import MAX_DEMAND

from .strict import StrictSubscriber


def _create_list(items):
    def run(em):
        for x in items:
            em.next(x)
        em.complete()

    return rs.create(run, rs.Overflow.ERROR, buffer_size=max(1, len(items)))


SOURCES = {
    "range_": lambda n: rs.range_(n),
    "from_iterable_list": lambda n: rs.from_iterable(list(range(n))),
    "defer_generator": lambda n: rs.defer(lambda: (i for i in range(n))),
    "create": lambda n: _create_list(list(range(n))),
    "piped_unfused": lambda n: rs.pipe(
        rs.create(lambda em: [em.next(i) for i in range(n)] and None or em.complete(), buffer_size=max(1, n)),
        rs.map(lambda x: x),
    ),
    "piped_fused": lambda n: rs.range_(n).pipe(rs.map(lambda x: x + 1), rs.filter(lambda x: True)),
    "from_async_iterable": lambda n: rs.from_async_iterable(lambda: _agen(n), loop=_loop_thread()),
}


async def _agen(n):
    for i in range(n):
        yield i  # never awaits: what one pull sends, it sends within one turn of the loop


_LOOP: list[asyncio.AbstractEventLoop] = []


def _loop_thread() -> asyncio.AbstractEventLoop:
    """One event loop on a daemon thread for this module's async source, so a test can wait for it to settle."""
    if not _LOOP:
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="test-rules-loop", daemon=True).start()
        _LOOP.append(loop)
    return _LOOP[0]


class Source:
    """Builds a publisher of n elements; ``settle()`` returns once it has sent every signal that the
    requests and cancels made so far allow, so a test can check what did not happen (no overshoot,
    nothing after cancel). Synchronous sources send them inside request() / cancel() already."""

    def __init__(self, name):
        self.name = name

    def __call__(self, n):
        return SOURCES[self.name](n)

    def settle(self):
        if self.name == "from_async_iterable":
            asyncio.run_coroutine_threadsafe(_turns(3), _loop_thread()).result(5)


async def _turns(n):
    # The loop runs its callbacks in order: a request's wake-up (queued before this coroutine) and
    # the pump step that it schedules (one turn later) have both run when these turns are done.
    for _ in range(n):
        await asyncio.sleep(0)


@pytest.fixture(params=sorted(SOURCES))
def make(request):
    return Source(request.param)


def test_spec_1_1_on_next_never_exceeds_requested(make):
    s = StrictSubscriber()
    make(10).subscribe(s)
    assert s.subscribed.wait(2)
    for k in (1, 2, 3):
        s.request(k)
    make.settle()  # an asynchronous source has sent all it would for these requests
    assert len(s.items) == 6  # what was requested, and not one more (StrictSubscriber checks each on_next too)
    s.request(100)
    s.await_done()
    assert len(s.items) == 10 and s.completed
    s.assert_clean()


def test_spec_1_5_finite_source_signals_on_complete(make):
    s = StrictSubscriber(initial_request=MAX_DEMAND)
    make(3).subscribe(s)
    s.await_done()
    assert s.completed and s.error is None
    s.assert_clean()


def test_spec_1_9_subscribe_none_raises_type_error(make):
    with pytest.raises(TypeError, match="1.9"):
        make(1).subscribe(None)


def test_spec_1_9_on_subscribe_comes_before_any_other_signal():
    for pub in (rs.empty(), rs.error(RuntimeError("x")), rs.range_(0)):
        s = StrictSubscriber(initial_request=1)
        pub.subscribe(s)
        s.await_done()
        s.assert_clean()


def test_spec_1_9_failing_factory_is_refused_through_on_error_after_on_subscribe():
    def boom():
        raise LookupError("no such table")

    s = StrictSubscriber()
    rs.defer(boom).subscribe(s)
    s.await_done()
    assert isinstance(s.error, LookupError)
    s.assert_clean()


def test_spec_1_10_reiterable_sources_serve_each_subscriber_from_the_start():
    pub = rs.from_iterable([1, 2, 3])
    assert rs.to_list(pub) == [1, 2, 3]
    assert rs.to_list(pub) == [1, 2, 3]


def test_spec_1_10_one_shot_generator_refuses_second_subscriber_with_advice():
    pub = rs.from_iterable(i for i in range(3))
    assert rs.to_list(pub) == [0, 1, 2]
    with pytest.raises(RuntimeError, match="one-shot.*defer"):
        rs.to_list(pub)


def test_spec_1_7_no_signal_after_on_complete(make):
    s = StrictSubscriber(initial_request=5)
    make(2).subscribe(s)
    s.await_done()
    s.subscription.request(10)  # must be a NOP now
    s.subscription.cancel()
    make.settle()
    s.assert_clean()
    assert s.items == sorted(s.items)


def test_spec_2_13_none_element_ends_stream_with_type_error():
    s = StrictSubscriber(initial_request=10)
    rs.from_iterable([1, None, 3]).subscribe(s)
    s.await_done()
    assert s.items == [1]
    assert isinstance(s.error, TypeError) and "element #1" in str(s.error)
    s.assert_clean()


def test_spec_2_13_subscriber_raising_in_on_next_cancels_and_is_logged(caplog):
    closed = []

    def gen():
        try:
            yield from range(100)
        finally:
            closed.append(True)

    class Raising(StrictSubscriber):
        def on_next(self, item):
            super().on_next(item)
            if item == 2:
                raise ValueError("subscriber bug")

    s = Raising(initial_request=50)
    with caplog.at_level(logging.ERROR, logger="rs_spark.streams"):
        rs.defer(gen).subscribe(s)
    assert s.items == [0, 1, 2]
    assert closed == [True]
    assert any("rule 2.13" in r.getMessage() for r in caplog.records)
    assert not s.done.is_set()  # no on_error to a subscriber that broke the contract


def test_spec_3_2_request_inside_on_next_is_allowed(make):
    s = StrictSubscriber(initial_request=1, request_on_next=1)
    make(50).subscribe(s)
    s.await_done()
    assert s.items == sorted(s.items) and len(s.items) == 50
    s.assert_clean()


def test_spec_3_3_request_one_from_on_next_over_a_million_elements_keeps_the_stack_flat():
    depths = []
    base = [0]

    class Deep:
        def on_subscribe(self, sub):
            self.sub = sub
            base[0] = _depth()
            sub.request(1)

        def on_next(self, item):
            if item % 50_000 == 0:
                depths.append(_depth())
            self.sub.request(1)

        def on_error(self, e):
            raise AssertionError(e)

        def on_complete(self):
            self.done = True

    d = Deep()
    rs.range_(1_000_000).subscribe(d)
    assert d.done
    assert len(depths) == 20
    # Every on_next runs at the same depth: the drain loop trampolines instead of recursing.
    assert max(depths) - min(depths) == 0
    assert max(depths) - base[0] <= 6


def _depth() -> int:
    f, n = sys._getframe(1), 0
    while f is not None:
        f, n = f.f_back, n + 1
    return n


@pytest.mark.parametrize("bad", [0, -1, -(2**63)])
def test_spec_3_9_request_non_positive_signals_value_error_citing_the_rule(make, bad):
    s = StrictSubscriber()
    make(5).subscribe(s)
    assert s.subscribed.wait(2)
    s.subscription.request(bad)
    s.await_done()
    assert isinstance(s.error, ValueError)
    assert "rule 3.9" in str(s.error) and repr(bad) in str(s.error)
    s.assert_clean()


@pytest.mark.parametrize("bad", [1.5, "3", None, True])
def test_spec_3_9_request_of_a_non_integer_signals_value_error(bad):
    s = StrictSubscriber()
    rs.range_(5).subscribe(s)
    s.subscription.request(bad)
    s.await_done()
    assert isinstance(s.error, ValueError) and "rule 3.9" in str(s.error)


def test_spec_3_6_request_after_cancel_is_a_nop(make):
    s = StrictSubscriber()
    make(5).subscribe(s)
    assert s.subscribed.wait(2)
    s.subscription.cancel()
    s.subscription.request(3)
    s.subscription.request(0)  # not even an error after cancel
    make.settle()
    assert s.items == [] and not s.done.is_set()
    s.assert_clean()


def test_spec_3_7_cancel_is_idempotent_and_3_15_returns_normally(make):
    s = StrictSubscriber(initial_request=1)
    make(5).subscribe(s)
    assert s.subscribed.wait(2)
    for _ in range(3):
        assert s.subscription.cancel() is None
    s.assert_clean()


def test_spec_3_13_cancel_drops_the_reference_to_the_subscriber(make):
    s = StrictSubscriber(initial_request=1)
    ref = weakref.ref(s)
    make(10).subscribe(s)
    assert s.subscribed.wait(2)
    sub = s.subscription
    sub.cancel()
    del s
    make.settle()  # no signal in flight on another thread still holds it
    gc.collect()
    assert ref() is None, "the subscription still holds the subscriber after cancel"
    assert sub is not None


def test_spec_3_13_generator_is_closed_on_cancel():
    closed = threading.Event()

    def gen():
        try:
            yield from range(10**9)
        finally:
            closed.set()

    it = rs.iterate(rs.defer(gen), prefetch=8)
    assert next(it) == 0
    it.close()
    assert closed.wait(1)


def test_spec_3_17_demand_up_to_max_is_supported_and_saturates(make):
    s = StrictSubscriber()
    make(5).subscribe(s)
    assert s.subscribed.wait(2)
    s.request(MAX_DEMAND // 2)
    s.request(MAX_DEMAND // 2)
    s.request(1)
    s.request(MAX_DEMAND)  # beyond 2**63-1 in total: no error, effectively unbounded
    s.await_done()
    assert s.completed and len(s.items) == 5
    s.assert_clean()


def test_empty_and_error_terminate_without_demand():
    s = StrictSubscriber()
    rs.empty().subscribe(s)
    assert s.completed
    s2 = StrictSubscriber()
    rs.error(KeyError("k")).subscribe(s2)
    assert isinstance(s2.error, KeyError)
