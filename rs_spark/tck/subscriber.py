"""``SubscriberBlackboxVerification`` (26 JVM tests) and ``SubscriberWhiteboxVerification`` (27).

Both drive the Subscriber under test from a *stage*: a manual Publisher whose Subscription
records what the subscriber requests and whether it cancels, and which signals elements,
completion and errors synchronously on the test thread, as the JVM TCK does.

Blackbox: implement ``create_subscriber()`` and ``create_element(i)``; override
``trigger_request(subscriber)`` if demand must be triggered from outside.
Whitebox: implement ``create_subscriber(probe)`` returning a Subscriber that reports to the
probe: ``probe.register_on_subscribe(puppet)`` (a :class:`SubscriberPuppet`), then
``register_on_next(x)``, ``register_on_error(e)``, ``register_on_complete()``.

Why this module is long: the two verifications and the stage they share, one method per rule as in
the JVM TCK; apart, the blackbox and whitebox tables of the same rule would drift.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from .env import TCKFailure, TestEnvironment, Verification
from .skip import untested


class TCKTestError(RuntimeError):
    """The error the stage sends with on_error."""


class StageSubscription:
    """What the subscriber under test holds: records requests and cancellation."""

    def __init__(self, env: TestEnvironment) -> None:
        self.env = env
        self.requests: queue.Queue[Any] = queue.Queue()
        self.cancelled = threading.Event()
        self.forbidden_thread: int | None = None  # set while a terminal signal runs (rule 2.3)
        self.forbidden_what = ""

    def request(self, n: int) -> None:
        if self.forbidden_thread == threading.get_ident():
            self.env.flop(f"rule 2.3: the subscriber called Subscription.request({n}) inside {self.forbidden_what}")
        self.requests.put(n)

    def cancel(self) -> None:
        if self.forbidden_thread == threading.get_ident():
            self.env.flop(f"rule 2.3: the subscriber called Subscription.cancel() inside {self.forbidden_what}")
        self.cancelled.set()


class Stage:
    """The manual Publisher that feeds the subscriber under test."""

    def __init__(self, env: TestEnvironment, subscriber: Any) -> None:
        self.env = env
        self.sub = subscriber
        self.subscription = StageSubscription(env)
        self._counter = 0

    def subscribe(self) -> None:
        self.sub.on_subscribe(self.subscription)

    def expect_request(self) -> int:
        try:
            n = self.subscription.requests.get(timeout=self.env.t.default)
        except queue.Empty:
            raise TCKFailure(f"rule 2.1: the subscriber did not request within {self.env.t.default:.3f} s") from None
        if not isinstance(n, int) or n <= 0:
            raise TCKFailure(f"rule 3.9: the subscriber requested {n!r}")
        return n

    def send_next(self, x: Any) -> None:
        self.sub.on_next(x)

    def send_complete(self) -> None:
        self.sub.on_complete()

    def send_error(self, e: BaseException) -> None:
        self.sub.on_error(e)

    def expect_cancelling(self) -> None:
        if not self.subscription.cancelled.wait(self.env.t.default):
            self.env.flop(f"the subscriber did not cancel within {self.env.t.default:.3f} s")


def _same_error(received: BaseException, sent: BaseException) -> bool:
    return received is sent


class _Recorder:
    """Records the signals a subscriber received (the blackbox proxy and the whitebox probe)."""

    def __init__(self, env: TestEnvironment) -> None:
        self.env = env
        self._cond = threading.Condition()
        self.nexts: list[Any] = []
        self._read = 0  # how many of ``nexts`` the test has looked at
        self.error: BaseException | None = None
        self.completed = False
        # whether the error received is the one the kit sent (the whitebox verification may override)
        self.errors_match: Callable[[BaseException, BaseException], bool] = _same_error

    def _note(self, kind: str, value: Any = None) -> None:
        with self._cond:
            if kind == "next":
                self.nexts.append(value)
            elif kind == "error":
                self.error = value
            else:
                self.completed = True
            self._cond.notify_all()

    def _wait(self, pred: Any, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(pred, timeout)

    def expect_completion(self) -> None:
        if not self._wait(lambda: self.completed, self.env.t.default):
            self.env.flop("on_complete was not received")

    def expect_error(self, expected: BaseException | None = None) -> None:
        if not self._wait(lambda: self.error is not None, self.env.t.default):
            raise TCKFailure("on_error was not received")
        if expected is not None and self.error is not None and not self.errors_match(self.error, expected):
            self.env.flop(f"on_error received {self.error!r}, not the error sent ({expected!r})")

    def expect_next(self, x: Any) -> None:
        n = self._read
        if not self._wait(lambda: len(self.nexts) > n, self.env.t.default):
            raise TCKFailure(f"on_next({x!r}) was not received")
        self._read = n + 1
        if self.nexts[n] != x:
            self.env.flop(f"on_next received {self.nexts[n]!r}, expected {x!r}")

    def expect_none(self) -> None:
        time.sleep(self.env.t.no_signals)
        if len(self.nexts) > self._read:
            self.env.flop(f"unexpected on_next({self.nexts[self._read]!r})")


class _BlackboxProxy(_Recorder):
    """Wraps the subscriber under test: records signals, then delegates."""

    def __init__(self, env: TestEnvironment, target: Any) -> None:
        super().__init__(env)
        self.target = target

    def on_subscribe(self, s: Any) -> None:
        self.target.on_subscribe(s)

    def on_next(self, x: Any) -> None:
        self.target.on_next(x)
        self._note("next", x)

    def on_error(self, e: BaseException) -> None:
        self.target.on_error(e)
        self._note("error", e)

    def on_complete(self) -> None:
        self.target.on_complete()
        self._note("complete")


class _Base(Verification):
    __test__ = False

    def create_element(self, i: int) -> Any:
        """Element number ``i`` (distinct values); defaults to ``i``."""
        return i

    def _terminal_must_not_call_subscription(self, sub: Any, env: TestEnvironment, signal: str) -> None:
        """Rule 2.3: no Subscription call from inside on_complete / on_error."""
        stage = Stage(env, sub)
        stage.subscribe()
        stage.subscription.forbidden_what = signal
        stage.subscription.forbidden_thread = threading.get_ident()
        try:
            if signal == "on_complete":
                sub.on_complete()
            else:
                sub.on_error(TCKTestError("test error"))
        finally:
            stage.subscription.forbidden_thread = None
        env.verify_no_async_errors(delay=False)

    def _none_argument(self, sub: Any, env: TestEnvironment, signal: str, subscribed: bool) -> None:
        if subscribed:
            Stage(env, sub).subscribe()
        try:
            if signal == "on_subscribe":
                sub.on_subscribe(None)
            elif signal == "on_next":
                sub.on_next(None)
            else:
                sub.on_error(None)
        except TypeError:
            env.verify_no_async_errors(delay=False)
            return
        raise TCKFailure(f"rule 2.13: {signal}(None) must raise TypeError")


BLACKBOX_RULES: dict[str, tuple[str, str, str]] = {}
WHITEBOX_RULES: dict[str, tuple[str, str, str]] = {}


def spec_id(rule: str) -> str:
    """``"3.1"`` -> ``"301"``, ``"3.10"`` -> ``"310"``: the JVM TCK's numbering in names."""
    major, minor = rule.split(".")
    return f"{major}{int(minor):02d}"


def _untested(table: dict[str, tuple[str, str, str]], name: str, jvm: str, rule: str, why: str) -> None:
    """A JVM TCK untested test: in the table (status ``untested``) and in UNTESTED, but no test method."""
    table[untested(name, why)] = (jvm, rule, "untested")


def _rule(table: dict[str, tuple[str, str, str]], jvm: str, rule: str, status: str = "required") -> Any:
    def mark(fn: Any) -> Any:
        table[fn.__name__] = (jvm, rule, status)
        return fn

    return mark


# Rules 3.10-3.16 of a Subscription: permissions, or rules the Publisher keeps; nothing a Subscriber
# verification can observe. Both verifications list them, as the JVM TCK does.
_UNTESTED_SUBSCRIPTION_RULES = [
    (
        "request_may_synchronously_call_on_next_on_subscriber",
        "requestMaySynchronouslyCallOnNextOnSubscriber",
        "3.10",
        "a permission, nothing to test",
    ),
    (
        "request_may_synchronously_call_on_complete_or_on_error",
        "requestMaySynchronouslyCallOnCompleteOrOnError",
        "3.11",
        "a permission, nothing to test",
    ),
    (
        "cancel_may_cause_the_publisher_to_shutdown_if_no_other_subscription_exists",
        "cancelMayCauseThePublisherToShutdownIfNoOtherSubscriptionExists",
        "3.14",
        "a permission, nothing to test",
    ),
    (
        "cancel_must_not_throw_exception_and_must_signal_on_error",
        "cancelMustNotThrowExceptionAndMustSignalOnError",
        "3.15",
        "a rule for publishers",
    ),
    (
        "request_must_not_throw_exception_and_must_on_error_the_subscriber",
        "requestMustNotThrowExceptionAndMustOnErrorTheSubscriber",
        "3.16",
        "a rule for publishers",
    ),
]


class SubscriberBlackboxVerification(_Base):
    """The JVM TCK's 26 blackbox subscriber tests, 11 run; implement :meth:`create_subscriber`."""

    __test__ = False  # collected only through user subclasses

    def create_subscriber(self) -> Any:
        raise NotImplementedError

    def trigger_request(self, subscriber: Any) -> None:
        """Make the subscriber request (for subscribers whose demand comes from outside)."""

    def _bt(self) -> tuple[TestEnvironment, Stage, _BlackboxProxy, Any]:
        env = self._env()
        sub = self.create_subscriber()
        proxy = _BlackboxProxy(env, sub)
        stage = Stage(env, proxy)
        stage.subscribe()
        return env, stage, proxy, sub

    B = BLACKBOX_RULES
    _rules = B

    @_rule(B, "required_spec201_blackbox_mustSignalDemandViaSubscriptionRequest", "2.1")
    def test_required_spec201_blackbox_must_signal_demand_via_subscription_request(self) -> None:
        env, stage, proxy, sub = self._bt()
        self.trigger_request(sub)
        n = stage.expect_request()
        # The intent (the JVM's loop condition is inverted, issue #459): send what was
        # requested, up to 512, unless the subscriber cancels, then complete.
        for i in range(min(n, 512)):
            if stage.subscription.cancelled.is_set():
                break
            stage.send_next(self.create_element(i))
        stage.send_complete()
        env.verify_no_async_errors(delay=False)

    _untested(
        B,
        "test_untested_spec202_blackbox_should_asynchronously_dispatch",
        "untested_spec202_blackbox_shouldAsynchronouslyDispatch",
        "2.2",
        "a recommendation",
    )

    @_rule(B, "required_spec203_blackbox_mustNotCallMethodsOnSubscriptionOrPublisherInOnComplete", "2.3")
    def test_required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_complete(self) -> None:
        env = self._env()
        self._terminal_must_not_call_subscription(self.create_subscriber(), env, "on_complete")

    @_rule(B, "required_spec203_blackbox_mustNotCallMethodsOnSubscriptionOrPublisherInOnError", "2.3")
    def test_required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_error(self) -> None:
        env = self._env()
        self._terminal_must_not_call_subscription(self.create_subscriber(), env, "on_error")

    _untested(
        B,
        "test_untested_spec204_blackbox_must_consider_the_subscription_as_cancelled_in_after_recieving_on_complete_or_on_error",  # noqa: E501 - the TCK test name, whole so it can be searched
        "untested_spec204_blackbox_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError",
        "2.4",
        "not observable from outside",
    )

    @_rule(
        B,
        "required_spec205_blackbox_mustCallSubscriptionCancelIfItAlreadyHasAnSubscriptionAndReceives"
        "AnotherOnSubscribeSignal",
        "2.5",
    )
    def test_required_spec205_blackbox_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another_on_subscribe_signal(  # noqa: E501 - the TCK test name, whole so it can be searched
        self,
    ) -> None:
        env, stage, proxy, sub = self._bt()
        cancelled = threading.Event()

        class Second:
            def request(self, n: int) -> None:
                env.flop(f"rule 2.5: the subscriber requested {n} from a second, duplicate Subscription")

            def cancel(self) -> None:
                cancelled.set()

        sub.on_subscribe(Second())
        if not cancelled.wait(env.t.default):
            env.flop("rule 2.5: the second Subscription was not cancelled")
        env.verify_no_async_errors(delay=False)
        stage.send_complete()

    _untested(
        B,
        "test_untested_spec206_blackbox_must_call_subscription_cancel_if_it_is_no_longer_valid",
        "untested_spec206_blackbox_mustCallSubscriptionCancelIfItIsNoLongerValid",
        "2.6",
        "needs whitebox access",
    )
    _untested(
        B,
        "test_untested_spec207_blackbox_must_ensure_all_calls_on_its_subscription_take_place_from_the_same_thread_or_take_care_of_synchronization",  # noqa: E501 - the TCK test name, whole so it can be searched
        "untested_spec207_blackbox_mustEnsureAllCallsOnItsSubscriptionTakePlaceFromTheSameThreadOrTakeCareOf"
        "Synchronization",
        "2.7",
        "not observable reliably",
    )
    _untested(
        B,
        "test_untested_spec208_blackbox_must_be_prepared_to_receive_on_next_signals_after_having_called_subscription_cancel",  # noqa: E501 - the TCK test name, whole so it can be searched
        "untested_spec208_blackbox_mustBePreparedToReceiveOnNextSignalsAfterHavingCalledSubscriptionCancel",
        "2.8",
        "only the whitebox verification can test it",
    )

    @_rule(B, "required_spec209_blackbox_mustBePreparedToReceiveAnOnCompleteSignalWithPrecedingRequestCall", "2.9")
    def test_required_spec209_blackbox_must_be_prepared_to_receive_an_on_complete_signal_with_preceding_request_call(  # noqa: E501 - the TCK test name, whole so it can be searched
        self,
    ) -> None:
        env, stage, proxy, sub = self._bt()
        self.trigger_request(sub)
        stage.expect_request()
        stage.send_complete()
        proxy.expect_completion()
        env.verify_no_async_errors(delay=False)

    @_rule(B, "required_spec209_blackbox_mustBePreparedToReceiveAnOnCompleteSignalWithoutPrecedingRequestCall", "2.9")
    def test_required_spec209_blackbox_must_be_prepared_to_receive_an_on_complete_signal_without_preceding_request_call(  # noqa: E501 - the TCK test name, whole so it can be searched
        self,
    ) -> None:
        env, stage, proxy, sub = self._bt()
        stage.send_complete()
        proxy.expect_completion()
        env.verify_no_async_errors(delay=False)

    @_rule(B, "required_spec210_blackbox_mustBePreparedToReceiveAnOnErrorSignalWithPrecedingRequestCall", "2.10")
    def test_required_spec210_blackbox_must_be_prepared_to_receive_an_on_error_signal_with_preceding_request_call(
        self,
    ) -> None:
        env, stage, proxy, sub = self._bt()
        self.trigger_request(sub)
        stage.expect_request()
        stage.send_error(TCKTestError("test error"))
        proxy.expect_error()
        env.verify_no_async_errors(delay=False)

    @_rule(B, "required_spec210_blackbox_mustBePreparedToReceiveAnOnErrorSignalWithoutPrecedingRequestCall", "2.10")
    def test_required_spec210_blackbox_must_be_prepared_to_receive_an_on_error_signal_without_preceding_request_call(  # noqa: E501 - the TCK test name, whole so it can be searched
        self,
    ) -> None:
        env, stage, proxy, sub = self._bt()
        stage.send_error(TCKTestError("test error"))
        proxy.expect_error()
        env.verify_no_async_errors(delay=False)

    _untested(
        B,
        "test_untested_spec211_blackbox_must_make_sure_that_all_calls_on_its_methods_happen_before_the_processing_of_the_respective_events",  # noqa: E501 - the TCK test name, whole so it can be searched
        "untested_spec211_blackbox_mustMakeSureThatAllCallsOnItsMethodsHappenBeforeTheProcessingOfTheRespectiveEvents",
        "2.11",
        "not observable from outside",
    )
    _untested(
        B,
        "test_untested_spec212_blackbox_must_not_call_on_subscribe_more_than_once_based_on_object_equality",
        "untested_spec212_blackbox_mustNotCallOnSubscribeMoreThanOnceBasedOnObjectEquality",
        "2.12",
        "a rule for publishers",
    )
    _untested(
        B,
        "test_untested_spec213_blackbox_failing_on_signal_invocation",
        "untested_spec213_blackbox_failingOnSignalInvocation",
        "2.13",
        "not observable from outside",
    )

    @_rule(B, "required_spec213_blackbox_onSubscribe_mustThrowNullPointerExceptionWhenParametersAreNull", "2.13")
    def test_required_spec213_blackbox_on_subscribe_must_throw_type_error_when_parameters_are_none(self) -> None:
        self._none_argument(self.create_subscriber(), self._env(), "on_subscribe", subscribed=False)

    @_rule(B, "required_spec213_blackbox_onNext_mustThrowNullPointerExceptionWhenParametersAreNull", "2.13")
    def test_required_spec213_blackbox_on_next_must_throw_type_error_when_parameters_are_none(self) -> None:
        self._none_argument(self.create_subscriber(), self._env(), "on_next", subscribed=True)

    @_rule(B, "required_spec213_blackbox_onError_mustThrowNullPointerExceptionWhenParametersAreNull", "2.13")
    def test_required_spec213_blackbox_on_error_must_throw_type_error_when_parameters_are_none(self) -> None:
        self._none_argument(self.create_subscriber(), self._env(), "on_error", subscribed=True)

    for _name, _jvm, _r, _why in [
        (
            "must_not_be_called_outside_subscriber_context",
            "mustNotBeCalledOutsideSubscriberContext",
            "3.1",
            "not observable",
        ),
        (
            "request_must_register_given_number_elements_to_be_produced",
            "requestMustRegisterGivenNumberElementsToBeProduced",
            "3.8",
            "a rule for publishers",
        ),
        *_UNTESTED_SUBSCRIPTION_RULES,
    ]:
        _n = f"test_untested_spec{spec_id(_r)}_blackbox_{_name}"
        _untested(B, _n, f"untested_spec{spec_id(_r)}_blackbox_{_jvm}", _r, _why)
    del _name, _jvm, _r, _why, _n
    del B


class SubscriberPuppet:
    """What a whitebox subscriber hands the probe: how the TCK makes it request and cancel."""

    def __init__(self, trigger_request: Any, signal_cancel: Any) -> None:
        self.trigger_request = trigger_request
        self.signal_cancel = signal_cancel


class WhiteboxSubscriberProbe(_Recorder):
    """The subscriber under test reports every signal it receives here."""

    def __init__(self, env: TestEnvironment) -> None:
        super().__init__(env)
        self._puppet: queue.Queue[SubscriberPuppet] = queue.Queue()

    def register_on_subscribe(self, puppet: SubscriberPuppet) -> None:
        self._puppet.put(puppet)

    def register_on_next(self, x: Any) -> None:
        self._note("next", x)

    def register_on_error(self, e: BaseException) -> None:
        self._note("error", e)

    def register_on_complete(self) -> None:
        self._note("complete")

    def puppet(self) -> SubscriberPuppet:
        try:
            return self._puppet.get(timeout=self.env.t.default)
        except queue.Empty:
            raise TCKFailure("the subscriber did not call probe.register_on_subscribe(puppet)") from None


class SubscriberWhiteboxVerification(_Base):
    """The JVM TCK's 27 whitebox subscriber tests, 14 run; implement :meth:`create_subscriber`."""

    __test__ = False  # collected only through user subclasses

    def create_subscriber(self, probe: WhiteboxSubscriberProbe) -> Any:
        raise NotImplementedError

    def errors_match(self, received: BaseException, sent: BaseException) -> bool:
        """Whether the error the probe saw is the one the kit sent. Identity by default; override
        where the error crosses a boundary that cannot keep identity (e.g. a network endpoint
        that recreates it from its type name and message)."""
        return received is sent

    def _st(self) -> tuple[TestEnvironment, Stage, WhiteboxSubscriberProbe, SubscriberPuppet, Any]:
        env = self._env()
        probe = WhiteboxSubscriberProbe(env)
        probe.errors_match = self.errors_match
        sub = self.create_subscriber(probe)
        stage = Stage(env, sub)
        stage.subscribe()
        puppet = probe.puppet()
        env.verify_no_async_errors(delay=False)
        return env, stage, probe, puppet, sub

    W = WHITEBOX_RULES
    _rules = W

    @_rule(W, "required_exerciseWhiteboxHappyPath", "-")
    def test_required_exercise_whitebox_happy_path(self) -> None:
        env, stage, probe, puppet, sub = self._st()
        puppet.trigger_request(1)
        puppet.trigger_request(1)
        r = stage.expect_request()
        x = self.create_element(0)
        stage.send_next(x)
        probe.expect_next(x)
        puppet.trigger_request(1)
        if r == 1:
            stage.expect_request()
        y = self.create_element(1)
        stage.send_next(y)
        probe.expect_next(y)
        puppet.signal_cancel()
        stage.expect_cancelling()
        env.verify_no_async_errors()

    @_rule(W, "required_spec201_mustSignalDemandViaSubscriptionRequest", "2.1")
    def test_required_spec201_must_signal_demand_via_subscription_request(self) -> None:
        env, stage, probe, puppet, sub = self._st()
        puppet.trigger_request(1)
        stage.expect_request()
        stage.send_next(self.create_element(0))

    _untested(
        W,
        "test_untested_spec202_should_asynchronously_dispatch",
        "untested_spec202_shouldAsynchronouslyDispatch",
        "2.2",
        "a recommendation",
    )

    @_rule(W, "required_spec203_mustNotCallMethodsOnSubscriptionOrPublisherInOnComplete", "2.3")
    def test_required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_complete(self) -> None:
        env = self._env()
        self._terminal_must_not_call_subscription(
            self.create_subscriber(WhiteboxSubscriberProbe(env)), env, "on_complete"
        )

    @_rule(W, "required_spec203_mustNotCallMethodsOnSubscriptionOrPublisherInOnError", "2.3")
    def test_required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_error(self) -> None:
        env = self._env()
        self._terminal_must_not_call_subscription(self.create_subscriber(WhiteboxSubscriberProbe(env)), env, "on_error")

    _untested(
        W,
        "test_untested_spec204_must_consider_the_subscription_as_cancelled_in_after_recieving_on_complete_or_on_error",  # noqa: E501 - the TCK test name, whole so it can be searched
        "untested_spec204_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError",
        "2.4",
        "not observable",
    )

    @_rule(
        W,
        "required_spec205_mustCallSubscriptionCancelIfItAlreadyHasAnSubscriptionAndReceivesAnotherOnSubscribeSignal",
        "2.5",
    )
    def test_required_spec205_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another_on_subscribe_signal(  # noqa: E501 - the TCK test name, whole so it can be searched
        self,
    ) -> None:
        env, stage, probe, puppet, sub = self._st()
        cancelled = threading.Event()

        class Second:
            def request(self, n: int) -> None:
                pass

            def cancel(self) -> None:
                cancelled.set()

        sub.on_subscribe(Second())
        if not cancelled.wait(env.t.default):
            env.flop("rule 2.5: the second Subscription was not cancelled")
        env.verify_no_async_errors()

    _untested(
        W,
        "test_untested_spec206_must_call_subscription_cancel_if_it_is_no_longer_valid",
        "untested_spec206_mustCallSubscriptionCancelIfItIsNoLongerValid",
        "2.6",
        "depends on the application",
    )
    _untested(
        W,
        "test_untested_spec207_must_ensure_all_calls_on_its_subscription_take_place_from_the_same_thread_or_take_care_of_synchronization",  # noqa: E501 - the TCK test name, whole so it can be searched
        "untested_spec207_mustEnsureAllCallsOnItsSubscriptionTakePlaceFromTheSameThreadOrTakeCareOfSynchronization",
        "2.7",
        "not observable reliably",
    )

    @_rule(W, "required_spec208_mustBePreparedToReceiveOnNextSignalsAfterHavingCalledSubscriptionCancel", "2.8")
    def test_required_spec208_must_be_prepared_to_receive_on_next_signals_after_having_called_subscription_cancel(
        self,
    ) -> None:
        env, stage, probe, puppet, sub = self._st()
        puppet.trigger_request(1)
        stage.expect_request()
        puppet.signal_cancel()
        stage.expect_cancelling()
        stage.send_next(self.create_element(0))  # late element after cancel (rule 2.8)
        puppet.trigger_request(1)
        puppet.trigger_request(1)
        env.verify_no_async_errors()

    @_rule(W, "required_spec209_mustBePreparedToReceiveAnOnCompleteSignalWithPrecedingRequestCall", "2.9")
    def test_required_spec209_must_be_prepared_to_receive_an_on_complete_signal_with_preceding_request_call(
        self,
    ) -> None:
        env, stage, probe, puppet, sub = self._st()
        puppet.trigger_request(1)
        stage.send_complete()
        probe.expect_completion()
        env.verify_no_async_errors()

    @_rule(W, "required_spec209_mustBePreparedToReceiveAnOnCompleteSignalWithoutPrecedingRequestCall", "2.9")
    def test_required_spec209_must_be_prepared_to_receive_an_on_complete_signal_without_preceding_request_call(
        self,
    ) -> None:
        env, stage, probe, puppet, sub = self._st()
        stage.send_complete()
        probe.expect_completion()
        env.verify_no_async_errors()

    @_rule(W, "required_spec210_mustBePreparedToReceiveAnOnErrorSignalWithPrecedingRequestCall", "2.10")
    def test_required_spec210_must_be_prepared_to_receive_an_on_error_signal_with_preceding_request_call(self) -> None:
        env, stage, probe, puppet, sub = self._st()
        puppet.trigger_request(1)
        puppet.trigger_request(1)
        ex = TCKTestError("test error")
        stage.send_error(ex)
        probe.expect_error(ex)
        env.verify_no_async_errors(delay=False)

    @_rule(W, "required_spec210_mustBePreparedToReceiveAnOnErrorSignalWithoutPrecedingRequestCall", "2.10")
    def test_required_spec210_must_be_prepared_to_receive_an_on_error_signal_without_preceding_request_call(
        self,
    ) -> None:
        env, stage, probe, puppet, sub = self._st()
        ex = TCKTestError("test error")
        stage.send_error(ex)
        probe.expect_error(ex)
        env.verify_no_async_errors(delay=False)

    _untested(
        W,
        "test_untested_spec211_must_make_sure_that_all_calls_on_its_methods_happen_before_the_processing_of_the_respective_events",  # noqa: E501 - the TCK test name, whole so it can be searched
        "untested_spec211_mustMakeSureThatAllCallsOnItsMethodsHappenBeforeTheProcessingOfTheRespectiveEvents",
        "2.11",
        "not observable",
    )
    _untested(
        W,
        "test_untested_spec212_must_not_call_on_subscribe_more_than_once_based_on_object_equality_spec_violation",
        "untested_spec212_mustNotCallOnSubscribeMoreThanOnceBasedOnObjectEquality_specViolation",
        "2.12",
        "a rule for publishers",
    )
    _untested(
        W,
        "test_untested_spec213_failing_on_signal_invocation",
        "untested_spec213_failingOnSignalInvocation",
        "2.13",
        "not observable",
    )

    @_rule(W, "required_spec213_onSubscribe_mustThrowNullPointerExceptionWhenParametersAreNull", "2.13")
    def test_required_spec213_on_subscribe_must_throw_type_error_when_parameters_are_none(self) -> None:
        env, stage, probe, puppet, sub = self._st()
        self._none_argument(sub, env, "on_subscribe", subscribed=False)

    @_rule(W, "required_spec213_onNext_mustThrowNullPointerExceptionWhenParametersAreNull", "2.13")
    def test_required_spec213_on_next_must_throw_type_error_when_parameters_are_none(self) -> None:
        env, stage, probe, puppet, sub = self._st()
        self._none_argument(sub, env, "on_next", subscribed=False)

    @_rule(W, "required_spec213_onError_mustThrowNullPointerExceptionWhenParametersAreNull", "2.13")
    def test_required_spec213_on_error_must_throw_type_error_when_parameters_are_none(self) -> None:
        env, stage, probe, puppet, sub = self._st()
        self._none_argument(sub, env, "on_error", subscribed=False)

    _untested(
        W,
        "test_untested_spec301_must_not_be_called_outside_subscriber_context",
        "untested_spec301_mustNotBeCalledOutsideSubscriberContext",
        "3.1",
        "not observable",
    )

    @_rule(W, "required_spec308_requestMustRegisterGivenNumberElementsToBeProduced", "3.8")
    def test_required_spec308_request_must_register_given_number_elements_to_be_produced(self) -> None:
        env, stage, probe, puppet, sub = self._st()
        puppet.trigger_request(2)
        r = stage.expect_request()
        x = self.create_element(0)
        stage.send_next(x)
        probe.expect_next(x)
        if r < 2:
            stage.expect_request()
        y = self.create_element(1)
        stage.send_next(y)
        probe.expect_next(y)
        probe.expect_none()
        puppet.trigger_request(3)
        env.verify_no_async_errors()

    for _name, _jvm, _r, _why in _UNTESTED_SUBSCRIPTION_RULES:
        _n = f"test_untested_spec{spec_id(_r)}_{_name}"
        _untested(W, _n, f"untested_spec{spec_id(_r)}_{_jvm}", _r, _why)
    del _name, _jvm, _r, _why, _n
    del W


__all__ = [
    "SubscriberBlackboxVerification",
    "SubscriberWhiteboxVerification",
    "WhiteboxSubscriberProbe",
    "SubscriberPuppet",
    "BLACKBOX_RULES",
    "WHITEBOX_RULES",
    "TCKTestError",
]
