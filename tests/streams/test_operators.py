"""map / filter / take / batch: behaviour, Processor rules (4.1, 4.2), fusion equivalence."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rs_spark import streams as rs

from .manual_clock import ManualScheduler
from .strict import StrictSubscriber


def _unfusable(items):
    """A source pipe() cannot fuse into, so operators run as real Processors."""

    def run(em):
        for x in items:
            em.next(x)
        em.complete()

    return rs.create(run, buffer_size=max(1, len(items)))


def test_pipe_fuses_map_filter_take_into_iterator_sources():
    fused = rs.range_(10).pipe(rs.map(str), rs.filter(bool), rs.take(3))
    assert isinstance(fused, rs.sources.IterablePublisher)
    unfused = _unfusable([1]).pipe(rs.map(str))
    assert isinstance(unfused, rs.pipeline.PipedPublisher)


class _Foreign:
    """A Publisher that is not one of rs_spark's (no pipe method of its own)."""

    def subscribe(self, subscriber):
        rs.range_(3).subscribe(subscriber)


def test_pipe_of_a_foreign_publisher_through_no_operators_returns_a_pipeable_publisher_base():
    piped = rs.pipe(_Foreign())  # used to return the foreign object itself, which has no .pipe()
    assert isinstance(piped, rs.PublisherBase)
    assert rs.to_list(piped.pipe(rs.map(lambda x: x * 10))) == [0, 10, 20]
    source = rs.range_(3)
    assert rs.pipe(source) is source  # one of ours is returned as it is


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("map"), st.integers(-3, 3)),
        st.tuples(st.just("filter"), st.integers(2, 4)),
        st.tuples(st.just("take"), st.integers(0, 30)),
    ),
    max_size=4,
)


def _build(spec):
    ops = []
    for kind, k in spec:
        if kind == "map":
            ops.append(rs.map(lambda x, k=k: x + k))
        elif kind == "filter":
            ops.append(rs.filter(lambda x, k=k: x % k != 0))
        else:
            ops.append(rs.take(k))
    return ops


def _reference(items, spec):
    out = list(items)
    for kind, k in spec:
        if kind == "map":
            out = [x + k for x in out]
        elif kind == "filter":
            out = [x for x in out if x % k != 0]
        else:
            out = out[:k]
    return out


@settings(max_examples=60, deadline=None)
@given(items=st.lists(st.integers(-100, 100), max_size=40), spec=OPS, request_size=st.integers(1, 7))
def test_operator_chains_fused_and_unfused_match_the_list_model(items, spec, request_size):
    expected = _reference(items, spec)
    fused = rs.from_iterable(items).pipe(*_build(spec))
    unfused = _unfusable(items).pipe(*_build(spec))
    for pub in (fused, unfused):
        s = StrictSubscriber(initial_request=request_size, request_on_next=1)
        pub.subscribe(s)
        s.await_done()
        s.assert_clean()
        assert s.items == expected and s.completed


def test_spec_4_1_map_processor_used_directly_obeys_subscriber_and_publisher_rules():
    proc = rs.map(lambda x: x * 10)
    s = StrictSubscriber()
    proc.subscribe(s)  # downstream first, upstream later: demand is deferred
    s.request(2)
    rs.range_(5).subscribe(proc)
    assert s.items == [0, 10]
    s.request(10)
    s.await_done()
    assert s.items == [0, 10, 20, 30, 40]
    s.assert_clean()


def test_spec_1_11_processor_refuses_a_second_subscriber_through_on_error():
    proc = rs.map(str)
    proc.subscribe(StrictSubscriber())
    s2 = StrictSubscriber()
    proc.subscribe(s2)
    s2.await_done()
    assert isinstance(s2.error, RuntimeError) and "pipe" in str(s2.error)


def test_spec_2_5_processor_cancels_a_second_upstream_subscription():
    proc = rs.filter(bool)
    rs.range_(3).subscribe(proc)
    cancelled = []

    class Sub:
        def request(self, n):
            pass

        def cancel(self):
            cancelled.append(True)

    proc.on_subscribe(Sub())
    assert cancelled == [True]


def test_spec_2_13_processor_on_next_none_raises_type_error():
    for proc in (rs.map(str), rs.filter(bool), rs.take(3), rs.batch(2)):
        with pytest.raises(TypeError):
            proc.on_next(None)
        with pytest.raises(TypeError):
            proc.on_subscribe(None)


def test_spec_4_2_processor_propagates_upstream_error_at_once():
    boom = KeyError("upstream")
    for op in (rs.map(str), rs.filter(bool), rs.take(3), rs.batch(4)):
        s = StrictSubscriber(initial_request=1)
        rs.pipe(rs.error(boom), op).subscribe(s)
        s.await_done()
        assert s.error is boom
        s.assert_clean()


def test_map_function_error_cancels_upstream_and_errors_downstream():
    cancelled = threading.Event()

    def run(em):
        em.on_cancel(cancelled.set)
        for i in range(5):
            em.next(i)

    s = StrictSubscriber(initial_request=10)
    rs.create(run, buffer_size=8).pipe(rs.map(lambda x: 1 // (x - 2))).subscribe(s)
    s.await_done()
    assert isinstance(s.error, ZeroDivisionError)
    assert s.items == [-1, -1]
    assert cancelled.is_set()
    s.assert_clean()


def test_map_returning_none_is_a_type_error_naming_the_function():
    s = StrictSubscriber(initial_request=10)
    _unfusable([1, 2]).pipe(rs.map(lambda x: None)).subscribe(s)
    s.await_done()
    assert isinstance(s.error, TypeError) and "map function" in str(s.error)


def test_take_never_requests_more_than_its_limit_upstream():
    seen = []

    def run(em):
        for i in range(100):
            em.next(i)

    class Spy:
        def __init__(self, inner):
            self.inner = inner

        def subscribe(self, s):
            outer = self

            class Wrap:
                def on_subscribe(self, sub):
                    class SpySub:
                        def request(self, n):
                            seen.append(n)
                            sub.request(n)

                        def cancel(self):
                            sub.cancel()

                    s.on_subscribe(SpySub())

                def on_next(self, x):
                    s.on_next(x)

                def on_error(self, e):
                    s.on_error(e)

                def on_complete(self):
                    s.on_complete()

            outer.inner.subscribe(Wrap())

    s = StrictSubscriber(initial_request=rs.MAX_DEMAND)
    rs.pipe(Spy(rs.create(run, rs.Overflow.DROP_NEWEST, buffer_size=200)), rs.take(5)).subscribe(s)
    s.await_done()
    assert s.items == [0, 1, 2, 3, 4] and s.completed
    assert sum(seen) == 5


def test_take_zero_completes_and_cancels_upstream():
    s = StrictSubscriber()
    cancelled = threading.Event()
    rs.create(lambda em: em.on_cancel(cancelled.set)).pipe(rs.map(str), rs.take(0)).subscribe(s)
    assert s.completed and cancelled.is_set()


def test_batch_groups_by_size_and_flushes_the_rest_on_complete():
    assert rs.to_list(_unfusable(list(range(7))).pipe(rs.batch(3))) == [[0, 1, 2], [3, 4, 5], [6]]


def test_batch_demand_is_counted_in_lists_and_bounds_upstream_requests():
    produced = []

    def run(em):
        for i in range(1000):
            if not em.next(i):
                break
            produced.append(i)

    s = StrictSubscriber(initial_request=2)
    rs.create(run, rs.Overflow.DROP_NEWEST, buffer_size=1000).pipe(rs.batch(10)).subscribe(s)
    assert s.items == [list(range(10)), list(range(10, 20))]
    s.assert_clean()


def test_batch_timeout_emits_a_partial_batch_when_there_is_demand():
    clock = ManualScheduler()
    holder = {}
    s = StrictSubscriber(initial_request=5)
    rs.create(lambda em: holder.setdefault("em", em)).pipe(rs.batch(100, timeout=0.05, scheduler=clock)).subscribe(s)
    holder["em"].next("a")
    holder["em"].next("b")
    assert clock.advance(0.049) == 0 and s.items == []  # not yet due
    assert clock.advance(0.001) == 1
    assert s.items == [["a", "b"]]
    holder["em"].next("c")
    holder["em"].complete()
    s.await_done()
    assert s.items == [["a", "b"], ["c"]]
    assert clock.pending == 0  # completing cancelled the timer of the last partial list
    s.assert_clean()


def test_batch_timeout_on_the_default_timer_thread_flushes_a_partial_batch():
    holder = {}
    s = StrictSubscriber(initial_request=5)
    rs.create(lambda em: holder.setdefault("em", em)).pipe(rs.batch(100, timeout=0.01)).subscribe(s)
    holder["em"].next("a")
    s.await_items(1)  # only the process's timer thread can deliver it: no more elements, no completion
    assert s.items == [["a"]] and not s.done.is_set()
    s.assert_clean()


def test_batch_timeout_without_demand_waits_for_demand():
    clock = ManualScheduler()
    holder = {}
    s = StrictSubscriber(initial_request=1)
    rs.create(lambda em: holder.setdefault("em", em)).pipe(rs.batch(3, timeout=0.02, scheduler=clock)).subscribe(s)
    em = holder["em"]
    assert em.requested == 3  # one list demanded -> three elements asked upstream
    em.next("a")
    assert clock.advance(0.02) == 1
    assert s.items == [["a"]]  # the timer flushed a partial list: there was demand for it
    em.next("b")  # still owed upstream; now buffered with no downstream demand
    assert clock.advance(0.02) == 1  # the timer fires...
    assert s.items == [["a"]]  # ...but no partial list may be emitted without demand,
    em.next("c")  # nor closed: an element arriving meanwhile still joins it
    s.request(1)  # the expired partial list goes out at once
    assert s.items == [["a"], ["b", "c"]]
    s.assert_clean()


def test_operator_arguments_are_validated_with_clear_errors():
    with pytest.raises(ValueError, match="take"):
        rs.take(-1)
    with pytest.raises(ValueError, match="batch"):
        rs.batch(0)
    with pytest.raises(ValueError, match="timeout"):
        rs.batch(2, timeout=0)
    with pytest.raises(TypeError, match="callable"):
        rs.map(3)
    with pytest.raises(TypeError, match="operators"):
        rs.range_(3).pipe(lambda x: x)


def test_piped_publisher_is_cold_and_reusable():
    pub = _unfusable([1, 2, 3])
    # create() is cold too: its function runs per subscriber
    piped = pub.pipe(rs.map(lambda x: x * 2))
    assert rs.to_list(piped) == [2, 4, 6]
    assert rs.to_list(piped) == [2, 4, 6]
