"""rs_spark.streams' Subscribers through the kit's blackbox and whitebox verifications."""

from __future__ import annotations

import inspect

from rs_spark.streams.aio import AsyncIteratorSubscriber
from rs_spark.streams.subscribers import BlockingIterator, CallbackSubscriber
from rs_spark.tck import (
    BLACKBOX_RULES,
    WHITEBOX_RULES,
    SubscriberBlackboxVerification,
    SubscriberPuppet,
    SubscriberWhiteboxVerification,
    Timeouts,
    untested_rules,
)

FAST = Timeouts(default=0.5, no_signals=0.05, poll=0.01, gc=0.5)


def _tests(cls):
    return {n for n, _ in inspect.getmembers(cls, inspect.isfunction) if n.startswith("test_")}


def _untested(cls):
    return {u.name for u in untested_rules(cls)}


def test_blackbox_has_the_26_jvm_tests_and_whitebox_the_27():
    """Tests for the required ones; the untested ones are listed by untested_rules, not run."""
    b_tests, w_tests = _tests(SubscriberBlackboxVerification), _tests(SubscriberWhiteboxVerification)
    assert len(BLACKBOX_RULES) == 26 and b_tests == set(BLACKBOX_RULES) - _untested(SubscriberBlackboxVerification)
    assert len(WHITEBOX_RULES) == 27 and w_tests == set(WHITEBOX_RULES) - _untested(SubscriberWhiteboxVerification)
    assert (len(b_tests), len(w_tests)) == (11, 14)
    b = [st for _, _, st in BLACKBOX_RULES.values()]
    w = [st for _, _, st in WHITEBOX_RULES.values()]
    assert (b.count("required"), b.count("untested")) == (11, 15)
    assert (w.count("required"), w.count("untested")) == (14, 13)
    jvm = {j for j, _, _ in BLACKBOX_RULES.values()}
    assert "untested_spec310_blackbox_requestMaySynchronouslyCallOnNextOnSubscriber" in jvm


class TestBlockingIteratorBlackbox(SubscriberBlackboxVerification):
    timeouts = FAST
    skips = {}

    def create_subscriber(self):
        return BlockingIterator(prefetch=8)


class TestCallbackSubscriberBlackbox(SubscriberBlackboxVerification):
    timeouts = FAST
    skips = {}

    def create_subscriber(self):
        return CallbackSubscriber(lambda x: None, request_size=4)


class TestAsyncIteratorSubscriberBlackbox(SubscriberBlackboxVerification):
    timeouts = FAST
    skips = {}

    def create_subscriber(self):
        return AsyncIteratorSubscriber(prefetch=4)


class _ProbedCallbackSubscriber(CallbackSubscriber):
    """CallbackSubscriber reporting to the whitebox probe, with demand driven by the puppet."""

    def __init__(self, probe):
        super().__init__(probe.register_on_next, probe.register_on_error, probe.register_on_complete, request_size=1)
        self._probe = probe

    def on_subscribe(self, subscription):
        if self._accept(subscription):
            # The puppet drives demand: no automatic request here.
            self._probe.register_on_subscribe(SubscriberPuppet(subscription.request, subscription.cancel))

    def on_next(self, item):
        if item is None:
            raise TypeError("on_next(None) (rule 2.13)")
        if self._terminal is None:
            self._on_next(item)


class TestCallbackSubscriberWhitebox(SubscriberWhiteboxVerification):
    timeouts = FAST
    skips = {}

    def create_subscriber(self, probe):
        return _ProbedCallbackSubscriber(probe)
