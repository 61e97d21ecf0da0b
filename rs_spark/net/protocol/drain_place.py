"""Which thread delivers an inbound stream's payloads to its Subscriber (:class:`DrainPlace`).

A payload arrives on the connection's reader thread. Handing its delivery to the connection's
signal thread costs a thread's wake-up per payload; at a few thousand payloads a second, each
wake-up contending for the GIL with the other threads of the process, those hand-offs were most of
a real-time pipeline's CPU and latency (docs/realtime.md, "Two partitions"). Delivering on the
reader saves them, but while the Subscriber's ``on_next`` runs, the reader reads nothing: not the
peer's keepalives, not the other streams of the connection.

So delivery starts on the signal thread and moves to the reader once :data:`QUICK_IN_A_ROW` drains
in a row each took less than :data:`SLOW_SECONDS` (wall clock); one slower drain on the reader moves it back, and
it then needs four times as many quick drains to move again (up to :data:`MOST_IN_A_ROW`). A
Subscriber that blocks now and then (a flush, a slow write) is soon delivered to on the signal
thread only; one that blocks longer than the peer's keepalive timeout the first time it is slow
makes the peer close the connection, which the real-time sink and a resumable stream then
reconnect without losing or repeating a row.

The decision is :func:`after_drain`, a pure function of the state and one drain's duration; its
cases are the table in ``tests/net/test_drain_place.py``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

SLOW_SECONDS = 0.250
"""A drain this long is slow: far above what waiting for the GIL adds to a quick drain in a busy process
(a 5 ms switch interval each time it is taken again: at 20 ms, a busy benchmark moved every stream back
to the signal thread for good), far below a keepalive timeout (seconds)."""
QUICK_IN_A_ROW = 32
"""Quick drains in a row, on the signal thread, before delivery moves to the reader the first time."""
MOST_IN_A_ROW = 8192
"""The most quick drains in a row ever asked before delivery moves to the reader again."""


class Place(enum.Enum):
    """The thread a stream's drain runs on."""

    SIGNAL = "signal"  # the connection's signal thread (a hand-off per payload)
    READER = "reader"  # the reader thread that took the payload (no hand-off)


@dataclass(frozen=True, slots=True)
class DrainPlace:
    """Where drains run now, the quick drains in a row seen there, and how many moving to the reader needs."""

    place: Place = Place.SIGNAL
    quick: int = 0
    needed: int = QUICK_IN_A_ROW


def after_drain(state: DrainPlace, seconds: float) -> DrainPlace:
    """Where the next drain runs, after one that took ``seconds`` (wall clock) at ``state.place``."""
    slow = seconds >= SLOW_SECONDS
    if state.place is Place.READER:
        if slow:  # the reader was held: back to the signal thread, and harder to come back
            return DrainPlace(Place.SIGNAL, 0, min(state.needed * 4, MOST_IN_A_ROW))
        return state
    if slow:
        return DrainPlace(Place.SIGNAL, 0, state.needed)
    if state.quick + 1 >= state.needed:
        return DrainPlace(Place.READER, 0, state.needed)
    return DrainPlace(Place.SIGNAL, state.quick + 1, state.needed)


__all__ = ["Place", "DrainPlace", "after_drain", "SLOW_SECONDS", "QUICK_IN_A_ROW", "MOST_IN_A_ROW"]
