"""The subscriber verifications must be able to fail: each broken subscriber fails its rule's test."""

from __future__ import annotations

import pytest

from rs_spark.tck import SubscriberBlackboxVerification, SubscriberPuppet, SubscriberWhiteboxVerification, Timeouts

FAST = Timeouts(default=0.2, no_signals=0.05, poll=0.01, gc=0.2)


class Broken:
    """A subscriber with one bug switched on by name."""

    def __init__(self, bug, probe=None):
        self.bug, self.probe, self.s = bug, probe, None

    def on_subscribe(self, s):
        if s is None and self.bug != "accepts_none":
            raise TypeError("on_subscribe(None)")
        if self.s is not None:
            if self.bug != "keeps_second_subscription":
                s.cancel()
            return
        self.s = s
        if self.probe is not None:
            self.probe.register_on_subscribe(SubscriberPuppet(s.request, s.cancel))
        elif self.bug != "never_requests":
            s.request(1)

    def on_next(self, x):
        if x is None and self.bug != "accepts_none":
            raise TypeError("on_next(None)")
        if self.probe is not None and self.bug != "drops_elements":
            self.probe.register_on_next(x)

    def on_error(self, e):
        if e is None and self.bug != "accepts_none":
            raise TypeError("on_error(None)")
        if self.bug == "requests_in_terminal":
            self.s.request(1)
        if self.probe is not None:
            self.probe.register_on_error(e)

    def on_complete(self):
        if self.bug == "requests_in_terminal":
            self.s.request(1)
        if self.probe is not None:
            self.probe.register_on_complete()


def blackbox(bug):
    class V(SubscriberBlackboxVerification):
        __test__ = False
        timeouts = FAST

        def create_subscriber(self):
            return Broken(bug)

    return V()


def whitebox(bug):
    class V(SubscriberWhiteboxVerification):
        __test__ = False
        timeouts = FAST

        def create_subscriber(self, probe):
            return Broken(bug, probe)

    return V()


@pytest.mark.parametrize(
    "make,bug,test",
    [
        (blackbox, "never_requests", "test_required_spec201_blackbox_must_signal_demand_via_subscription_request"),
        (
            blackbox,
            "requests_in_terminal",
            "test_required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_complete",
        ),
        (
            blackbox,
            "requests_in_terminal",
            "test_required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_error",
        ),
        (
            blackbox,
            "keeps_second_subscription",
            "test_required_spec205_blackbox_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another_on_subscribe_signal",
        ),  # noqa: E501
        (
            blackbox,
            "accepts_none",
            "test_required_spec213_blackbox_on_next_must_throw_type_error_when_parameters_are_none",
        ),
        (whitebox, "drops_elements", "test_required_exercise_whitebox_happy_path"),
        (
            whitebox,
            "requests_in_terminal",
            "test_required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_complete",
        ),
        (whitebox, "accepts_none", "test_required_spec213_on_error_must_throw_type_error_when_parameters_are_none"),
    ],
)
def test_broken_subscriber_fails_the_test_for_its_rule(make, bug, test):
    with pytest.raises(AssertionError):
        getattr(make(bug), test)()


@pytest.mark.parametrize(
    "make,bug,test",
    [
        (
            blackbox,
            "never_requests",
            "test_required_spec209_blackbox_must_be_prepared_to_receive_an_on_complete_signal_without_preceding_request_call",
        ),  # noqa: E501
        (
            blackbox,
            "accepts_none",
            "test_required_spec209_blackbox_must_be_prepared_to_receive_an_on_complete_signal_without_preceding_request_call",
        ),  # noqa: E501
        (
            whitebox,
            "drops_elements",
            "test_required_spec209_must_be_prepared_to_receive_an_on_complete_signal_without_preceding_request_call",
        ),
    ],
)
def test_broken_subscriber_passes_unrelated_rules(make, bug, test):
    getattr(make(bug), test)()
