"""Run a verification's tests without pytest and collect pass / fail / skip per test; list its untested rules."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from ..streams.errors import throw_if_fatal
from .skip import UNTESTED, skip_reason


@dataclasses.dataclass
class Outcome:
    name: str
    jvm_name: str
    rule: str
    status: str  # required / optional / stochastic / untested
    result: str  # pass / fail / skip
    message: str = ""


@dataclasses.dataclass(frozen=True)
class UntestedRule:
    """A JVM TCK ``untested_*`` test: a rule no test can check, so the kit runs nothing for it."""

    name: str
    jvm_name: str
    rule: str
    why: str


def run_verification(verification: Any, rules: dict[str, tuple[str, str, str]]) -> list[Outcome]:
    """Call every ``test_*`` method of ``verification`` in the order of ``rules`` (untested rules have none)."""
    out = []
    methods = dict(inspect.getmembers(verification, inspect.ismethod))
    for name, (jvm, rule, status) in rules.items():
        if status == "untested":
            continue
        method = methods[name]
        out.append(_outcome(method, name, jvm, rule, status))
    return out


def _outcome(method: Any, name: str, jvm: str, rule: str, status: str) -> Outcome:
    """Run one test: a skip (ours, unittest's, pytest's) is a skip; fatal errors propagate."""
    try:
        method()
    except BaseException as exc:
        reason = skip_reason(exc)  # first: pytest's skip is a BaseException, not a fatal error
        if reason is not None:
            return Outcome(name, jvm, rule, status, "skip", reason)
        throw_if_fatal(exc)  # KeyboardInterrupt, SystemExit: the run stops
        if isinstance(exc, AssertionError):
            return Outcome(name, jvm, rule, status, "fail", str(exc))
        # an error in the implementation under test is a failure too
        return Outcome(name, jvm, rule, status, "fail", f"{type(exc).__name__}: {exc}")
    return Outcome(name, jvm, rule, status, "pass")


def rules_of(verification: Any) -> dict[str, tuple[str, str, str]]:
    """The RULES table matching a verification (an instance or a class)."""
    from .processor import PROCESSOR_RULES, IdentityProcessorVerification
    from .publisher import RULES, PublisherVerification
    from .subscriber import (
        BLACKBOX_RULES,
        WHITEBOX_RULES,
        SubscriberBlackboxVerification,
        SubscriberWhiteboxVerification,
    )

    for cls, table in (
        (IdentityProcessorVerification, PROCESSOR_RULES),
        (PublisherVerification, RULES),
        (SubscriberWhiteboxVerification, WHITEBOX_RULES),
        (SubscriberBlackboxVerification, BLACKBOX_RULES),
    ):
        if isinstance(verification, cls) or (isinstance(verification, type) and issubclass(verification, cls)):
            return table
    raise TypeError(f"{type(verification).__name__} is not a TCK verification")


def run(verification: Any) -> dict[str, tuple[str, str]]:
    """Every test of ``verification``: ``{test name: ("pass" | "fail" | "skip", message)}``.

    The JVM TCK's untested rules are not among them: :func:`untested_rules` lists those.
    """
    return {o.name: (o.result, o.message) for o in run_verification(verification, rules_of(verification))}


def untested_rules(verification: Any) -> list[UntestedRule]:
    """The rules ``verification`` (an instance or a class) does not verify, each once, with why.

    These are the JVM TCK's ``untested_*`` tests, which can only ever skip; the kit reports them
    here (and ``python -m rs_spark.tck`` prints them) instead of running them as skipped tests.
    """
    return [
        UntestedRule(name, jvm, rule, UNTESTED[name])
        for name, (jvm, rule, status) in rules_of(verification).items()
        if status == "untested"
    ]


__all__ = ["Outcome", "UntestedRule", "run_verification", "run", "rules_of", "untested_rules"]
