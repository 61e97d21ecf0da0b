"""Demand across an outbound stream: the peer's credit in, requests to the local publisher out.

One :class:`CreditPump` per stream holds the two counts Reactor's operators keep as ``requested``
(here the peer's ``credit``, raised by REQUEST_N) and the demand issued upstream (``asked``), and
the serial drain that turns one into the other: signals that arrive while a drain is queued fold
into it (Reactor's ``wip``), so the publisher's ``request`` is called from one drain at a time
(rule 2.7). Not thread-safe: its stream calls it under its own lock.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable

from ...streams.demand import MAX_DEMAND, add_cap

CHUNK = 1024  # most elements requested from a local publisher per request() call
ARROW_ASK = 16  # most RecordBatches requested from a local publisher per request() call


class CreditPump:
    """Credit, outstanding demand and the drain's two marks for one outbound stream.

    ``rows``: the stream counts rows (record batches), so credit is in rows and requests are sized
    from the last batch's rows.
    """

    __slots__ = (
        "credit",
        "asked",
        "_asks",
        "_request_began",
        "_delivered_at",
        "_last_rows",
        "_rows",
        "_queued",
        "requesting",
    )

    def __init__(self, rows: bool) -> None:
        self.credit = 0  # what the peer allows us to send (rows when ``rows``)
        self.asked = 0  # requested from the local publisher, not yet received
        # The asks still owed, oldest first: [when request() returned (None: inside it), elements owed].
        # At most a few: the drain asks again only once most of the last ask came.
        self._asks: collections.deque[list] = collections.deque()
        self._request_began = 0.0  # monotonic, of the request() under way
        self._delivered_at = 0.0  # monotonic, of the last element received
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
    def received(self, now: float = 0.0) -> bool:
        """An element arrived (at ``now``, monotonic); False when it was not requested (rule 1.1)."""
        self.asked -= 1
        self._delivered_at = now
        if self._asks:
            self._asks[0][1] -= 1
            if self._asks[0][1] <= 0:
                self._asks.popleft()
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

    def asked_for(self, k: int, now: float = 0.0) -> None:
        """``request(k)`` is about to be called (at ``now``, monotonic)."""
        self.asked += k
        if k > 0:
            self._asks.append([None, k])
            self._request_began = now

    def returned(self, now: float) -> None:
        """The publisher's ``request()`` returned: rows it still owes of that ask count as owed from now."""
        self.requesting = False
        for ask in self._asks:
            if ask[0] is None:
                ask[0] = now

    def owing(self, now: float, wait: float) -> float | None:
        """Whether the publisher pauses, by its own clock: seconds until it has owed rows ``wait``
        seconds (0: it has; None: it owes none). An ask owes from when its ``request()`` returned;
        inside ``request()`` a publisher emitting as asked is not pausing until it is quiet for
        ``wait`` (or has been inside for ``10 x wait``: a request() that blocks that long waits for
        its data, as a blocking generator does)."""
        if self.asked <= 0 or not self._asks:
            return None
        since = self._asks[0][0]
        if since is not None:
            return max(0.0, wait - (now - since))
        quiet = now - max(self._delivered_at, self._request_began)
        inside = now - self._request_began
        return max(0.0, min(wait - quiet, 10 * wait - inside))

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
