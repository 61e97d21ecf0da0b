"""A scheduler whose clock moves only when the test says so, for timed operators (``batch(timeout=)``)."""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable

from rs_spark.streams.scheduler import TimerHandle


class ManualScheduler:
    """``schedule`` records the action; ``advance(seconds)`` moves the clock and runs the actions that
    became due, in deadline order, on the calling thread (like RxJava's TestScheduler)."""

    def __init__(self) -> None:
        self.now = 0.0
        self._lock = threading.Lock()
        self._due: list[tuple[float, int, TimerHandle, Callable[[], None]]] = []
        self._seq = itertools.count()

    def schedule(self, delay: float, action: Callable[[], None]) -> TimerHandle:
        handle = TimerHandle()
        with self._lock:
            heapq.heappush(self._due, (self.now + max(0.0, delay), next(self._seq), handle, action))
        return handle

    @property
    def pending(self) -> int:
        """Actions scheduled and neither run nor cancelled."""
        with self._lock:
            return sum(1 for _, _, h, _ in self._due if not h.cancelled)

    def advance(self, seconds: float) -> int:
        """Move the clock by ``seconds``; run what is due (and not cancelled). Returns how many ran."""
        ran = 0
        with self._lock:
            self.now += seconds
        while True:
            with self._lock:
                if not self._due or self._due[0][0] > self.now:
                    return ran
                _, _, handle, action = heapq.heappop(self._due)
            if not handle.cancelled:
                action()
                ran += 1
