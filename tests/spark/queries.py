"""Waiting on a running streaming query: its progress reports are the observable events."""

from __future__ import annotations

from typing import Any

from ..waits import wait_until


def _active(q: Any) -> None:
    if not q.isActive:
        raise AssertionError(f"the query ended while the test waited on it: {q.exception()}")


def wait_for_progress(q: Any, reports: int = 1, timeout: float = 120.0) -> None:
    """Wait until ``q`` reported ``reports`` micro-batches (with rows or not); fails if it ends first."""

    def reported() -> bool:
        _active(q)
        return len(q.recentProgress) >= reports

    wait_until(reported, f"{reports} progress report(s) of query {q.name or q.id}", timeout, interval=0.05)


def wait_for_rows(q: Any, batches: int = 1, rows: int = 1, timeout: float = 120.0) -> None:
    """Wait until ``q`` ran ``batches`` micro-batches that read rows, ``rows`` rows in all; fails
    (with the query's error) if it ends first."""

    def read() -> bool:
        _active(q)
        sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
        return len(sizes) >= batches and sum(sizes) >= rows

    wait_until(read, f"{batches} micro-batch(es) with {rows}+ rows in query {q.name or q.id}", timeout, interval=0.05)


def count(spark: Any, table: str) -> int:
    """Rows in a memory sink's table so far."""
    return spark.sql(f"select count(*) from {table}").first()[0]


def wait_for_count(spark: Any, table: str, n: int, timeout: float = 60.0) -> None:
    """Wait until the memory sink ``table`` holds ``n`` rows."""
    wait_until(
        lambda: count(spark, table) >= n, lambda: f"{n} rows in {table}, which has {count(spark, table)}", timeout, 0.2
    )
