"""Demand across an outbound stream: the peer's credit in, requests to the local publisher out.

One :class:`CreditPump` per stream holds the two counts Reactor's operators keep as ``requested``
(here the peer's ``credit``, raised by REQUEST_N) and the demand issued upstream (``asked``), and
the serial drain that turns one into the other: signals that arrive while a drain is queued fold
into it (Reactor's ``wip``), so the publisher's ``request`` is called from one drain at a time
(rule 2.7). Not thread-safe: its stream calls it under its own lock.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from ...streams.demand import MAX_DEMAND, add_cap

CHUNK = 1024  # most elements requested from a local publisher per request() call
ARROW_ASK = 16  # most RecordBatches requested from a local publisher per request() call


class CreditPump:
    """Credit, outstanding demand and the drain's two marks for one outbound stream.

    ``rows``: the stream counts rows (record batches), so credit is in rows and requests are sized
    from the last batch's rows.
    """

    __slots__ = ("credit", "asked", "owed_since", "_last_rows", "_rows", "_queued", "requesting")

    def __init__(self, rows: bool) -> None:
        self.credit = 0  # what the peer allows us to send (rows when ``rows``)
        self.asked = 0  # requested from the local publisher, not yet received
        self.owed_since: float | None = None  # monotonic: since when the publisher owes rows (asked > 0)
        self._last_rows = 0  # rows: rows of the last element received (sizes the next request)
        self._rows = rows
        self._queued = False  # a drain is queued on the stream's executor (Reactor's wip > 0)
        self.requesting = False  # a drain is inside the publisher's request(): a cancel must not wait

    # -- credit from the peer ------------------------------------------------------------
    def grant(self, n: int) -> None:
        self.credit = add_cap(self.credit, n)

    def spend(self, rows: int) -> None:
        if self.credit != MAX_DEMAND:
            self.credit -= rows

    def revoke(self) -> None:
        """The peer is gone (or resumed): credit starts again at zero."""
        self.credit = 0

    # -- demand to the publisher ---------------------------------------------------------
    def received(self) -> bool:
        """An element arrived; False when it was not requested (rule 1.1)."""
        self.asked -= 1
        if self.asked <= 0:
            self.owed_since = None
        return self.asked >= 0

    def sized(self, rows: int) -> None:
        """The element that arrived holds ``rows`` rows (sizes the next request)."""
        self._last_rows = rows

    def wants_more(self, unsent: int) -> bool:
        """Whether a drain may ask the publisher for more, ``unsent`` rows waiting for credit."""
        if self._rows:
            return unsent == 0 and self.credit > 0 and self.asked == 0
        return self.asked <= CHUNK // 2 and self.credit > self.asked

    def want(self, room: Callable[[int], int], empty: bool) -> int:
        """How many elements to request now: what the credit calls for, cut to ``room(rows on their
        way)`` (what the stream may still hold; ``empty``: it holds nothing)."""
        k = self._for_credit()
        return self._within(k, room, empty) if k > 0 else 0

    def _for_credit(self) -> int:
        if self._rows:
            # Ask for as many elements as the peer's credit (in rows) covers at the last element's
            # size, 1..16: one request, and one drain, per several batches. What arrives beyond the
            # credit waits in the stream's queue: at most that many.
            if self.asked == 0 and self.credit > 0:
                return 1 if self._last_rows <= 0 else max(1, min(ARROW_ASK, self.credit // self._last_rows))
            return 0
        if self.asked <= CHUNK // 2:
            return min(self.credit, CHUNK) - self.asked
        return 0

    def _within(self, k: int, room: Callable[[int], int], empty: bool) -> int:
        """``k`` cut to what the stream may still hold: when it is full nothing is asked until
        room is freed (backpressure reaches the publisher; nothing is dropped)."""
        per = max(self._last_rows, 1) if self._rows else 1
        free = room(self.asked * per)
        if free >= k * per:
            return k
        if free > 0 and empty:
            return 1  # one element bigger than the whole bound still goes (else nothing ever would)
        return free // per

    def asked_for(self, k: int) -> None:
        if k > 0 and self.asked <= 0:
            self.owed_since = time.monotonic()
        self.asked += k

    def owed_for(self, now: float) -> float:
        """Seconds the publisher has owed rows it was asked for (0: it owes none)."""
        return 0.0 if self.owed_since is None else max(0.0, now - self.owed_since)

    # -- the drain -----------------------------------------------------------------------
    def claim(self) -> bool:
        """Queue a drain: True for the caller that must submit it, False when one is queued."""
        if self._queued:
            return False
        self._queued = True
        return True

    def draining(self) -> None:
        """The queued drain runs: a signal from now on queues another."""
        self._queued = False


@dataclasses.dataclass(frozen=True)
class Readiness:
    """How far a served stream's rows are ready without waiting on its publisher, measured where the
    publisher runs (:meth:`.outbound.OutboundStream.readiness`): rows before ``position`` were
    delivered by it; ``edge``: it is at its live edge (it ended, or it owed rows it was asked for as
    long as the question allows), False: it owes nothing (it waits for credit or room), None: it
    owes rows, for less than that: look again in ``left`` seconds."""

    position: int
    edge: bool | None
    left: float = 0.0


__all__ = ["CreditPump", "CHUNK", "ARROW_ASK", "Readiness"]
