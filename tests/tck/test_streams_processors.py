"""rs_spark.streams' operators as identity Processors through IdentityProcessorVerification."""

from __future__ import annotations

import inspect

from rs_spark import streams as rs
from rs_spark.tck import PROCESSOR_RULES, IdentityProcessorVerification, Timeouts

FAST = Timeouts(default=0.5, no_signals=0.05, poll=0.01, gc=0.5)


def test_identity_processor_verification_has_the_68_jvm_tests():
    methods = {
        n for n, _ in inspect.getmembers(IdentityProcessorVerification, inspect.isfunction) if n.startswith("test_")
    }
    assert len(PROCESSOR_RULES) == 68 and methods == set(PROCESSOR_RULES)


class TestMapIdentity(IdentityProcessorVerification):
    timeouts = FAST

    def create_identity_processor(self, buffer_size):
        return rs.map(lambda x: x)


class TestFilterAlwaysTrue(IdentityProcessorVerification):
    timeouts = FAST

    def create_identity_processor(self, buffer_size):
        return rs.filter(lambda x: True)


class TestTakeUnlimited(IdentityProcessorVerification):
    timeouts = FAST

    def create_identity_processor(self, buffer_size):
        return rs.take(2**62)


class TestBatchOfOneThenUnwrap(IdentityProcessorVerification):
    """batch(1) regroups: its publisher side is checked through PublisherVerification-style
    delegation by unwrapping the one-element lists downstream of it."""

    timeouts = FAST

    def create_identity_processor(self, buffer_size):
        return _Unwrapped()


class _Unwrapped:
    """batch(1) followed by map(lambda b: b[0]): an identity Processor built from two stages."""

    def __init__(self):
        self._in = rs.batch(1)
        self._out = rs.map(lambda b: b[0])
        self._in.subscribe(self._out)

    def on_subscribe(self, s):
        self._in.on_subscribe(s)

    def on_next(self, x):
        self._in.on_next(x)

    def on_error(self, e):
        self._in.on_error(e)

    def on_complete(self):
        self._in.on_complete()

    def subscribe(self, s):
        self._out.subscribe(s)
