"""``PublisherVerification``: the JVM TCK's 38 publisher tests, one method each, named by rule.

Subclass it in a pytest module and implement :meth:`create_publisher`; pytest collects every
``test_*`` method. Statuses follow the JVM TCK: ``required`` tests must pass; ``optional``
ones must pass too unless the verification declares the rule not implemented (``skips``);
``stochastic`` ones can be turned off; ``untested`` rules are no tests here (no test can check
them): :data:`UNTESTED` says why, and :func:`rs_spark.tck.untested_rules` lists them.

Why this module is long: it is one class with one method per rule, as the JVM TCK's
``PublisherVerification`` is; splitting the rules across modules would hide which ones are tested.
"""

from __future__ import annotations

import gc
import random
import sys
import threading
import time
import weakref
from collections.abc import Callable
from types import FrameType
from typing import Any

from ..streams.demand import MAX_DEMAND
from .env import END, ManualSubscriber, TCKFailure, TestEnvironment, Verification
from .skip import TckSkipped, skip, untested

MAX = MAX_DEMAND

# Python test name -> (JVM test name, rule, status). Status: required / optional / stochastic / untested.
RULES: dict[str, tuple[str, str, str]] = {
    "test_required_create_publisher1_must_produce_a_stream_of_exactly_1_element": (
        "required_createPublisher1MustProduceAStreamOfExactly1Element",
        "-",
        "required",
    ),
    "test_required_create_publisher3_must_produce_a_stream_of_exactly_3_elements": (
        "required_createPublisher3MustProduceAStreamOfExactly3Elements",
        "-",
        "required",
    ),
    "test_required_validate_max_elements_from_publisher": (
        "required_validate_maxElementsFromPublisher",
        "-",
        "required",
    ),
    "test_required_validate_bounded_depth_of_on_next_and_request_recursion": (
        "required_validate_boundedDepthOfOnNextAndRequestRecursion",
        "-",
        "required",
    ),
    "test_required_spec101_subscription_request_must_result_in_the_correct_number_of_produced_elements": (
        "required_spec101_subscriptionRequestMustResultInTheCorrectNumberOfProducedElements",
        "1.1",
        "required",
    ),
    "test_required_spec102_may_signal_less_than_requested_and_terminate_subscription": (
        "required_spec102_maySignalLessThanRequestedAndTerminateSubscription",
        "1.2",
        "required",
    ),
    "test_stochastic_spec103_must_signal_on_methods_sequentially": (
        "stochastic_spec103_mustSignalOnMethodsSequentially",
        "1.3",
        "stochastic",
    ),
    "test_optional_spec104_must_signal_on_error_when_fails": (
        "optional_spec104_mustSignalOnErrorWhenFails",
        "1.4",
        "optional",
    ),
    "test_required_spec105_must_signal_on_complete_when_finite_stream_terminates": (
        "required_spec105_mustSignalOnCompleteWhenFiniteStreamTerminates",
        "1.5",
        "required",
    ),
    "test_optional_spec105_empty_stream_must_terminate_by_signalling_on_complete": (
        "optional_spec105_emptyStreamMustTerminateBySignallingOnComplete",
        "1.5",
        "optional",
    ),
    untested(
        "test_untested_spec106_must_consider_subscription_cancelled_after_on_error_or_on_complete_has_been_called",
        "what the publisher considers cancelled cannot be observed from outside",
    ): (
        "untested_spec106_mustConsiderSubscriptionCancelledAfterOnErrorOrOnCompleteHasBeenCalled",
        "1.6",
        "untested",
    ),
    "test_required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled": (
        "required_spec107_mustNotEmitFurtherSignalsOnceOnCompleteHasBeenSignalled",
        "1.7",
        "required",
    ),
    untested(
        "test_untested_spec107_must_not_emit_further_signals_once_on_error_has_been_signalled",
        "needs a publisher that fails after elements, which create_publisher does not provide",
    ): (
        "untested_spec107_mustNotEmitFurtherSignalsOnceOnErrorHasBeenSignalled",
        "1.7",
        "untested",
    ),
    untested(
        "test_untested_spec108_possibly_canceled_subscription_should_not_receive_on_error_or_on_complete_signals",
        "a recommendation (SHOULD), and a race with cancel no test can provoke reliably",
    ): (
        "untested_spec108_possiblyCanceledSubscriptionShouldNotReceiveOnErrorOrOnCompleteSignals",
        "1.8",
        "untested",
    ),
    untested(
        "test_untested_spec109_subscribe_should_not_throw_non_fatal_throwable",
        "every test that subscribes would fail if subscribe raised; no test of its own",
    ): (
        "untested_spec109_subscribeShouldNotThrowNonFatalThrowable",
        "1.9",
        "untested",
    ),
    "test_required_spec109_subscribe_throw_type_error_on_none_subscriber": (
        "required_spec109_subscribeThrowNPEOnNullSubscriber",
        "1.9",
        "required",
    ),
    "test_required_spec109_must_issue_on_subscribe_for_non_none_subscriber": (
        "required_spec109_mustIssueOnSubscribeForNonNullSubscriber",
        "1.9",
        "required",
    ),
    "test_required_spec109_may_reject_calls_to_subscribe_if_publisher_is_unable_or_unwilling_to_serve_them_rejection_must_trigger_on_error_after_on_subscribe": (  # noqa: E501 - the TCK test name, whole so it can be searched
        "required_spec109_mayRejectCallsToSubscribeIfPublisherIsUnableOrUnwillingToServeThem"
        "RejectionMustTriggerOnErrorAfterOnSubscribe",
        "1.9",
        "required",
    ),
    untested(
        "test_untested_spec110_reject_a_subscription_request_if_the_same_subscriber_subscribes_twice",
        "the spec leaves the outcome of a second subscribe by the same subscriber open",
    ): (
        "untested_spec110_rejectASubscriptionRequestIfTheSameSubscriberSubscribesTwice",
        "1.10",
        "untested",
    ),
    "test_optional_spec111_may_support_multi_subscribe": (
        "optional_spec111_maySupportMultiSubscribe",
        "1.11",
        "optional",
    ),
    "test_optional_spec111_registered_subscribers_must_receive_on_next_or_on_complete_signals": (
        "optional_spec111_registeredSubscribersMustReceiveOnNextOrOnCompleteSignals",
        "1.11",
        "optional",
    ),
    "test_optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_to_all_of_its_subscribers_when_requesting_one_by_one": (  # noqa: E501 - the TCK test name, whole so it can be searched
        "optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribers"
        "WhenRequestingOneByOne",
        "1.11",
        "optional",
    ),
    "test_optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_to_all_of_its_subscribers_when_requesting_many_upfront": (  # noqa: E501 - the TCK test name, whole so it can be searched
        "optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribers"
        "WhenRequestingManyUpfront",
        "1.11",
        "optional",
    ),
    "test_optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_to_all_of_its_subscribers_when_requesting_many_upfront_and_complete_as_expected": (  # noqa: E501 - the TCK test name, whole so it can be searched
        "optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribers"
        "WhenRequestingManyUpfrontAndCompleteAsExpected",
        "1.11",
        "optional",
    ),
    "test_required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe": (
        "required_spec302_mustAllowSynchronousRequestCallsFromOnNextAndOnSubscribe",
        "3.2",
        "required",
    ),
    "test_required_spec303_must_not_allow_unbounded_recursion": (
        "required_spec303_mustNotAllowUnboundedRecursion",
        "3.3",
        "required",
    ),
    untested(
        "test_untested_spec304_request_should_not_perform_heavy_computations",
        "no test can tell heavy from light",
    ): (
        "untested_spec304_requestShouldNotPerformHeavyComputations",
        "3.4",
        "untested",
    ),
    untested(
        "test_untested_spec305_cancel_must_not_synchronously_perform_heavy_computation",
        "no test can tell heavy from light (responsiveness of cancel)",
    ): (
        "untested_spec305_cancelMustNotSynchronouslyPerformHeavyComputation",
        "3.5",
        "untested",
    ),
    "test_required_spec306_after_subscription_is_cancelled_request_must_be_nops": (
        "required_spec306_afterSubscriptionIsCancelledRequestMustBeNops",
        "3.6",
        "required",
    ),
    "test_required_spec307_after_subscription_is_cancelled_additional_cancelations_must_be_nops": (
        "required_spec307_afterSubscriptionIsCancelledAdditionalCancelationsMustBeNops",
        "3.7",
        "required",
    ),
    "test_required_spec309_request_zero_must_signal_value_error": (
        "required_spec309_requestZeroMustSignalIllegalArgumentException",
        "3.9",
        "required",
    ),
    "test_required_spec309_request_negative_number_must_signal_value_error": (
        "required_spec309_requestNegativeNumberMustSignalIllegalArgumentException",
        "3.9",
        "required",
    ),
    "test_optional_spec309_request_negative_number_may_signal_value_error_with_specific_message": (
        "optional_spec309_requestNegativeNumberMaySignalIllegalArgumentExceptionWithSpecificMessage",
        "3.9",
        "optional",
    ),
    "test_required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling": (
        "required_spec312_cancelMustMakeThePublisherToEventuallyStopSignaling",
        "3.12",
        "required",
    ),
    "test_required_spec313_cancel_must_make_the_publisher_eventually_drop_all_references_to_the_subscriber": (
        "required_spec313_cancelMustMakeThePublisherEventuallyDropAllReferencesToTheSubscriber",
        "3.13",
        "required",
    ),
    "test_required_spec317_must_support_a_pending_element_count_up_to_max_demand": (
        "required_spec317_mustSupportAPendingElementCountUpToLongMaxValue",
        "3.17",
        "required",
    ),
    "test_required_spec317_must_support_a_cumulative_pending_element_count_up_to_max_demand": (
        "required_spec317_mustSupportACumulativePendingElementCountUpToLongMaxValue",
        "3.17",
        "required",
    ),
    "test_required_spec317_must_not_signal_on_error_when_pending_above_max_demand": (
        "required_spec317_mustNotSignalOnErrorWhenPendingAboveLongMaxValue",
        "3.17",
        "required",
    ),
}


class PublisherVerification(Verification):
    """Base class: subclass, implement :meth:`create_publisher`, and pytest runs every rule."""

    __test__ = False
    _rules = RULES

    # -- what the user implements ---------------------------------------------------------
    def create_publisher(self, elements: int) -> Any:
        """A Publisher of exactly ``elements`` elements then on_complete (MAX: never completes)."""
        raise NotImplementedError

    def create_failed_publisher(self) -> Any:
        """A Publisher that signals on_error after on_subscribe, or None if there is none."""
        return None

    def max_elements_from_publisher(self) -> int:
        return MAX - 1

    def bounded_depth_of_on_next_and_request_recursion(self) -> int:
        return 1

    def skip_stochastic_tests(self) -> bool:
        return False

    stochastic_iterations: int = 100
    """How many fresh publishers the rule 1.3 test runs through (the JVM uses 100)."""

    # -- harness ----------------------------------------------------------------------------
    def _active(
        self, elements: int, completion: bool, body: Callable[[Any, TestEnvironment], None], optional: bool = False
    ) -> None:
        """The JVM's activePublisherTest / optionalActivePublisherTest."""
        if elements > self.max_elements_from_publisher():
            skip(
                f"needs a publisher of {elements} elements; max_elements_from_publisher() is "
                f"{self.max_elements_from_publisher()}"
            )
        if completion and self.max_elements_from_publisher() == MAX:
            skip("needs a publisher that completes; max_elements_from_publisher() is MAX (never completes)")
        env = self._env()
        pub = self.create_publisher(elements)
        if optional:
            try:
                body(pub, env)
            except TckSkipped:
                raise
            except (AssertionError, Exception) as exc:
                # "not implemented" only where the verification says so, never for any error
                why = self._allowed_skip(self._running)
                if why is None:
                    rule = self._rule_of(self._running)
                    raise TCKFailure(
                        f"optional rule {rule}: {exc}. An optional test must pass unless the verification "
                        f"declares the rule not implemented: skips = {{{rule!r}: 'why'}} on {self._skips_owner()}"
                    ) from exc
                skip(f"the publisher does NOT implement this OPTIONAL requirement: {exc}")
            return
        body(pub, env)
        env.verify_no_async_errors(delay=False)

    def _manual(self, pub: Any, env: TestEnvironment) -> ManualSubscriber:
        s = ManualSubscriber(env)
        pub.subscribe(s)
        s.await_subscription()
        env.verify_no_async_errors(delay=False)
        return s

    def _failed(self) -> Any:
        pub = self.create_failed_publisher()
        if pub is None:
            skip("create_failed_publisher() returned None: no failed publisher to test")
        return pub

    # -- the 31 tests (the JVM's 38 less its 7 untested rules) ---------------------------------
    def test_required_create_publisher1_must_produce_a_stream_of_exactly_1_element(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            s.request(1)
            if s.next_or_end() in (None, END):
                raise TCKFailure("create_publisher(1) produced no element")
            s.request(1)
            s.expect_completion("on_complete after exactly 1 element")

        self._active(1, True, body)

    def test_required_create_publisher3_must_produce_a_stream_of_exactly_3_elements(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            for i in range(3):
                s.request(1)
                if s.next_or_end() in (None, END):
                    raise TCKFailure(f"create_publisher(3) produced only {i} elements")
            s.request(1)
            s.expect_completion("on_complete after exactly 3 elements")

        self._active(3, True, body)

    def test_required_validate_max_elements_from_publisher(self) -> None:
        assert self.max_elements_from_publisher() >= 0, "max_elements_from_publisher() must be >= 0"

    def test_required_validate_bounded_depth_of_on_next_and_request_recursion(self) -> None:
        assert self.bounded_depth_of_on_next_and_request_recursion() >= 1, (
            "bounded_depth_of_on_next_and_request_recursion() must be >= 1"
        )

    def test_required_spec101_subscription_request_must_result_in_the_correct_number_of_produced_elements(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            try:
                s.expect_none("rule 1.1: nothing may arrive before request()")
                s.request(1)
                s.next_element("the 1 requested element")
                s.expect_none("rule 1.1: after request(1) exactly one element")
                s.request(1)
                s.request(2)
                s.next_elements(3, "of 3 requested elements")
                s.expect_none("rule 1.1: no element beyond the 4 requested")
            finally:
                s.cancel()

        self._active(5, False, body)

    def test_required_spec102_may_signal_less_than_requested_and_terminate_subscription(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            s.request(10)
            s.next_elements(3)
            s.expect_completion("rule 1.2: on_complete after 3 of 10 requested")

        self._active(3, True, body)

    def test_stochastic_spec103_must_signal_on_methods_sequentially(self) -> None:
        if self.skip_stochastic_tests():
            skip("stochastic tests are turned off by skip_stochastic_tests()")

        def body(pub: Any, env: TestEnvironment) -> None:
            _SequentialCheck(env, pub, 10).run()

        for _ in range(self.stochastic_iterations):
            self._active(10, True, body)

    def test_optional_spec104_must_signal_on_error_when_fails(self) -> None:
        pub = self._failed()
        env = self._env()
        events: list[str] = []
        done = threading.Event()

        class Sub:
            def on_subscribe(self, s: Any) -> None:
                events.append("on_subscribe")

            def on_next(self, x: Any) -> None:
                env.flop(f"rule 1.4: unexpected on_next({x!r}) from a failed publisher")

            def on_error(self, e: BaseException) -> None:
                events.append("on_error")
                done.set()

            def on_complete(self) -> None:
                env.flop("rule 1.4: unexpected on_complete from a failed publisher")

        try:
            pub.subscribe(Sub())
        except Exception as exc:
            raise TCKFailure(
                f"rule 1.4: the publisher raised {type(exc).__name__} from subscribe instead of signalling on_error"
            ) from exc
        if not done.wait(env.t.default):
            raise TCKFailure("rule 1.4: no on_error within the timeout")
        if events != ["on_subscribe", "on_error"]:
            raise TCKFailure(f"rule 1.4: expected on_subscribe then on_error, got {events}")
        env.verify_no_async_errors()

    def test_required_spec105_must_signal_on_complete_when_finite_stream_terminates(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            for _ in range(3):
                s.request(1)
                s.next_element()
            s.request(1)
            s.expect_completion("rule 1.5: on_complete after the last element")
            s.expect_none("rule 1.7: nothing after on_complete")

        self._active(3, True, body)

    def test_optional_spec105_empty_stream_must_terminate_by_signalling_on_complete(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            s.request(1)
            s.expect_completion("rule 1.5: an empty stream completes")
            s.expect_none("nothing after on_complete")
            env.verify_no_async_errors(delay=False)

        self._active(0, True, body, optional=True)

    def test_required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            s.request(10)
            s.next_element()
            s.expect_completion()
            s.request(10)
            s.expect_none("rule 1.7: no signal after on_complete")

        self._active(1, True, body)

    def test_required_spec109_subscribe_throw_type_error_on_none_subscriber(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            try:
                pub.subscribe(None)
            except TypeError:
                return
            raise TCKFailure("rule 1.9: subscribe(None) must raise TypeError")

        self._active(0, False, body)

    def test_required_spec109_must_issue_on_subscribe_for_non_none_subscriber(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            got = threading.Event()
            box: list[Any] = []

            class Sub:
                def on_subscribe(self, s: Any) -> None:
                    if got.is_set():
                        env.flop("rule 1.9: on_subscribe called twice")
                    box.append(s)
                    got.set()

                def on_next(self, x: Any) -> None:
                    if not got.is_set():
                        env.flop("rule 1.9: on_next before on_subscribe")

                def on_error(self, e: BaseException) -> None:
                    if not got.is_set():
                        env.flop("rule 1.9: on_error before on_subscribe", e)

                def on_complete(self) -> None:
                    if not got.is_set():
                        env.flop("rule 1.9: on_complete before on_subscribe")

            pub.subscribe(Sub())
            try:
                if not got.wait(env.t.default):
                    env.flop("rule 1.9: no on_subscribe within the timeout")
                env.verify_no_async_errors(delay=False)
            finally:
                if box:
                    box[0].cancel()

        self._active(0, False, body)

    def test_required_spec109_may_reject_calls_to_subscribe_if_publisher_is_unable_or_unwilling_to_serve_them_rejection_must_trigger_on_error_after_on_subscribe(  # noqa: E501 - the JVM TCK\'s method name
        self,
    ) -> None:
        pub = self._failed()
        env = self._env()
        subscribed, errored = threading.Event(), threading.Event()

        class Sub:
            def on_subscribe(self, s: Any) -> None:
                if subscribed.is_set():
                    env.flop("rule 1.9: on_subscribe called twice")
                subscribed.set()

            def on_next(self, x: Any) -> None:
                env.flop(f"rule 1.9: unexpected on_next({x!r})")

            def on_error(self, e: BaseException) -> None:
                if not subscribed.is_set():
                    env.flop("rule 1.9: on_error before on_subscribe")
                if errored.is_set():
                    env.flop("rule 1.7: on_error called twice")
                errored.set()

            def on_complete(self) -> None:
                env.flop("rule 1.9: unexpected on_complete")

        try:
            pub.subscribe(Sub())
        except Exception as exc:
            raise TCKFailure(
                f"rule 1.9: the publisher raised {type(exc).__name__} from subscribe instead of "
                "rejecting with on_subscribe + on_error"
            ) from exc
        if not subscribed.wait(env.t.default):
            env.flop("rule 1.9: no on_subscribe")
        if not errored.wait(env.t.default):
            env.flop("rule 1.9: no on_error after on_subscribe")
        env.verify_no_async_errors(delay=False)

    def test_optional_spec111_may_support_multi_subscribe(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s1, s2 = self._manual(pub, env), self._manual(pub, env)
            env.verify_no_async_errors()
            s1.cancel()
            s2.cancel()

        self._active(1, False, body, optional=True)

    def test_optional_spec111_registered_subscribers_must_receive_on_next_or_on_complete_signals(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s1, s2 = self._manual(pub, env), self._manual(pub, env)
            for s in (s1, s2):
                s.request(1)
                if s.next_or_end() is None:
                    raise TCKFailure("a subscriber got neither an element nor on_complete")
            env.verify_no_async_errors()
            s1.cancel()
            s2.cancel()

        self._active(1, False, body, optional=True)

    def test_optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_to_all_of_its_subscribers_when_requesting_one_by_one(  # noqa: E501 - the JVM TCK\'s method name
        self,
    ) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            subs = [self._manual(pub, env) for _ in range(3)]
            seqs: list[list[Any]] = [[], [], []]
            plans = [[1, 1, 2, 1], [2, 3], [3, 1, 1]]
            for i, plan in enumerate(plans):
                for n in plan:
                    subs[i].request(n)
                    seqs[i].extend(subs[i].next_elements(n))
            for s in subs:
                s.request(1)
                s.expect_completion()
            if not (seqs[0] == seqs[1] == seqs[2]):
                raise TCKFailure(f"subscribers saw different sequences: {seqs}")

        self._active(5, True, body, optional=True)

    def test_optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_to_all_of_its_subscribers_when_requesting_many_upfront(  # noqa: E501 - the JVM TCK\'s method name
        self,
    ) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            subs = [self._manual(pub, env) for _ in range(3)]
            seqs = []
            for s in subs:
                s.request(4)
                seqs.append(s.next_elements(3))
            if not (seqs[0] == seqs[1] == seqs[2]):
                raise TCKFailure(f"subscribers saw different sequences: {seqs}")

        self._active(3, False, body, optional=True)

    def test_optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_to_all_of_its_subscribers_when_requesting_many_upfront_and_complete_as_expected(  # noqa: E501 - the JVM TCK\'s method name
        self,
    ) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            subs = [self._manual(pub, env) for _ in range(3)]
            seqs = []
            for s in subs:
                s.request(4)
                seqs.append(s.next_elements(3))
                s.expect_completion()
            if not (seqs[0] == seqs[1] == seqs[2]):
                raise TCKFailure(f"subscribers saw different sequences: {seqs}")
            env.verify_no_async_errors(delay=False)

        self._active(3, True, body, optional=True)

    def test_required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            subscribed = threading.Event()

            class Sub:
                def on_subscribe(self, s: Any) -> None:
                    self.s = s
                    for _ in range(3):
                        s.request(1)
                    subscribed.set()

                def on_next(self, x: Any) -> None:
                    if not hasattr(self, "s"):
                        env.flop(f"on_next({x!r}) before on_subscribe (rule 1.9)")
                        return
                    self.s.request(1)

                def on_error(self, e: BaseException) -> None:
                    env.flop("rule 3.2: unexpected on_error", e)

                def on_complete(self) -> None:
                    pass

            pub.subscribe(Sub())
            if not subscribed.wait(env.t.default):
                env.flop("no on_subscribe")
            env.verify_no_async_errors()

        self._active(6, False, body)

    def test_required_spec303_must_not_allow_unbounded_recursion(self) -> None:
        bound = self.bounded_depth_of_on_next_and_request_recursion()

        def body(pub: Any, env: TestEnvironment) -> None:
            done, subscribed = threading.Event(), threading.Event()
            count = [0]

            class Sub:
                def on_subscribe(self, s: Any) -> None:
                    self.s = s
                    subscribed.set()

                def on_next(self, x: Any) -> None:
                    if not hasattr(self, "s"):
                        env.flop(f"on_next({x!r}) before on_subscribe (rule 1.9)")
                        done.set()
                        return
                    d, frames = _nesting(Sub.on_next.__code__)
                    count[0] += 1
                    if d > bound:
                        env.flop(
                            f"rule 3.3: {d} nested on_next calls on one thread ({frames} stack frames "
                            f"between the outermost and this one); the bound is {bound}"
                        )
                        done.set()
                        return
                    if count[0] >= bound + 1:
                        done.set()
                        return
                    self.s.request(1)

                def on_error(self, e: BaseException) -> None:
                    env.flop("rule 3.3: unexpected on_error", e)
                    done.set()

                def on_complete(self) -> None:
                    done.set()

            sub = Sub()
            pub.subscribe(sub)
            if not subscribed.wait(env.t.default):
                raise TCKFailure("rule 1.9: no on_subscribe within the timeout")
            try:
                sub.s.request(1)
                if not done.wait(env.t.default):
                    env.flop(f"rule 3.3: did not receive {bound + 1} elements within the timeout")
                env.verify_no_async_errors(delay=False)
            finally:
                sub.s.cancel()

        self._active(bound + 1, False, body)

    def test_required_spec306_after_subscription_is_cancelled_request_must_be_nops(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            s.cancel()
            for _ in range(3):
                s.request(1)
            s.expect_none("rule 3.6: request after cancel must be a no-op")
            env.verify_no_async_errors(delay=False)

        self._active(3, False, body)

    def test_required_spec307_after_subscription_is_cancelled_additional_cancelations_must_be_nops(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            for _ in range(3):
                s.cancel()
            s.expect_none("rule 3.7: cancel after cancel must be a no-op")
            env.verify_no_async_errors(delay=False)

        self._active(1, False, body)

    def test_required_spec309_request_zero_must_signal_value_error(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            s.request(0)
            env.expect_error(ValueError, "rule 3.9: request(0)")

        self._active(10, False, body)

    def test_required_spec309_request_negative_number_must_signal_value_error(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            s.request(-random.randint(1, 2**31 - 1))
            env.expect_error(ValueError, "rule 3.9: request(negative)")

        self._active(10, False, body)

    def test_optional_spec309_request_negative_number_may_signal_value_error_with_specific_message(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            s.request(-random.randint(1, 2**31 - 1))
            err = env.expect_error(ValueError, "rule 3.9: request(negative)")
            msg = str(err)
            if not any(k in msg for k in ("3.9", "non-positive subscription request", "negative subscription request")):
                raise TCKFailure(f"the message does not cite rule 3.9: {msg!r}")

        self._active(10, False, body, optional=True)

    def test_required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            s.request(10)
            s.request(5)
            s.next_element()
            s.cancel()
            received = 1
            while True:
                time.sleep(env.t.no_signals)
                n = len([x for x in s.received.drain() if x is not END])
                if n == 0:
                    break
                received += n
            if received > 15:
                raise TCKFailure(f"rule 3.12: {received} elements after requesting 15 and cancelling")
            env.verify_no_async_errors(delay=False)

        self._active(20, False, body)

    def test_required_spec313_cancel_must_make_the_publisher_eventually_drop_all_references_to_the_subscriber(
        self,
    ) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            def run() -> tuple[weakref.ReferenceType[Any], threading.Event]:
                s = self._manual(pub, env)
                gone = threading.Event()
                ref = weakref.ref(s, lambda _r: gone.set())
                s.request(1)
                s.next_element()
                s.cancel()
                return ref, gone

            ref, gone = run()
            deadline = time.monotonic() + env.t.gc
            while not gone.is_set():
                gc.collect()
                left = deadline - time.monotonic()
                if left <= 0 or gone.wait(min(0.05, left)):
                    break
            gc.collect()
            if ref() is not None:
                holders = [type(r).__name__ for r in gc.get_referrers(ref())][:5]
                env.flop(
                    f"rule 3.13: the subscriber is still referenced {env.t.gc:.3f} s after cancel (held by {holders})"
                )
            env.verify_no_async_errors(delay=False)

        self._active(3, False, body)

    def test_required_spec317_must_support_a_pending_element_count_up_to_max_demand(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            s.request(MAX)
            s.next_elements(3)
            s.expect_completion()
            env.verify_no_async_errors(delay=False)

        self._active(3, True, body)

    def test_required_spec317_must_support_a_cumulative_pending_element_count_up_to_max_demand(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            s = self._manual(pub, env)
            s.request(MAX // 2)
            s.request(MAX // 2)
            s.request(1)
            s.next_elements(3)
            s.expect_completion()
            env.verify_no_async_errors(delay=False)
            s.cancel()

        self._active(3, True, body)

    def test_required_spec317_must_not_signal_on_error_when_pending_above_max_demand(self) -> None:
        def body(pub: Any, env: TestEnvironment) -> None:
            subscribed = threading.Event()

            class Blackhole:
                calls = 0

                def on_subscribe(self, s: Any) -> None:
                    self.s = s
                    subscribed.set()

                def on_next(self, x: Any) -> None:
                    if not hasattr(self, "s"):
                        env.flop(f"on_next({x!r}) before on_subscribe (rule 1.9)")
                        return
                    self.calls += 1
                    if self.calls <= 10:
                        self.s.request(MAX - 1)
                    else:
                        self.s.cancel()

                def on_error(self, e: BaseException) -> None:
                    env.flop("rule 3.17: on_error for a demand above 2**63-1", e)

                def on_complete(self) -> None:
                    pass

            sub = Blackhole()
            pub.subscribe(sub)
            if not subscribed.wait(env.t.default):
                env.flop("no on_subscribe")
            sub.s.request(1)
            env.verify_no_async_errors()
            sub.s.cancel()

        self._active(2**31 - 1, False, body)


def _nesting(code: Any) -> tuple[int, int]:
    """How many frames of ``code`` are on this thread's stack (via ``sys._getframe``), and the frame
    distance from the outermost of them to the caller."""
    f: FrameType | None = sys._getframe(1)
    nested, frames, outer = 0, 0, 0
    while f is not None:
        frames += 1
        if f.f_code is code:
            nested += 1
            outer = frames
        f = f.f_back
    return nested, outer


class _SequentialCheck:
    """Rule 1.3 probe: flags a signal that overlaps one running on another thread."""

    def __init__(self, env: TestEnvironment, pub: Any, elements: int) -> None:
        self.env, self.pub, self.elements = env, pub, elements
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._depth = 0
        self.received = 0
        self.done = threading.Event()

    def _enter(self, name: str) -> None:
        me = threading.get_ident()
        with self._lock:
            if self._owner not in (None, me):
                self.env.flop(f"rule 1.3: {name} on one thread overlapped a signal on another")
            self._owner = me
            self._depth += 1

    def _leave(self) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                self._owner = None

    def on_subscribe(self, s: Any) -> None:
        self._enter("on_subscribe")
        try:
            self.s = s
        finally:
            self._leave()
        s.request(1)

    def on_next(self, x: Any) -> None:
        if not hasattr(self, "s"):
            self.env.flop(f"on_next({x!r}) before on_subscribe (rule 1.9)")
            self.done.set()
            return
        self._enter("on_next")
        try:
            self.received += 1
        finally:
            self._leave()
        if self.received <= self.elements:
            self.s.request(1)

    def on_error(self, e: BaseException) -> None:
        self.env.flop("rule 1.3 test: unexpected on_error", e)
        self.done.set()

    def on_complete(self) -> None:
        self._enter("on_complete")
        self._leave()
        self.done.set()

    def run(self) -> None:
        self.pub.subscribe(self)
        if not self.done.wait(10 * self.env.t.default):
            self.env.flop("rule 1.3 test: no on_complete within 10 timeouts")


__all__ = ["PublisherVerification", "RULES"]
