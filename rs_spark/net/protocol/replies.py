"""The replies a connection owes its peer, and when to stop reading that peer (:class:`ReplyGate`).

A *reply* is a frame the peer's own frames make us send: an ERROR answering a request we refuse,
a KEEPALIVE echo, REQUEST_N for the payloads it sent, RESUME_OK, an acknowledgement's answer.
A peer that sends such frames and never reads would have us queue replies without end: each costs
the queue entry and its buffers, about twice its length for a small frame. Netty's answer is
``Channel.isWritable``: above an outbound high-water mark a server stops reading the channel until
its buffer drains below a low-water mark, so the peer's own TCP window pushes back on it. Here the
mark counts replies only: stream data is bounded by credit and ``Limits.high_water_bytes`` already,
and a reader paused for data would delay the REQUEST_N and CANCEL frames that steer that data.

Replies are counted by their place in the connection's queue (bytes queued before them), so
data frames cost two additions and no per-frame record. Not thread-safe: the connection's lock
guards it.
"""

from __future__ import annotations

from collections import deque

from .budget import FRAME_OVERHEAD


class ReplyGate:
    """Replies queued and not yet written, in bytes (each frame's length plus ``FRAME_OVERHEAD``);
    ``paused`` from above ``high`` until at most ``high // 2`` are left (hysteresis, as Netty's
    write-buffer water marks)."""

    __slots__ = ("high", "low", "bytes", "paused", "_queued", "_written", "_ends")

    def __init__(self, high: int) -> None:
        self.high = high
        self.low = high // 2
        self.bytes = 0
        self.paused = False
        self._queued = 0  # bytes ever queued on the connection (data and replies)
        self._written = 0  # bytes ever written or dropped
        self._ends: deque[tuple[int, int]] = deque()  # per reply queued: (its end in the queue, its cost)

    def queued(self, n: int, reply: bool) -> None:
        """A frame of ``n`` bytes entered the queue (``reply``: one the peer's frames made us send)."""
        self._queued += n
        if reply:
            cost = n + FRAME_OVERHEAD
            self._ends.append((self._queued, cost))
            self.bytes += cost
            if self.bytes > self.high:
                self.paused = True

    def written(self, n: int) -> bool:
        """``n`` more bytes left the queue, oldest first; True when that ended a pause."""
        self._written += n
        ends = self._ends
        while ends and ends[0][0] <= self._written:
            self.bytes -= ends.popleft()[1]
        if self.paused and self.bytes <= self.low:
            self.paused = False
            return True
        return False

    def dropped(self) -> None:
        """Everything queued was dropped (the connection closed): nothing is owed."""
        self._written = self._queued
        self._ends.clear()
        self.bytes = 0
        self.paused = False


__all__ = ["ReplyGate"]
