"""A timer thread for delayed actions (batch timeouts, test timeouts), shared per process.

One daemon thread sleeps on a condition until the earliest deadline; nothing busy-waits.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Protocol

from .errors import report_dropped


class TimerHandle:
    """Returned by :meth:`Scheduler.schedule`; ``cancel()`` stops a pending action."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class SchedulerLike(Protocol):
    """What a timed operator needs (``batch(..., scheduler=)``): run ``action`` once ``delay``
    seconds have passed, unless the returned handle is cancelled first. Tests pass a manual clock."""

    def schedule(self, delay: float, action: Callable[[], None]) -> TimerHandle: ...


class Scheduler:
    """Runs callables after a delay on one daemon thread, started on first use."""

    def __init__(self, name: str = "rs-spark-timer") -> None:
        self._name = name
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, TimerHandle, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def schedule(self, delay: float, action: Callable[[], None]) -> TimerHandle:
        """Run ``action`` on the timer thread once ``delay`` seconds have passed, unless cancelled."""
        handle = TimerHandle()
        deadline = time.monotonic() + max(0.0, delay)
        with self._cond:
            heapq.heappush(self._heap, (deadline, next(self._seq), handle, action))
            if self._thread is None or not self._thread.is_alive():
                self._start_thread()
            self._cond.notify()
        return handle

    def _start_thread(self) -> None:
        """Start the timer thread (with ``_cond`` held)."""
        self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while True:
                    if not self._heap:
                        self._cond.wait()
                        continue
                    deadline, _, handle, action = self._heap[0]
                    now = time.monotonic()
                    if handle.cancelled:
                        heapq.heappop(self._heap)
                        continue
                    if deadline > now:
                        self._cond.wait(deadline - now)
                        continue
                    heapq.heappop(self._heap)
                    break
            try:
                action()
            except Exception as exc:
                report_dropped(exc, "a scheduled action raised")
            except BaseException:
                # Fatal (e.g. SystemExit from a subscriber the action drove): it ends this thread, as
                # it would any thread. Another takes over the pending actions, so they still run.
                with self._cond:
                    self._start_thread()
                raise


_default: Scheduler | None = None
_default_lock = threading.Lock()


def default_scheduler() -> Scheduler:
    """The process's timer thread (created lazily; after fork a new one is started)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Scheduler()
        return _default


__all__ = ["Scheduler", "SchedulerLike", "TimerHandle", "default_scheduler"]
