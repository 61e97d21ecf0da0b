"""The processor verification must be able to fail: broken processors fail their rule's tests."""

from __future__ import annotations

import pytest

from rs_spark.streams.operators import MapProcessor
from rs_spark.tck import PROCESSOR_RULES, IdentityProcessorVerification, Timeouts
from rs_spark.tck.runner import run_verification

from .skips import UNICAST_PROCESSOR

FAST = Timeouts(default=0.2, no_signals=0.05, poll=0.01, gc=0.3)


class DelaysErrors(MapProcessor):
    """Breaks rule 4.2: holds an upstream error until the downstream requests."""

    def __init__(self):
        super().__init__(lambda x: x)
        self.held = None

    def on_error(self, error):
        if error is None:
            raise TypeError("on_error(None)")
        self.held = error

    def request(self, n):
        if self.held is not None:
            e, self.held = self.held, None
            super().on_error(e)
            return
        super().request(n)


class AcceptsNone(MapProcessor):
    """Breaks rule 2.13: on_next(None) returns normally instead of raising TypeError."""

    def __init__(self):
        super().__init__(lambda x: x)

    def on_next(self, item):
        if item is None:
            return
        super().on_next(item)


def _verification(cls):
    class V(IdentityProcessorVerification):
        __test__ = False
        timeouts = FAST
        skips = UNICAST_PROCESSOR  # MapProcessor serves one subscriber

        def create_identity_processor(self, buffer_size):
            return cls()

    return V()


EXPECTED = {
    DelaysErrors: {
        "test_must_immediately_pass_on_on_error_events_received_from_its_upstream_to_its_downstream",
        # the failed publisher (processor over a failing upstream) never errors without demand:
        "test_required_spec109_may_reject_calls_to_subscribe_if_publisher_is_unable_or_unwilling_to_serve_them_rejection_must_trigger_on_error_after_on_subscribe",  # noqa: E501
        "test_optional_spec104_must_signal_on_error_when_fails",
        # the stage's error reaches the probe only after a request, and these send it without one:
        "test_required_spec210_must_be_prepared_to_receive_an_on_error_signal_with_preceding_request_call",
        "test_required_spec210_must_be_prepared_to_receive_an_on_error_signal_without_preceding_request_call",
        # request(0) is answered upstream with on_error(ValueError), which this processor sits on:
        "test_required_spec309_request_zero_must_signal_value_error",
        "test_required_spec309_request_negative_number_must_signal_value_error",
        "test_optional_spec309_request_negative_number_may_signal_value_error_with_specific_message",  # not declared
    },
    AcceptsNone: {"test_required_spec213_on_next_must_throw_type_error_when_parameters_are_none"},
}


@pytest.mark.parametrize("cls", list(EXPECTED), ids=lambda c: c.__name__)
def test_broken_processor_fails_exactly_the_tests_for_the_rule_it_breaks(cls):
    outcomes = run_verification(_verification(cls), PROCESSOR_RULES)
    failed = {o.name for o in outcomes if o.result == "fail"}
    assert failed == EXPECTED[cls], {o.name: o.message for o in outcomes if o.result == "fail"}
