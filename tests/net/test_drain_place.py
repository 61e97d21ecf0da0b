"""Which thread delivers an inbound stream (rs_spark.net.protocol.drain_place): the decision as a
table, and a real connection moving its deliveries to the reader thread while the Subscriber is
quick and back to the signal thread after one slow ``on_next``."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net.protocol.drain_place import (
    MOST_IN_A_ROW,
    QUICK_IN_A_ROW,
    SLOW_SECONDS,
    DrainPlace,
    Place,
    after_drain,
)

from ..waits import wait_until

S, R = Place.SIGNAL, Place.READER
QUICK, SLOW = SLOW_SECONDS / 10, SLOW_SECONDS
N = QUICK_IN_A_ROW

# (where it is, quick drains in a row, needed) + one drain's seconds -> (where next, quick, needed)
TABLE = [
    ("the first quick drain counts", (S, 0, N), QUICK, (S, 1, N)),
    ("quick drains count on", (S, 5, N), QUICK, (S, 6, N)),
    ("the last quick drain needed moves delivery to the reader", (S, N - 1, N), QUICK, (R, 0, N)),
    ("a slow drain on the signal thread starts the count again", (S, N - 1, N), SLOW, (S, 0, N)),
    ("a drain just under the mark is quick", (S, 0, N), SLOW * 0.999, (S, 1, N)),
    ("quick drains on the reader stay there", (R, 0, N), QUICK, (R, 0, N)),
    ("a slow drain on the reader moves back, needing four times as many", (R, 0, N), SLOW, (S, 0, 4 * N)),
    ("the quick drains needed never pass the most", (R, 0, MOST_IN_A_ROW), SLOW, (S, 0, MOST_IN_A_ROW)),
    ("after moving back, the count starts from zero", (S, 0, 4 * N), QUICK, (S, 1, 4 * N)),
    ("after moving back, the larger count moves it again", (S, 4 * N - 1, 4 * N), QUICK, (R, 0, 4 * N)),
]


@pytest.mark.parametrize("case,state,seconds,expected", TABLE, ids=[row[0] for row in TABLE])
def test_drain_place_table(case: str, state: tuple, seconds: float, expected: tuple) -> None:
    assert after_drain(DrainPlace(*state), seconds) == DrainPlace(*expected), case


def test_every_place_is_reached_by_the_table() -> None:
    assert {row[3][0] for row in TABLE} == set(Place) and {row[1][0] for row in TABLE} == set(Place)


class Where:
    """Takes one element at a time and records the name of the thread each on_next ran on; the
    element ``slow_at`` takes ``SLOW_SECONDS * 1.5`` (a slow Subscriber: it paces, it synchronises nothing)."""

    def __init__(self, slow_at: int) -> None:
        self.threads: list[str] = []
        self.slow_at = slow_at
        self.error: BaseException | None = None

    def on_subscribe(self, s: Any) -> None:
        self.s = s
        s.request(1)

    def on_next(self, x: Any) -> None:
        self.threads.append(threading.current_thread().name)
        if len(self.threads) == self.slow_at:
            threading.Event().wait(SLOW_SECONDS * 1.5)
        self.s.request(1)

    def on_error(self, e: BaseException) -> None:
        self.error = e

    def on_complete(self) -> None:
        pass


def test_deliveries_move_to_the_reader_while_quick_and_back_after_a_slow_on_next() -> None:
    total = 3 * QUICK_IN_A_ROW
    server = net.serve(rs.range_(total), name="numbers")
    try:
        sub = Where(slow_at=2 * QUICK_IN_A_ROW)
        net.connect(server.address).subscribe(sub)
        wait_until(lambda: len(sub.threads) == total or sub.error is not None, "every element delivered", timeout=30)
        assert sub.error is None
        kinds = ["reader" if t.startswith("rs-net-reader") else "signal" for t in sub.threads]
        assert all(t.startswith(("rs-net-reader", "rs-net-signals")) for t in sub.threads), set(sub.threads)
        first_reader = kinds.index("reader")
        # One element a drain: QUICK_IN_A_ROW quick drains on the signal thread, then the reader.
        assert set(kinds[:first_reader]) == {"signal"} and QUICK_IN_A_ROW <= first_reader <= QUICK_IN_A_ROW + 2
        slow = sub.slow_at - 1
        assert kinds[slow] == "reader", "the slow on_next ran on the reader"
        # After it, the signal thread again: four times as many quick drains are needed to move back.
        assert set(kinds[slow + 2 :]) == {"signal"}
    finally:
        server.stop()
