"""The kit must be able to fail: broken publishers fail exactly the tests for the rule they break."""

from __future__ import annotations

import pytest

from rs_spark.tck import PUBLISHER_RULES, PublisherVerification, Timeouts, untested_rules
from rs_spark.tck.runner import run, run_verification

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
        if self.bug == "shared_state":  # every subscriber shares one position (breaks rule 1.11's multicast)
            st = self.__dict__.setdefault("_shared", st)
        if self.bug == "raise_from_subscribe":
            raise RuntimeError("subscribe raised instead of signalling on_error (rule 1.9)")
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

        sub = Sub()
        if self.bug == "next_before_subscribe" and pub.n > 0:
            st["demand"] = 1
            emit()  # the first element goes out before on_subscribe
        s.on_subscribe(sub)


class Failed:
    """A publisher that rejects every subscriber: on_subscribe, then on_error (rules 1.4, 1.9)."""

    def __init__(self, bug=None):
        self.bug = bug

    def subscribe(self, s):
        if s is None:
            raise TypeError("subscribe(None) (rule 1.9)")
        if self.bug == "raise_from_subscribe":
            raise RuntimeError("subscribe raised instead of signalling on_error (rule 1.9)")

        class Sub:
            def request(self, n):
                pass

            def cancel(self):
                pass

        s.on_subscribe(Sub())
        s.on_error(RuntimeError("cannot serve"))


def _verification(bug, skips=None):
    class V(PublisherVerification):
        __test__ = False
        timeouts = FAST

        def create_publisher(self, elements):
            return Naive(elements, bug if bug != "raise_from_subscribe" else None)

        def create_failed_publisher(self):
            return Failed(bug)

        def bounded_depth_of_on_next_and_request_recursion(self):
            return 1

    V.skips = {} if skips is None else skips  # pinned: no test may skip unless listed
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
        # optional, and the verification does not declare rule 3.9 not implemented: a failure, not a skip
        "test_optional_spec309_request_negative_number_may_signal_value_error_with_specific_message",
    },
    "leak": {"test_required_spec313_cancel_must_make_the_publisher_eventually_drop_all_references_to_the_subscriber"},
    "no_type_error_on_none": {"test_required_spec109_subscribe_throw_type_error_on_none_subscriber"},
    "recursion": {"test_required_spec303_must_not_allow_unbounded_recursion"},
    "signal_after_complete": AFTER_COMPLETE,
    "raise_from_subscribe": {  # the failed publisher raises instead of on_subscribe + on_error
        "test_optional_spec104_must_signal_on_error_when_fails",  # a failure, not a skip (as in the JVM)
        "test_required_spec109_may_reject_calls_to_subscribe_if_publisher_is_unable_or_unwilling_to_serve_them_rejection_must_trigger_on_error_after_on_subscribe",
    },
}


@pytest.mark.parametrize("bug", list(EXPECTED), ids=lambda b: str(b))
def test_broken_publisher_fails_exactly_the_tests_for_the_rule_it_breaks(bug):
    try:
        outcomes = run_verification(_verification(bug), PUBLISHER_RULES)
    finally:
        Naive.keep.clear()
    failed = {o.name for o in outcomes if o.result == "fail"}
    assert failed == EXPECTED[bug], {o.name: o.message for o in outcomes if o.result == "fail"}
    result = {o.name: o.result for o in outcomes}
    assert all(result[n] == "pass" for n in CORE - EXPECTED[bug]), result


CORE = {  # tests that need no element: a publisher breaking an element rule must still pass them
    "test_required_validate_max_elements_from_publisher",
    "test_required_validate_bounded_depth_of_on_next_and_request_recursion",
    "test_required_spec109_subscribe_throw_type_error_on_none_subscriber",
    "test_required_spec109_must_issue_on_subscribe_for_non_none_subscriber",
    "test_optional_spec104_must_signal_on_error_when_fails",
    "test_required_spec109_may_reject_calls_to_subscribe_if_publisher_is_unable_or_unwilling_to_serve_them_rejection_must_trigger_on_error_after_on_subscribe",
}


def test_on_next_before_on_subscribe_fails_every_element_test_citing_rule_1_9():
    results = run(_verification("next_before_subscribe"))
    failed = {name: msg for name, (res, msg) in results.items() if res == "fail"}
    assert len(failed) >= 15
    assert all("before on_subscribe (rule 1.9)" in msg for msg in failed.values()), failed
    assert "test_required_create_publisher1_must_produce_a_stream_of_exactly_1_element" in failed
    assert all(results[name][0] == "pass" for name in CORE), {n: results[n] for n in CORE}


def test_runner_reports_every_test_and_lists_the_untested_rules_apart():
    results = run(_verification(None))
    untested = untested_rules(PublisherVerification)
    assert set(results) == set(PUBLISHER_RULES) - {u.name for u in untested} and len(results) == 31
    assert {res for res, _ in results.values()} == {"pass"}
    assert len(untested) == 7 and all(u.name.startswith("test_untested_") and u.why for u in untested)
    assert (
        untested[0].jvm_name
        == "untested_spec106_mustConsiderSubscriptionCancelledAfterOnErrorOrOnCompleteHasBeenCalled"
    )
    assert untested_rules(_verification(None)) == untested  # an instance or a class


MULTICAST = {name for name, (_, rule, _) in PUBLISHER_RULES.items() if rule == "1.11"}


def test_an_optional_test_that_fails_is_a_failure_unless_the_rule_is_declared_not_implemented():
    """A publisher whose subscribers share one position breaks rule 1.11's multicast tests: they fail,
    naming the declaration that would turn them into skips; declared, they skip and say why."""
    outcomes = run_verification(_verification("shared_state"), PUBLISHER_RULES)
    failed = {o.name: o.message for o in outcomes if o.result == "fail"}
    assert failed and set(failed) <= MULTICAST, failed
    assert all("skips = {'1.11': 'why'}" in msg for msg in failed.values()), failed
    declared = run(_verification("shared_state", skips={"1.11": "one position for all subscribers"}))
    assert "fail" not in {res for res, _ in declared.values()}, declared
    skipped = {name: msg for name, (res, msg) in declared.items() if res == "skip"}
    assert set(skipped) == set(failed)
    assert all("does NOT implement this OPTIONAL" in m and "[pinned: one position" in m for m in skipped.values())


class _NoFailedPublisher(PublisherVerification):
    __test__ = False
    timeouts = FAST

    def create_publisher(self, elements):
        return Naive(elements)

    def skip_stochastic_tests(self):
        return True


FAILED_PUBLISHER_TESTS = {
    "test_optional_spec104_must_signal_on_error_when_fails",
    "test_required_spec109_may_reject_calls_to_subscribe_if_publisher_is_unable_or_unwilling_to_serve_them_rejection_must_trigger_on_error_after_on_subscribe",
}
STOCHASTIC = "test_stochastic_spec103_must_signal_on_methods_sequentially"


@pytest.mark.parametrize(
    "skips,expected",
    [
        (None, {"skip": FAILED_PUBLISHER_TESTS | {STOCHASTIC}}),  # not pinned: the kit's limits skip
        ({}, {"fail": FAILED_PUBLISHER_TESTS | {STOCHASTIC}}),  # pinned, none listed: each skip fails
        (
            {**dict.fromkeys(FAILED_PUBLISHER_TESTS, "no failed publisher"), "1.3": "turned off"},
            {"skip": FAILED_PUBLISHER_TESTS | {STOCHASTIC}},
        ),
        ({STOCHASTIC: "turned off"}, {"fail": FAILED_PUBLISHER_TESTS, "skip": {STOCHASTIC}}),
    ],
    ids=["unpinned", "pinned-empty", "pinned-all", "pinned-one"],
)
def test_a_skip_the_verification_does_not_pin_fails(skips, expected):
    v = _NoFailedPublisher()
    v.skips = skips
    results = run(v)
    got = {res: {n for n, (r, _) in results.items() if r == res} for res in ("fail", "skip")}
    assert got == {"fail": expected.get("fail", set()), "skip": expected.get("skip", set())}, results
    for name in expected.get("fail", ()):
        assert "_NoFailedPublisher.skips does not list it" in results[name][1], results[name]
    for name in expected.get("skip", ()):
        assert ("[pinned: " in results[name][1]) == (skips is not None), results[name]


def test_skips_naming_neither_a_test_nor_a_rule_fail_every_test_saying_which():
    v = _NoFailedPublisher()
    v.skips = {"1.99": "a typo", "test_optional_spec104_must_signal_on_error_when_fails": "fine"}
    results = run(v)
    assert {res for res, _ in results.values()} == {"fail"}
    assert all("['1.99']" in msg and "rule number" in msg for _, msg in results.values())


def overshooting(elements):
    """A factory for the CLI test: breaks rule 1.1."""
    return Naive(elements, "overshoot")


class _Raising(PublisherVerification):
    __test__ = False  # run through run() below, with the error to raise
    timeouts = FAST

    def __init__(self, error):
        super().__init__()
        self.error = error

    def create_publisher(self, elements):
        raise self.error


@pytest.mark.parametrize("fatal", [KeyboardInterrupt, SystemExit])
def test_runner_lets_a_fatal_error_stop_the_run_instead_of_recording_a_failure(fatal):
    with pytest.raises(fatal):
        run(_Raising(fatal("stop the run")))


def test_runner_records_a_plain_error_as_a_failure_and_pytest_skip_as_a_skip():
    failed = run(_Raising(LookupError("no publisher here")))
    assert any(res == "fail" and msg == "LookupError: no publisher here" for res, msg in failed.values())
    skipped = run(_Raising(pytest.skip.Exception("not on this machine")))  # a BaseException, yet not fatal
    assert "fail" not in {res for res, _ in skipped.values()}
    assert any(res == "skip" and msg == "not on this machine" for res, msg in skipped.values())
