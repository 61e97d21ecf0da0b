"""Stress: many threads request, cancel and push at once. No overshoot (1.1), no overlap
(1.3), nothing after a terminal (1.7), nothing lost that was not counted as dropped."""

from __future__ import annotations

import random
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rs_spark import streams as rs
from rs_spark.streams.demand import MAX_DEMAND, add_cap

from .strict import StrictSubscriber

pytestmark = pytest.mark.stress


@pytest.fixture(autouse=True)
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # force the GIL to change hands as often as possible
    yield
    sys.setswitchinterval(old)


def _run_threads(n, target):
    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
        assert not t.is_alive()


@pytest.mark.parametrize("source", ["range", "piped_unfused", "batch"])
def test_spec_1_1_and_1_3_concurrent_requests_never_overshoot_or_overlap(source):
    n_items = 5000
    if source == "range":
        pub = rs.range_(n_items)
    elif source == "piped_unfused":

        def run(em):
            for i in range(n_items):
                em.next(i)
            em.complete()

        pub = rs.create(run, buffer_size=n_items).pipe(rs.map(lambda x: x), rs.filter(lambda x: True))
    else:
        pub = rs.range_(n_items).pipe(rs.map(lambda x: x)).pipe(rs.batch(1))
    s = StrictSubscriber()
    pub.subscribe(s)
    rng = random.Random(7)
    plan = [[rng.randint(1, 5) for _ in range(300)] for _ in range(8)]

    def requester(i):
        for k in plan[i]:
            s.request(k)

    _run_threads(8, requester)
    total = sum(map(sum, plan))
    if total < n_items:
        assert len(s.items) == total
    s.request(n_items)
    s.await_done(10)
    s.assert_clean()
    flat = [x[0] if isinstance(x, list) else x for x in s.items]
    assert flat == list(range(n_items))


def _requesting_with_one_cancel(s, stop_at):
    """A worker for _run_threads: requests 3 at a time; worker 0 cancels at its ``stop_at``-th request."""

    def worker(i):
        for j in range(400):
            if i == 0 and j == stop_at:
                s.subscription.cancel()
            s.request(3)

    return worker


def test_spec_1_8_and_3_5_cancel_racing_requests_stops_signals_without_overlap():
    for trial in range(20):
        s = StrictSubscriber()
        rs.range_(10**9).subscribe(s)
        _run_threads(6, _requesting_with_one_cancel(s, stop_at=random.Random(trial).randint(10, 300)))
        n = len(s.items)
        s.request(100)
        assert len(s.items) == n, "signals continued after cancel (rule 1.8)"
        s.assert_clean()
        assert not s.done.is_set()


def test_create_with_concurrent_producers_and_requesters_loses_only_counted_drops():
    box = {}
    s = StrictSubscriber()
    pub = rs.create(lambda em: box.setdefault("em", em), rs.Overflow.DROP_NEWEST, buffer_size=64)
    pub.subscribe(s)
    em = box["em"]
    per_producer = 3000
    kept = [[] for _ in range(4)]

    def producer(i):
        for j in range(per_producer):
            if em.next((i, j)):
                kept[i].append(j)

    def requester(i):
        for _ in range(2000):
            s.request(2)

    threads = [threading.Thread(target=producer, args=(i,)) for i in range(4)]
    threads += [threading.Thread(target=requester, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    em.complete()
    s.request(MAX_DEMAND)
    s.await_done(10)
    s.assert_clean()
    assert len(s.items) + em.dropped == 4 * per_producer
    for i in range(4):
        mine = [j for (p, j) in s.items if p == i]
        assert mine == kept[i], "per-producer order must be kept and only counted drops missing"
    assert len(s.items) <= 12_000


def test_serial_signals_when_requests_come_from_on_next_and_other_threads_at_once():
    s = StrictSubscriber(initial_request=1, request_on_next=1)
    rs.range_(20_000).pipe(rs.map(lambda x: x * 2)).subscribe(s)
    start = threading.Barrier(3)

    def requester():
        start.wait(10)
        for _ in range(2_000):
            s.request(3)  # while on_next requests from the signalling thread (rule 2.7 / 1.3)

    threads = [threading.Thread(target=requester) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    s.await_done(30)
    s.assert_clean()  # no overlapping signals, nothing beyond demand
    assert s.completed and s.error is None
    assert s.items == [x * 2 for x in range(20_000)]


# -- demand arithmetic: properties --------------------------------------------------------


@given(st.integers(0, MAX_DEMAND), st.integers(0, MAX_DEMAND))
def test_spec_3_17_add_cap_saturates_and_is_commutative(a, b):
    r = add_cap(a, b)
    assert r == min(a + b, MAX_DEMAND)
    assert r == add_cap(b, a)
    assert r >= max(a, b)


@settings(max_examples=80, deadline=None)
@given(n_items=st.integers(0, 60), requests=st.lists(st.integers(1, 2**70), min_size=0, max_size=8))
def test_spec_3_8_requests_are_additive_up_to_saturation(n_items, requests):
    s = StrictSubscriber()
    rs.range_(n_items).subscribe(s)
    for k in requests:
        s.request(k)
    expected = n_items if sum(requests) >= n_items else sum(requests)
    assert len(s.items) == expected
    if requests and sum(requests) > n_items:
        assert s.completed
    s.assert_clean()
