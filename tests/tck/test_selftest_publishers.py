"""The kit must be able to fail: broken publishers fail exactly the tests for the rule they break."""
from __future__ import annotations

import threading

import pytest

from rs_spark.tck import PublisherVerification, Timeouts

FAST = Timeouts(default=0.3, no_signals=0.05, poll=0.01, gc=0.3)


class Naive:
    """A synchronous publisher of range(n) with one bug switched on by name."""

    keep = []  # the 'leak' bug keeps subscribers here

    def __init__(self, n, bug=None):
        self.n, self.bug = n, bug

    def subscribe(self, s):
        if s is None:
            if self.bug == "no_type_error_on_none":
                return
            raise TypeError("subscribe(None) (rule 1.9)")
        pub = self
        state = {"i": 0, "done": False, "cancelled": False}
        if self.bug == "leak":
            Naive.keep.append(s)

        class Sub:
            def request(self, n):
                if state["cancelled"] or state["done"]:
                    if pub.bug == "signal_after_complete":
                        s.on_next(-1)
                    return
                if n <= 0:
                    if pub.bug != "ignore_request_zero":
                        state["done"] = True
                        s.on_error(ValueError(f"request({n}): rule 3.9"))
                    return
                if pub.bug == "overshoot":
                    n += 1
                for _ in range(n):  # no trampoline: recursion when on_next requests again
                    if state["cancelled"] or state["i"] >= pub.n:
                        break
                    state["i"] += 1
                    s.on_next(state["i"] - 1)
                if state["i"] >= pub.n and not state["done"] and not state["cancelled"]:
                    state["done"] = True
                    s.on_complete()

            def cancel(self):
                state["cancelled"] = True
        s.on_subscribe(Sub())


def _verification(bug):
    class V(PublisherVerification):
        __test__ = False
        timeouts = FAST

        def create_publisher(self, elements):
            return Naive(elements, bug)

        def bounded_depth_of_on_next_and_request_recursion(self):
            return 1
    return V()


@pytest.mark.parametrize("bug,test", [
    ("overshoot", "test_required_spec101_subscription_request_must_result_in_the_correct_number_of_produced_elements"),
    ("ignore_request_zero", "test_required_spec309_request_zero_must_signal_value_error"),
    ("ignore_request_zero", "test_required_spec309_request_negative_number_must_signal_value_error"),
    ("leak", "test_required_spec313_cancel_must_make_the_publisher_eventually_drop_all_references_to_the_subscriber"),
    ("no_type_error_on_none", "test_required_spec109_subscribe_throw_type_error_on_none_subscriber"),
    ("signal_after_complete", "test_required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled"),
    (None, "test_required_spec303_must_not_allow_unbounded_recursion"),  # Naive recurses by design
])
def test_broken_publisher_fails_the_test_for_its_rule(bug, test):
    with pytest.raises(AssertionError):
        getattr(_verification(bug), test)()
    Naive.keep.clear()


@pytest.mark.parametrize("bug", ["overshoot", "ignore_request_zero", "leak", "no_type_error_on_none",
                                 "signal_after_complete"])
def test_broken_publisher_still_passes_an_unrelated_rule(bug):
    # rule 1.2 (fewer than requested, then complete) holds for every variant
    _verification(bug).test_required_spec102_may_signal_less_than_requested_and_terminate_subscription()
    Naive.keep.clear()


def overshooting(elements):
    """A factory for the CLI test: breaks rule 1.1."""
    return Naive(elements, "overshoot")
