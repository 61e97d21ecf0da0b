"""Demand arithmetic: the one place where requests are added and validated.

Modelled on RxJava's ``BackpressureHelper`` and Reactor's ``Operators.addCap``: every
publisher, operator and subscriber in rs_spark uses these helpers instead of its own
counters, so saturation (rule 3.17) and validation (rule 3.9) behave the same everywhere.
"""

from __future__ import annotations

MAX_DEMAND: int = 2**63 - 1
"""Demand saturates here; a demand this large is effectively unbounded (rule 3.17)."""


def add_cap(a: int, b: int) -> int:
    """Return ``a + b`` capped at :data:`MAX_DEMAND` (rule 3.17: no overflow, no error)."""
    r = a + b
    return MAX_DEMAND if r > MAX_DEMAND else r


def sub_produced(requested: int, produced: int) -> int:
    """Return the demand left after ``produced`` elements; unbounded demand stays unbounded."""
    if requested == MAX_DEMAND:
        return MAX_DEMAND
    r = requested - produced
    if r < 0:
        # Only a bug in the caller can get here: more was produced than requested (rule 1.1).
        raise AssertionError(f"produced {produced} elements against a demand of {requested} (rule 1.1)")
    return r


def is_valid_request(n: object) -> bool:
    """True when ``n`` is a positive ``int`` (``bool`` is not a count)."""
    return isinstance(n, int) and not isinstance(n, bool) and n > 0


def invalid_request_error(n: object) -> ValueError:
    """The error a Subscription signals through ``on_error`` for ``request(n <= 0)`` (rule 3.9)."""
    return ValueError(
        f"request({n!r}) is illegal: rule 3.9 requires a positive number of elements. "
        "Call request(n) with n > 0; to stop receiving elements call cancel()."
    )


__all__ = ["MAX_DEMAND", "add_cap", "sub_produced", "is_valid_request", "invalid_request_error"]
