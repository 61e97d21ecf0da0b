"""The kit must be able to fail: broken publishers fail exactly the tests for the rule they break."""
from __future__ import annotations

import pytest

from rs_spark.tck import PUBLISHER_RULES, PublisherVerification, Timeouts
from rs_spark.tck.runner import run_verification

FAST = Timeouts(default=0.3, no_signals=0.05, poll=0.01, gc=0.3)


class Naive:
    """A synchronous publisher of range(n), correct unless one bug is switched on by name."""

    keep = []  # the 'leak' bug keeps subscribers here

    def __init__(self, n, bug=None):
        self.n, self.bug = n, bug

    def subscribe(self, s):
        if s is None:
            if self.bug == "no_type_error_on_none":
                return
            raise TypeError("subscribe(None) (rule 1.9)")
        pub = self
        st = {"i": 0, "done": False, "cancelled": False, "demand": 0, "emitting": False}
        if self.bug == "leak":
            Naive.keep.append(s)

        def emit():
            while st["demand"] > 0 and not st["cancelled"] and st["i"] < pub.n:
                st["demand"] -= 1
                st["i"] += 1
                s.on_next(st["i"] - 1)
            if st["i"] >= pub.n and not st["done"] and not st["cancelled"]:
                st["done"] = True
                s.on_complete()

        class Sub:
            def request(self, n):
                if st["done"]:
                    if pub.bug == "signal_after_complete":
                        s.on_next(-1)
                    return
                if st["cancelled"]:
                    return
                if n <= 0:
                    if pub.bug != "ignore_request_zero":
                        st["done"] = True
                        s.on_error(ValueError(f"request({n}): rule 3.9"))
                    return
                st["demand"] += n + (1 if pub.bug == "overshoot" else 0)
                if pub.bug == "recursion":
                    emit()  # no trampoline: on_next -> request -> on_next -> ...
                    return
                if st["emitting"]:
                    return  # the running loop picks the demand up (rule 3.3)
                st["emitting"] = True
                try:
                    emit()
                finally:
                    st["emitting"] = False

            def cancel(self):
                st["cancelled"] = True
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


AFTER_COMPLETE = {  # every test that requests again once the stream completed
    "test_required_create_publisher1_must_produce_a_stream_of_exactly_1_element",
    "test_required_create_publisher3_must_produce_a_stream_of_exactly_3_elements",
    "test_required_spec105_must_signal_on_complete_when_finite_stream_terminates",
    "test_required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled",
    "test_required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe",
    "test_required_spec317_must_support_a_cumulative_pending_element_count_up_to_max_demand",
}

EXPECTED = {
    None: set(),
    "overshoot": {
        "test_required_spec101_subscription_request_must_result_in_the_correct_number_of_produced_elements",
        "test_required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling",
    },
    "ignore_request_zero": {
        "test_required_spec309_request_zero_must_signal_value_error",
        "test_required_spec309_request_negative_number_must_signal_value_error",
    },
    "leak": {"test_required_spec313_cancel_must_make_the_publisher_eventually_drop_all_references_to_the_subscriber"},
    "no_type_error_on_none": {"test_required_spec109_subscribe_throw_type_error_on_none_subscriber"},
    "recursion": {"test_required_spec303_must_not_allow_unbounded_recursion"},
    "signal_after_complete": AFTER_COMPLETE,
}


@pytest.mark.parametrize("bug", list(EXPECTED), ids=lambda b: str(b))
def test_broken_publisher_fails_exactly_the_tests_for_the_rule_it_breaks(bug):
    try:
        outcomes = run_verification(_verification(bug), PUBLISHER_RULES)
    finally:
        Naive.keep.clear()
    failed = {o.name for o in outcomes if o.result == "fail"}
    assert failed == EXPECTED[bug], {o.name: o.message for o in outcomes if o.result == "fail"}


def overshooting(elements):
    """A factory for the CLI test: breaks rule 1.1."""
    return Naive(elements, "overshoot")
