"""The frames a connection has yet to write, and the memory they hold (:class:`WriteQueue`).

Every thread of a connection queues frames here and its writer thread takes them. A frame queued
while the writer is idle and nothing waits before it goes out at once from the queueing thread,
without blocking (what the socket does not take waits for the writer, in order): a thread's wake-up
costs more than the send, and at a few thousand frames a second those wake-ups, each contending for
the GIL, were most of a real-time pipeline's CPU (docs/realtime.md). Frames queued while the writer
is busy, or in a burst (within :data:`BURST_SECONDS` of the last frame sent at once), wait and leave
together in one send. The queue counts its bytes
for three bounds: ``Limits.high_water_bytes`` (outbound streams wait for the queue to drain to half
of it), ``Limits.reply_high_water_bytes`` (through :class:`~.replies.ReplyGate`: the connection
stops reading a peer that leaves our replies unread) and the server's :class:`~.budget.OutboundBudget`
shared by all its connections. Past ``Limits.max_backlog_bytes``, or past the server's budget, its
owner is told and closes the connection.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from . import frames as F
from .budget import FRAME_OVERHEAD, OutboundBudget
from .limits import Limits
from .replies import ReplyGate

BATCH_BYTES = 4 * 1024 * 1024
"""About the most bytes the writer takes for one send (one ``sendmsg`` of many frames)."""
DIRECT_MIN_BYTES = 0
"""Frames this big may be sent by the thread queueing them, when nothing waits before them."""

BURST_SECONDS = 0.0001
"""A frame queued this soon after one sent at once is part of a burst: the writer sends the burst in one go."""

SendNow = Callable[[list[F.Buffer]], int]
"""Sends what the socket takes of a frame without blocking; returns the bytes sent (0 on any error:
the writer meets it and closes)."""


def frame_length(frame: list[F.Buffer]) -> int:
    """Bytes of an encoded frame (a list of buffers)."""
    n = 0
    for b in frame:
        n += len(b)
    return n


def _rest(frame: list[F.Buffer], sent: int) -> list[F.Buffer]:
    """The part of ``frame`` (a list of buffers) after its first ``sent`` bytes."""
    out: list[F.Buffer] = []
    for b in frame:
        n = len(b)
        if sent >= n:
            sent -= n
            continue
        out.append(memoryview(b)[sent:] if sent else b)
        sent = 0
    return out


class WriteQueue:
    """Encoded frames in the order they were queued, until the writer has written them.

    Invariant (under the queue's lock): ``bytes`` is the sum of the lengths of the frames queued and
    of those the writer has taken and not yet reported written; the server's budget holds exactly
    ``bytes + FRAME_OVERHEAD * frames`` for this queue, for the same frames (charged when a frame is
    queued, given back when it is written or dropped). Once closed, nothing more is queued; once the
    writer is done, nothing queued is ever written, so everything is given back.
    """

    def __init__(
        self,
        limits: Limits,
        *,
        over_budget: Callable[[OutboundBudget], None],
        over_cap: Callable[[int], None],
        budget: OutboundBudget | None = None,
        send_now: SendNow | None = None,
    ) -> None:
        self.high_water = limits.high_water_bytes
        self.cap = max(limits.max_backlog_bytes, limits.high_water_bytes + 2 * limits.max_frame_bytes)
        """The most bytes queued before ``over_cap`` is told (never below what paused streams may still queue)."""
        self._budget = budget  # the server's, shared by its connections (None: a client's)
        self._over_budget = over_budget  # closes the owner: it holds the most of the budget, or its frame never fits
        self._over_cap = over_cap  # closes the owner: its peer stopped reading
        self._send_now = send_now
        self._sent_now_at: float | None = None  # time.monotonic() of the last frame sent at once (None: none yet)
        self._out: deque[list[F.Buffer]] = deque()
        self._bytes = 0
        self._inflight = (0, 0)  # bytes and frames the writer has taken, not yet written
        self._writing = False  # the writer thread is inside a send
        self._closed = False  # no frame is queued any more
        self._flush = False  # closed, with final frames the writer still writes
        self._dropped = False  # closed, and what was queued forgotten: the writer stops
        self._writer_done = False  # after this, nothing queued is ever written
        self._replies = ReplyGate(limits.reply_high_water_bytes)
        self._paused: dict[int, Callable[[], None]] = {}
        lock = threading.Lock()
        self._cond = threading.Condition(lock)  # the writer waits on it for frames
        self._drained = threading.Condition(lock)  # the reader waits on it for replies to drain

    # -- what the owner reads -----------------------------------------------------------
    @property
    def bytes(self) -> int:
        """Bytes queued or being written."""
        return self._bytes

    @property
    def unread_replies(self) -> int:
        """Bytes of replies queued for the peer (each frame's length plus ``FRAME_OVERHEAD``)."""
        return self._replies.bytes

    @property
    def reading_paused(self) -> bool:
        """Whether the replies queued passed ``Limits.reply_high_water_bytes`` (and have not drained to half)."""
        return self._replies.paused

    # -- queueing -----------------------------------------------------------------------
    def put(self, frame: list[F.Buffer], reply: bool) -> bool:
        """Queue ``frame`` (``reply``: one the peer's own frames made us send); False if it was dropped:
        the queue is closed or the frame does not fit the server's budget. Tells ``over_cap`` when the
        queue has grown past ``cap``."""
        n = frame_length(frame)
        if self._budget is not None and not self._take_budget(n + FRAME_OVERHEAD):
            return False
        with self._cond:
            if self._closed or self._writer_done:
                self._give(n, 1)
                return False
            self._replies.queued(n, reply)
            if self._send_now is not None and not self._out and not self._writing and not self._in_burst():
                frame, n = self._send_directly(frame, n)
                if n == 0:
                    return True
            self._out.append(frame)
            self._bytes += n
            if len(self._out) == 1:
                self._cond.notify()
            backlog = self._bytes
        if backlog > self.cap:
            self._over_cap(backlog)
        return True

    def _in_burst(self) -> bool:
        """Whether a frame sent at once now would follow the last one within BURST_SECONDS (under the lock)."""
        now = time.monotonic()
        # None until the first frame: monotonic() may start near 0 (seconds since boot), so no sentinel
        # time can stand for "never" without making a fresh machine's first frame look like a burst.
        burst = self._sent_now_at is not None and now - self._sent_now_at < BURST_SECONDS
        if not burst:
            self._sent_now_at = now
        return burst

    def _send_directly(self, frame: list[F.Buffer], n: int) -> tuple[list[F.Buffer], int]:
        """Send what the socket takes of a frame now, with the writer idle and nothing queued (saves a
        thread hand-off per frame); the rest and its length, for the writer, in order. Under the lock."""
        assert self._send_now is not None
        sent = self._send_now(frame)
        if self._replies.written(sent):
            self._drained.notify()
        if sent >= n:
            self._give(n, 1)
            return [], 0
        self._give(sent, 0)
        return _rest(frame, sent), n - sent

    def wait_drain(self, stream_id: int, resume: Callable[[], None]) -> bool:
        """If more than ``Limits.high_water_bytes`` are queued, keep ``resume`` to be returned by
        :meth:`written` once the queue has drained below half of it and return True; else False."""
        with self._cond:
            if self._bytes < self.high_water:
                return False
            self._paused[stream_id] = resume
            return True

    def forget(self, stream_id: int) -> None:
        """The stream ended: it waits for no drain."""
        self._paused.pop(stream_id, None)

    # -- closing ------------------------------------------------------------------------
    def close(self) -> None:
        """Queue nothing more; the owner then calls :meth:`flush` or :meth:`drop`, which the writer
        waits for (a writer that stopped in between would lose the final frames)."""
        self._closed = True

    def flush(self, final: list[list[F.Buffer]]) -> None:
        """Closed: the writer writes what is queued and ``final`` (charged whatever the budget), then stops."""
        with self._cond:
            self._flush = True
            for fr in final:
                self._out.append(fr)
                n = frame_length(fr)
                self._bytes += n
                if self._budget is not None:
                    self._budget.take(self, n + FRAME_OVERHEAD, force=True)
            self._wake_all()

    def drop(self) -> None:
        """Closed: forget the frames queued, giving their budget back."""
        with self._cond:
            self._dropped = True
            self._drop_queued()
            self._wake_all()

    def _wake_all(self) -> None:
        self._cond.notify_all()
        self._drained.notify_all()

    def _drop_queued(self) -> None:
        """Under the lock."""
        n = sum(frame_length(fr) for fr in self._out)
        self._give(n, len(self._out))
        self._bytes -= n
        self._out.clear()
        self._replies.dropped()

    # -- the writer thread --------------------------------------------------------------
    def take(self) -> tuple[list[F.Buffer], int] | None:
        """Wait for frames; then some, up to about ``BATCH_BYTES``, as one list of buffers, and their bytes.
        None when the writer should stop: closed, with nothing left to flush."""
        with self._cond:
            # Closed, the owner's flush (final frames) or drop is awaited: what it flushes must be written.
            while not (self._out and (self._flush or not self._closed)):
                if self._closed and (self._flush or self._dropped):
                    return None
                self._cond.wait()
            batch: list[F.Buffer] = []
            n = frames = 0
            out = self._out
            while out and n < BATCH_BYTES:
                fr = out.popleft()
                frames += 1
                batch.extend(fr)
                n += frame_length(fr)
            self._inflight = (n, frames)
            self._writing = True
            return batch, n

    def written(self) -> list[Callable[[], None]]:
        """The frames last taken are written; the paused streams' ``resume`` to call, if it drained enough."""
        with self._cond:
            return self._written()

    def writer_done(self) -> bool:
        """The writer stopped: nothing queued will be written, all is given back. True if the queue was
        closed with final frames (they were written, unless the socket failed)."""
        with self._cond:
            self._writer_done = True
            self._written()
            self._drop_queued()
            return self._closed and self._flush

    def _written(self) -> list[Callable[[], None]]:
        """Under the lock."""
        n, frames = self._inflight
        self._inflight = (0, 0)
        self._writing = False
        self._bytes -= n
        self._give(n, frames)
        if self._replies.written(n):
            self._drained.notify()  # the reader reads the peer again
        resume: list[Callable[[], None]] = []
        if self._paused and self._bytes < self.high_water // 2:
            resume = list(self._paused.values())
            self._paused.clear()
        return resume

    # -- the reader thread --------------------------------------------------------------
    def wait_replies_drained(self, timeout: float) -> int | None:
        """While replies hold the reader (``reading_paused``) and the queue is open, wait up to ``timeout``
        for them to drain and return the bytes of replies still owed; None when the reader may read."""
        with self._cond:
            if not self._replies.paused or self._closed:
                return None
            self._drained.wait(timeout)
            return self._replies.bytes

    # -- the server's budget ------------------------------------------------------------
    def _take_budget(self, cost: int) -> bool:
        """Charge the server's budget ``cost`` bytes for a frame; if it does not fit, have the queue holding
        the most of it closed and try again, else have this one closed and return False."""
        budget = self._budget
        assert budget is not None
        if budget.take(self, cost):
            return True
        victim, _ = budget.largest()
        if isinstance(victim, WriteQueue) and victim is not self:
            victim._over_budget(budget)  # its owner closes: its queue is dropped, its bytes given back now
            if budget.take(self, cost):
                return True
        self._over_budget(budget)
        return False

    def _give(self, n: int, frames: int) -> None:
        """Give the server's budget back ``frames`` frames of ``n`` bytes written or dropped."""
        if self._budget is not None:
            self._budget.give(self, n + frames * FRAME_OVERHEAD)


__all__ = ["WriteQueue", "SendNow", "frame_length", "BATCH_BYTES", "BURST_SECONDS"]
