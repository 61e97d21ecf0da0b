"""QueueSubscription's own bound and overflow policy (what create() builds on), through its public methods."""

from __future__ import annotations

import pytest

from rs_spark.streams.drain import Enqueued, Overflow, QueueSubscription, subscribe_with

from .strict import StrictSubscriber


def _subscribed(**bound):
    s = StrictSubscriber()
    sub = QueueSubscription(s, **bound)
    subscribe_with(s, sub)
    return s, sub


@pytest.mark.parametrize(
    "overflow,third,delivered",
    [
        (Overflow.ERROR, Enqueued(False, "c", overflow=True), ["a", "b"]),  # refused: the producer fails the stream
        (Overflow.DROP_NEWEST, Enqueued(False, "c", overflow=True), ["a", "b"]),
        (Overflow.DROP_OLDEST, Enqueued(True, "a", overflow=True), ["b", "c"]),
        (Overflow.LATEST, Enqueued(True, "b", overflow=True), ["a", "c"]),
    ],
)
def test_a_bounded_queue_applies_its_overflow_policy_to_the_element_beyond_its_capacity(overflow, third, delivered):
    s, sub = _subscribed(capacity=2, overflow=overflow)
    assert [sub.enqueue(x) for x in "abc"] == [Enqueued(True), Enqueued(True), third]
    assert sub.queued == 2
    s.request(10)
    assert s.items == delivered
    s.assert_clean()


def test_a_bounded_queue_counts_only_the_elements_waiting_for_demand():
    s, sub = _subscribed(capacity=2, overflow=Overflow.DROP_NEWEST)
    s.request(1)
    assert sub.offer("a").kept  # delivered at once: it does not wait
    assert sub.offer("b").kept and sub.offer("c").kept  # two wait
    assert sub.offer("d") == Enqueued(False, "d", overflow=True)
    s.request(10)
    assert s.items == ["a", "b", "c"]


def test_an_unbounded_queue_keeps_everything_for_producers_that_bound_it_by_demand():
    s, sub = _subscribed()
    assert sub.capacity is None
    assert all(sub.enqueue(i).kept for i in range(10_000))
    sub.enqueue_all(range(10_000, 10_005))
    s.request(20_000)
    assert s.items == list(range(10_005))


def test_enqueue_all_refuses_a_bounded_queue_rather_than_bypass_its_policy():
    _, sub = _subscribed(capacity=3, overflow=Overflow.LATEST)
    with pytest.raises(TypeError, match="unbounded"):
        sub.enqueue_all([1, 2])
    assert sub.queued == 0


@pytest.mark.parametrize("capacity", [0, -1, True, 2.5, "3"])
def test_a_queue_capacity_must_be_an_int_of_at_least_one(capacity):
    with pytest.raises(ValueError, match="capacity"):
        QueueSubscription(StrictSubscriber(), capacity=capacity)
