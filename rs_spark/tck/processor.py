"""``IdentityProcessorVerification``: the JVM TCK's 68 processor tests (48 of them run; 20 are untested rules).

The 31 publisher tests run on the processor as a Publisher (fed by a helper publisher of
``elements`` elements); the 14 whitebox tests run on it as a Subscriber (its downstream is a
TCK subscriber that reports to the probe and takes the puppet's requests); three tests are
specific to processors. Implement ``create_identity_processor(buffer_size)``: a Processor
that passes elements through unchanged.
"""

from __future__ import annotations

from typing import Any

from ..streams.demand import MAX_DEMAND
from .env import ManualSubscriber, TCKFailure, Verification, pinned
from .publisher import RULES as PUBLISHER_RULES
from .publisher import PublisherVerification
from .skip import skip
from .subscriber import (
    WHITEBOX_RULES,
    Stage,
    SubscriberPuppet,
    SubscriberWhiteboxVerification,
    TCKTestError,
    WhiteboxSubscriberProbe,
)


class _Downstream:
    """The TCK's subscriber below the processor in the whitebox tests."""

    def __init__(self, probe: WhiteboxSubscriberProbe) -> None:
        self.probe = probe

    def on_subscribe(self, s: Any) -> None:
        self.probe.register_on_subscribe(SubscriberPuppet(s.request, s.cancel))

    def on_next(self, x: Any) -> None:
        self.probe.register_on_next(x)

    def on_error(self, e: BaseException) -> None:
        self.probe.register_on_error(e)

    def on_complete(self) -> None:
        self.probe.register_on_complete()


PROCESSOR_RULES: dict[str, tuple[str, str, str]] = {}
PROCESSOR_RULES.update(PUBLISHER_RULES)
PROCESSOR_RULES.update(WHITEBOX_RULES)
PROCESSOR_RULES.update(
    {
        "test_required_spec104_must_call_on_error_on_all_its_subscribers_if_it_encounters_a_non_recoverable_error": (
            "required_spec104_mustCallOnErrorOnAllItsSubscribersIfItEncountersANonRecoverableError",
            "1.4",
            "required",
        ),
        "test_must_immediately_pass_on_on_error_events_received_from_its_upstream_to_its_downstream": (
            "mustImmediatelyPassOnOnErrorEventsReceivedFromItsUpstreamToItsDownstream",
            "4.2",
            "required",
        ),
        "test_required_must_request_from_upstream_for_elements_that_have_been_requested_long_ago": (
            "required_mustRequestFromUpstreamForElementsThatHaveBeenRequestedLongAgo",
            "2.1",
            "required",
        ),
    }
)


class IdentityProcessorVerification(Verification):
    """Subclass and implement :meth:`create_identity_processor`; pytest runs its 48 tests (the JVM's 68
    less 20 untested rules, which :func:`rs_spark.tck.untested_rules` lists)."""

    __test__ = False
    _rules = PROCESSOR_RULES
    processor_buffer_size: int = 16

    # -- what the user implements ---------------------------------------------------------
    def create_identity_processor(self, buffer_size: int) -> Any:
        raise NotImplementedError

    def create_helper_publisher(self, elements: int) -> Any:
        """The upstream of the processor in the publisher tests (default: ``range_``)."""
        from ..streams import defer, range_

        if elements >= MAX_DEMAND:
            return defer(lambda: iter(int, 1))  # never ends
        return range_(elements)

    def create_failed_publisher(self) -> Any:
        """Default: the processor subscribed to a publisher that fails at once."""
        from ..streams import error

        proc = self.create_identity_processor(self.processor_buffer_size)
        error(TCKTestError("failed upstream")).subscribe(proc)
        return proc

    def create_element(self, i: int) -> Any:
        return i

    def max_elements_from_publisher(self) -> int:
        return 2**63 - 2

    def bounded_depth_of_on_next_and_request_recursion(self) -> int:
        return 1

    def skip_stochastic_tests(self) -> bool:
        return False

    stochastic_iterations: int = 100
    """Runs of the rule 1.3 test, as in :class:`PublisherVerification`."""

    def max_supported_subscribers(self) -> int:
        """How many subscribers the processor serves at once (1: unicast)."""
        return 1

    # -- the inner verifications -----------------------------------------------------------
    def _as_publisher(self) -> PublisherVerification:
        outer = self

        class Inner(PublisherVerification):
            __test__ = False
            timeouts = outer._timeouts()
            stochastic_iterations = outer.stochastic_iterations

            def create_publisher(self, elements: int) -> Any:
                proc = outer.create_identity_processor(outer.processor_buffer_size)
                outer.create_helper_publisher(elements).subscribe(proc)
                return proc

            def create_failed_publisher(self) -> Any:
                return outer.create_failed_publisher()

            def max_elements_from_publisher(self) -> int:
                return outer.max_elements_from_publisher()

            def bounded_depth_of_on_next_and_request_recursion(self) -> int:
                return outer.bounded_depth_of_on_next_and_request_recursion()

            def skip_stochastic_tests(self) -> bool:
                return outer.skip_stochastic_tests()

            def _allowed_skip(self, name: str) -> str | None:
                return outer._allowed_skip(name)  # the processor's skips decide its optional tests

            def _skips_owner(self) -> str:
                return outer._skips_owner()

        return Inner()

    def _as_subscriber(self) -> SubscriberWhiteboxVerification:
        outer = self

        class Inner(SubscriberWhiteboxVerification):
            __test__ = False
            timeouts = outer._timeouts()

            def create_subscriber(self, probe: WhiteboxSubscriberProbe) -> Any:
                proc = outer.create_identity_processor(outer.processor_buffer_size)
                proc.subscribe(_Downstream(probe))
                return proc

            def create_element(self, i: int) -> Any:
                return outer.create_element(i)

            def _allowed_skip(self, name: str) -> str | None:
                return outer._allowed_skip(name)

            def _skips_owner(self) -> str:
                return outer._skips_owner()

        return Inner()

    # -- the 3 processor tests ------------------------------------------------------------
    def test_required_spec104_must_call_on_error_on_all_its_subscribers_if_it_encounters_a_non_recoverable_error(
        self,
    ) -> None:
        if self.max_supported_subscribers() < 2:
            skip(
                "needs a processor that supports 2 subscribers; max_supported_subscribers() is "
                f"{self.max_supported_subscribers()}"
            )
        env = self._env()
        proc = self.create_identity_processor(self.processor_buffer_size)
        stage = Stage(env, proc)
        stage.subscribe()
        subs = [ManualSubscriber(env), ManualSubscriber(env)]
        for s in subs:
            proc.subscribe(s)
            s.await_subscription()
        subs[0].request(1)
        stage.expect_request()
        x = self.create_element(0)
        stage.send_next(x)
        if subs[0].next_element() != x:
            env.flop("the processor changed the element")
        ex = RuntimeError("Test exception")
        stage.send_error(ex)
        for _ in subs:
            env.expect_error(RuntimeError, "rule 1.4: every subscriber gets on_error")
        env.verify_no_async_errors(delay=False)

    def test_must_immediately_pass_on_on_error_events_received_from_its_upstream_to_its_downstream(self) -> None:
        env = self._env()
        proc = self.create_identity_processor(self.processor_buffer_size)
        stage = Stage(env, proc)
        stage.subscribe()
        down = ManualSubscriber(env)
        proc.subscribe(down)
        down.await_subscription()
        ex = TCKTestError("upstream failed")
        stage.send_error(ex)  # with no demand anywhere
        got = env.expect_error(TCKTestError, "rule 4.2: the processor passes on_error on at once")
        if got is not ex:
            raise TCKFailure(f"rule 4.2: the processor passed on {got!r}, not the upstream's error")
        env.verify_no_async_errors(delay=False)

    def test_required_must_request_from_upstream_for_elements_that_have_been_requested_long_ago(self) -> None:
        if self.max_supported_subscribers() < 2:
            skip(
                "needs a processor that supports 2 subscribers; max_supported_subscribers() is "
                f"{self.max_supported_subscribers()}"
            )
        env = self._env()
        proc = self.create_identity_processor(self.processor_buffer_size)
        stage = Stage(env, proc)
        stage.subscribe()
        s1 = ManualSubscriber(env)
        proc.subscribe(s1)
        s1.await_subscription()
        s1.request(20)
        stage.expect_request()
        stage.send_next(self.create_element(0))
        s1.next_element()
        s2 = ManualSubscriber(env)
        proc.subscribe(s2)
        s2.await_subscription()
        s2.request(1)
        stage.send_next(self.create_element(1))
        s1.next_element()
        s2.next_element()
        stage.send_complete()
        s1.expect_completion()
        s2.expect_completion()
        env.verify_no_async_errors(delay=False)


def _delegate(name: str, which: str) -> Any:
    def test(self: IdentityProcessorVerification) -> None:
        inner = self._as_publisher() if which == "publisher" else self._as_subscriber()
        getattr(inner, name)()

    test.__name__ = name
    test.__doc__ = f"Delegated {which} test {PROCESSOR_RULES[name][0]} (rule {PROCESSOR_RULES[name][1]})."
    return pinned(test)


for _name, (_, _, _status) in PUBLISHER_RULES.items():
    if _status != "untested":  # untested rules are no tests: rs_spark.tck.untested_rules lists them
        setattr(IdentityProcessorVerification, _name, _delegate(_name, "publisher"))
for _name, (_, _, _status) in WHITEBOX_RULES.items():
    if _status != "untested":
        setattr(IdentityProcessorVerification, _name, _delegate(_name, "subscriber"))
del _name, _status

__all__ = ["IdentityProcessorVerification", "PROCESSOR_RULES"]
