"""benchmarks/_max_rate.py: the search for a path's highest sustained rate, against paths whose limit is known."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _max_rate import P99_LIMIT, Trial, find_max_rate  # noqa: E402


def path_with_limit(limit: float, why: str = "p99"):
    """A fake path that sustains every rate up to ``limit`` and fails above it in the way ``why`` names."""
    tried: list[float] = []

    def run(rate: float) -> Trial:
        tried.append(rate)
        ok = rate <= limit
        offered = int(rate * 20) if ok or why != "offer" else int(rate * 10)
        measured = offered if ok or why != "missed" else offered - 1
        p99 = 0.001 if ok or why != "p99" else P99_LIMIT * 2
        return Trial(rate, 20, offered, measured, p99)

    return run, tried


CASES = [
    # limit, why it fails above, start -> best rate, first rate not sustained
    (100_000, "p99", 25_000, 100_000, 125_000),  # 25k 50k 100k pass, 200k 150k 125k fail
    (130_000, "missed", 25_000, 125_000, 150_000),  # 200k 150k fail, 125k passes
    (60_000, "offer", 25_000, 50_000, 62_000),  # 100k 75k 62k fail
    (10_000, "p99", 25_000, 6_000, 12_000),  # the start fails: 12k fails, 6k passes
    (5_000_000, "p99", 25_000, 3_200_000, None),
]


@pytest.mark.parametrize("limit,why,start,best,failed", CASES)
def test_find_max_rate_doubles_then_halves_the_gap(limit, why, start, best, failed):
    run, tried = path_with_limit(limit, why)
    got, fail = find_max_rate(run, start)
    assert (got.rate if got else None) == best
    assert (fail.rate if fail else None) == failed
    assert all(t <= 4_000_000 for t in tried)


def test_why_not_names_what_fell_short():
    assert Trial(1000, 20, 20_000, 20_000, 0.01).why_not == ""
    assert "publisher emitted" in Trial(1000, 20, 10_000, 10_000, 0.01).why_not
    assert "3 of 20,000 rows not delivered" in Trial(1000, 20, 20_000, 19_997, 0.01).why_not
    assert "p99 60.0 ms" in Trial(1000, 20, 20_000, 20_000, 0.06).why_not
    assert "p99" in Trial(1000, 20, 20_000, 20_000, float("nan")).why_not
