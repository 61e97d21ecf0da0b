"""The highest rate a path sustains (latency.py --max-rate): double the rate while a run sustains
it, then halve the gap between the last rate sustained and the first that was not."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

P99_LIMIT = 0.050
"""Sustained: every row offered measured, the offer kept up, and p99 at most this (seconds)."""
OFFER_KEPT = 0.98
"""The publisher must emit at least this share of the rate asked (else the offer, not the path, fell short)."""


@dataclass(frozen=True)
class Trial:
    """One run at ``rate`` rows/s over ``seconds``: rows offered, rows measured, p99 (seconds)."""

    rate: float
    seconds: float
    offered: int
    measured: int
    p99: float

    @property
    def why_not(self) -> str:
        """Why the run did not sustain its rate; empty when it did."""
        if self.offered < OFFER_KEPT * self.rate * self.seconds:
            return f"the publisher emitted {self.offered / self.seconds:,.0f} rows/s"
        if self.measured < self.offered:
            return f"{self.offered - self.measured:,} of {self.offered:,} rows not delivered"
        if not self.p99 <= P99_LIMIT:
            return f"p99 {self.p99 * 1000:.1f} ms"
        return ""


def find_max_rate(
    run: Callable[[float], Trial], start: float, *, most: float = 4_000_000.0, refine: int = 2
) -> tuple[Trial | None, Trial | None]:
    """The best trial sustained and the lowest one not (None when every trial failed, or none did):
    from ``start``, doubling up to ``most``, then ``refine`` halvings of the gap (rates in whole thousands)."""
    best: Trial | None = None
    failed: Trial | None = None
    rate = start
    while rate <= most:
        t = run(rate)
        if t.why_not:
            failed = t
            break
        best = t
        rate *= 2
    low = best.rate if best else 0.0
    for _ in range(refine if failed else 0):
        mid = round((low + failed.rate) / 2 / 1000) * 1000
        if mid <= low or mid >= failed.rate:
            break
        t = run(mid)
        if t.why_not:
            failed = t
        else:
            best, low = t, mid
    return best, failed


__all__ = ["Trial", "find_max_rate", "P99_LIMIT", "OFFER_KEPT"]
