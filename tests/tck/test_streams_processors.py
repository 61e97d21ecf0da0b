"""rs_spark.streams' operators as identity Processors through IdentityProcessorVerification."""

from __future__ import annotations

import inspect

from rs_spark import streams as rs
from rs_spark.tck import PROCESSOR_RULES, IdentityProcessorVerification, Timeouts, untested_rules

from .skips import UNICAST_PROCESSOR

FAST = Timeouts(default=0.5, no_signals=0.05, poll=0.01, gc=0.5)


def test_identity_processor_verification_has_the_68_jvm_tests():
    """48 run as tests; the 20 untested rules (7 publisher, 13 whitebox) are listed, not run."""
    methods = {
        n for n, _ in inspect.getmembers(IdentityProcessorVerification, inspect.isfunction) if n.startswith("test_")
    }
    untested = {u.name for u in untested_rules(IdentityProcessorVerification)}
    assert len(PROCESSOR_RULES) == 68 and len(untested) == 20
    assert methods == set(PROCESSOR_RULES) - untested and len(methods) == 48


class TestMapIdentity(IdentityProcessorVerification):
    timeouts = FAST
    skips = UNICAST_PROCESSOR

    def create_identity_processor(self, buffer_size):
        return rs.map(lambda x: x)


class TestFilterAlwaysTrue(IdentityProcessorVerification):
    timeouts = FAST
    skips = UNICAST_PROCESSOR

    def create_identity_processor(self, buffer_size):
        return rs.filter(lambda x: True)


class TestTakeUnlimited(IdentityProcessorVerification):
    timeouts = FAST
    skips = UNICAST_PROCESSOR

    def create_identity_processor(self, buffer_size):
        return rs.take(2**62)


class TestBatchOfOneThenUnwrap(IdentityProcessorVerification):
    """batch(1) regroups: its publisher side is checked through PublisherVerification-style
    delegation by unwrapping the one-element lists downstream of it."""

    timeouts = FAST
    skips = UNICAST_PROCESSOR

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
