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


__all__ = ["Outcome", "run_verification"]
