"""Run a verification's tests without pytest and collect pass / fail / skip per test."""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Dict, List, Tuple


@dataclasses.dataclass
class Outcome:
    name: str
    jvm_name: str
    rule: str
    status: str  # required / optional / stochastic / untested
    result: str  # pass / fail / skip
    message: str = ""


def run_verification(verification: Any, rules: Dict[str, Tuple[str, str, str]]) -> List[Outcome]:
    """Call every ``test_*`` method of ``verification`` in the order of ``rules``."""
    out = []
    methods = dict(inspect.getmembers(verification, inspect.ismethod))
    for name, (jvm, rule, status) in rules.items():
        method = methods[name]
        try:
            method()
        except AssertionError as exc:
            out.append(Outcome(name, jvm, rule, status, "fail", str(exc)))
        except Exception as exc:  # an error in the implementation under test is a failure too
            out.append(Outcome(name, jvm, rule, status, "fail", f"{type(exc).__name__}: {exc}"))
        except BaseException as exc:  # pytest.skip raises an OutcomeException (a BaseException)
            if type(exc).__name__ in ("Skipped", "SkipTest"):
                out.append(Outcome(name, jvm, rule, status, "skip", str(getattr(exc, "msg", exc))))
            else:
                raise
        else:
            out.append(Outcome(name, jvm, rule, status, "pass"))
    return out




def rules_of(verification: Any) -> Dict[str, Tuple[str, str, str]]:
    """The RULES table matching a verification instance."""
    from .processor import PROCESSOR_RULES, IdentityProcessorVerification
    from .publisher import RULES, PublisherVerification
    from .subscriber import (BLACKBOX_RULES, WHITEBOX_RULES, SubscriberBlackboxVerification,
                             SubscriberWhiteboxVerification)
    for cls, table in ((IdentityProcessorVerification, PROCESSOR_RULES), (PublisherVerification, RULES),
                       (SubscriberWhiteboxVerification, WHITEBOX_RULES),
                       (SubscriberBlackboxVerification, BLACKBOX_RULES)):
        if isinstance(verification, cls):
            return table
    raise TypeError(f"{type(verification).__name__} is not a TCK verification")


def run(verification: Any) -> Dict[str, Tuple[str, str]]:
    """Every test of ``verification``: ``{test name: ("pass" | "fail" | "skip", message)}``."""
    return {o.name: (o.result, o.message) for o in run_verification(verification, rules_of(verification))}


__all__ = ["Outcome", "run_verification", "run", "rules_of"]
