"""IteratorSubscription's per-element path under large demand: lazy pulls, exact stops."""

from __future__ import annotations

from rs_spark import streams as rs

from .strict import StrictSubscriber


class Pulled:
    """An iterator over ``n`` ints that counts how many were pulled, optionally failing at one."""

    def __init__(self, n: int, fail_at: int | None = None) -> None:
        self.n, self.fail_at, self.pulled = n, fail_at, 0

    def __iter__(self):
        return self

    def __next__(self) -> int:
        if self.pulled == self.fail_at:
            raise ValueError(f"boom at {self.pulled}")
        if self.pulled >= self.n:
            raise StopIteration
        self.pulled += 1
        return self.pulled - 1


class CancelAt(StrictSubscriber):
    def __init__(self, at: int) -> None:
        super().__init__(initial_request=1024)
        self.at = at

    def on_next(self, item):
        super().on_next(item)
        if len(self.items) == self.at:
            self.subscription.cancel()


def test_spec_1_8_cancel_in_on_next_stops_at_once_under_large_demand():
    it = Pulled(5000)
    s = CancelAt(3)
    rs.from_iterable(it).subscribe(s)
    assert s.items == [0, 1, 2]
    assert it.pulled == 3  # nothing pulled ahead of the demand actually delivered
    s.assert_clean()


def test_elements_are_pulled_one_at_a_time_as_they_are_delivered():
    it = Pulled(10)
    seen = []

    class Watch(StrictSubscriber):
        def on_next(self, item):
            seen.append(it.pulled)
            super().on_next(item)

    s = Watch(initial_request=1024)
    rs.from_iterable(it).subscribe(s)
    assert seen == list(range(1, 11))  # each element delivered before the next is pulled
    assert s.completed and s.items == list(range(10))
    s.assert_clean()


def test_iterator_error_delivers_what_came_before_then_on_error():
    s = StrictSubscriber(initial_request=1024)
    rs.from_iterable(Pulled(10, fail_at=4)).subscribe(s)
    assert s.items == [0, 1, 2, 3]
    assert isinstance(s.error, ValueError) and "boom at 4" in str(s.error)
    s.assert_clean()


def test_spec_1_1_exact_demand_then_completion_on_the_next_request():
    s = StrictSubscriber(initial_request=5)
    rs.range_(5).subscribe(s)
    assert s.items == [0, 1, 2, 3, 4] and not s.completed  # the end is found when more is asked
    s.request(1)
    assert s.completed
    s.assert_clean()


def test_spec_2_13_none_mid_run_delivers_the_prefix_then_type_error():
    s = StrictSubscriber(initial_request=1024)
    rs.from_iterable(iter([1, 2, None, 4])).subscribe(s)
    assert s.items == [1, 2] and isinstance(s.error, TypeError)
    s.assert_clean()
