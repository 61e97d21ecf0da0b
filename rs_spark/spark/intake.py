"""The source's Subscriber: turns micro-batch read limits into ``request(n)`` and checks the publisher.

It lives in Spark's long-lived driver-side reader process, so one subscription spans all
micro-batches. It holds at most ``max_buffered`` elements, counting both elements received
and demand not yet fulfilled, so a fast publisher can never flood it (rule 1.1 is what makes
that bound hold, and it is checked: a publisher that sends more than requested, signals
after a terminal signal, or signals from two threads at once fails the query with an error
naming the rule and the offset).
"""
from __future__ import annotations

import collections
import queue
import threading
import time
from typing import Any, Deque, List, Optional, Tuple

import pyarrow as pa

from ..streams.demand import add_cap
from ..streams.errors import SpecViolation
from ..streams.types import Subscription

_COMPLETE = "complete"
_CANCEL = -1
_ARROW = (pa.RecordBatch, pa.Table)


class PublisherFailed(RuntimeError):
    """The publisher signalled ``on_error``; carries its type name and message."""

    def __init__(self, error: BaseException, offset: int) -> None:
        super().__init__(
            f"the publisher failed after {offset} records with {type(error).__module__}."
            f"{type(error).__qualname__}: {error}"
        )
        self.error = error
        self.offset = offset


class Intake:
    """A Subscriber with a bounded buffer; the reader process calls the other methods."""

    def __init__(self, max_buffered: int, base_offset: int) -> None:
        self.max_buffered = max_buffered
        self._cond = threading.Condition(threading.Lock())
        self._wake_at: Optional[int] = None  # a waiting reader wants received rows to reach this
        self._signal = threading.Lock()  # held during each signal: a second one at once breaks rule 1.3
        self._buffer: Deque[Any] = collections.deque()
        self._taken_rows = 0  # rows the reader took out; buffered = received - taken
        self._subscription: Optional[Subscription] = None
        # Every request/cancel goes through one thread: calls stay serial (rule 2.7), and a
        # synchronous publisher produces the next micro-batch there while Spark runs this one.
        self._calls: "queue.SimpleQueue[int]" = queue.SimpleQueue()
        self._caller: Optional[threading.Thread] = None
        self._requested = 0  # elements requested in total (saturating)
        self._received = 0  # elements received in total
        self._received_rows = 0
        self._terminal: Any = None  # _COMPLETE or the publisher's exception
        self._violation: Optional[SpecViolation] = None
        self._base_offset = base_offset  # stream offset of the first row this intake receives
        self.dropped_rows = 0  # rows dropped as malformed (set by the reader)
        self.last_signal = time.monotonic()

    # -- Subscriber (the publisher's threads) -------------------------------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None) (rule 2.13)")
        with self._cond:
            dup = self._subscription is not None
            if not dup:
                self._subscription = subscription
                self._caller = threading.Thread(target=self._call_loop, args=(subscription,),
                                                name="rs-spark-demand", daemon=True)
                self._caller.start()
            self._cond.notify_all()
        if dup:
            subscription.cancel()  # rule 2.5

    def on_next(self, item: Any) -> None:
        if item is None:
            self._violate("2.13", "the publisher signalled on_next(None)")
            raise TypeError("on_next(None) is illegal (rule 2.13)")
        if not self._signal.acquire(blocking=False):
            self._violate("1.3", "the publisher signalled on_next while another signal was still running "
                                 "(signals must not overlap)")
            return
        try:
            # No lock on this hot path: only this (serial) signal writes the receive counters,
            # the reader writes only the take counters, and deque appends are atomic.
            if not self._admit(1):
                return
            rows = item.num_rows if isinstance(item, _ARROW) else 1
            self._buffer.append(item)
            self._received += 1
            self._received_rows += rows
            w = self._wake_at
            if w is not None and self._received_rows >= w:
                with self._cond:
                    self._cond.notify_all()
        finally:
            self._signal.release()

    def _admit(self, n: int) -> bool:
        """Check the publisher may send ``n`` more elements now (rules 1.7, 1.1); record why not."""
        if self._violation is not None:
            return False
        if self._terminal is not None:
            self._violate("1.7", "the publisher signalled on_next after "
                          + ("on_complete" if self._terminal is _COMPLETE else "on_error"))
            return False
        if self._received + n > self._requested:
            self._violate("1.1", f"the publisher sent element #{self._received + n} but only "
                          f"{self._requested} were requested")
            return False
        return True

    def on_next_many(self, items: List[Any]) -> None:
        """Receive several elements in one call (from rs_spark's own sources; same rules)."""
        if not self._signal.acquire(blocking=False):
            self._violate("1.3", "the publisher signalled on_next while another signal was still running")
            return
        try:
            n = len(items)
            if not self._admit(n):
                return
            rows = n
            for item in items:
                if isinstance(item, _ARROW):
                    rows += item.num_rows - 1
            self._buffer.extend(items)
            self._received += n
            self._received_rows += rows
            w = self._wake_at
            if w is not None and self._received_rows >= w:
                with self._cond:
                    self._cond.notify_all()
        finally:
            self._signal.release()

    def on_error(self, error: BaseException) -> None:
        if error is None:
            self._violate("2.13", "the publisher signalled on_error(None)")
            raise TypeError("on_error(None) is illegal (rule 2.13)")
        self._terminate(error)

    def on_complete(self) -> None:
        self._terminate(_COMPLETE)

    def _terminate(self, signal: Any) -> None:
        if not self._signal.acquire(blocking=False):
            self._violate("1.3", "the publisher signalled a terminal signal while another signal was running")
            return
        try:
            with self._cond:
                if self._terminal is not None:
                    self._violate_locked("1.7", "the publisher signalled a second terminal signal")
                    return
                self._terminal = signal
                self.last_signal = time.monotonic()
                self._cond.notify_all()
        finally:
            self._signal.release()

    def _violate(self, rule: str, what: str) -> None:
        with self._cond:
            self._violate_locked(rule, what)

    def _violate_locked(self, rule: str, what: str) -> None:
        if self._violation is None:
            self._violation = SpecViolation(
                rule, f"{what}, at stream offset {self._base_offset + self._received_rows}; "
                "the publisher breaks the Reactive Streams spec, so the subscription was cancelled")
            self._calls.put(_CANCEL)  # not from inside the publisher's own signal
        self._cond.notify_all()

    # -- reader side ----------------------------------------------------------------------
    def check(self) -> None:
        """Raise the publisher's spec violation, if any."""
        v = self._violation
        if v is not None:
            raise v

    @property
    def outstanding(self) -> int:
        return self._requested - self._received

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    @property
    def buffered_rows(self) -> int:
        return self._received_rows - self._taken_rows

    @property
    def completed(self) -> bool:
        return self._terminal is _COMPLETE

    @property
    def failed(self) -> Optional[BaseException]:
        t = self._terminal
        return t if isinstance(t, BaseException) else None

    @property
    def terminated(self) -> bool:
        return self._terminal is not None

    @property
    def received_rows(self) -> int:
        return self._received_rows

    def rows_per_element(self) -> float:
        return self._received_rows / self._received if self._received else 1.0

    def demand_up_to(self, elements: int) -> int:
        """Request so that buffered + outstanding reaches ``elements`` (capped by the bound).
        Returns what was requested now."""
        with self._cond:
            s = self._subscription
            if s is None or self._terminal is not None or self._violation is not None:
                return 0
            target = min(elements, self.max_buffered)
            n = target - len(self._buffer) - (self._requested - self._received)
            if n <= 0:
                return 0
            self._requested = add_cap(self._requested, n)
        self._calls.put(n)
        return n

    def _call_loop(self, s: Subscription) -> None:
        calls = self._calls
        while True:
            n = calls.get()
            if n == _CANCEL:
                s.cancel()
                return
            try:
                s.request(n)
            except BaseException as exc:  # rule 3.16 says request returns normally; this one did not
                self._violate("3.16", f"the publisher's Subscription.request({n}) raised "
                                      f"{type(exc).__name__}: {exc}")

    def wait(self, rows: int, timeout: float) -> bool:
        """Wait until ``rows`` rows are buffered, a terminal/violation arrives, or ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._wake_at = self._taken_rows + rows
            try:
                while (self._received_rows - self._taken_rows < rows and self._terminal is None and self._violation is None
                       and (self._requested > self._received or self._subscription is None)):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._cond.wait(left)
                return self._received_rows - self._taken_rows >= rows
            finally:
                self._wake_at = None


    def take_rows(self, max_rows: Optional[int]) -> List[Any]:
        """Remove up to ``max_rows`` rows (all when None) from the buffer, splitting a batch element."""
        buf = self._buffer
        avail = self._received_rows - self._taken_rows
        budget = avail if max_rows is None else min(max_rows, avail)
        if budget <= 0:
            return []
        first = buf[0]
        if not isinstance(first, _ARROW) and len(buf) == budget == avail:
            out = [buf.popleft() for _ in range(budget)]  # the common case: every row, all plain elements
            self._taken_rows += budget
            return out
        out = []
        pop = buf.popleft
        taken = 0
        while taken < budget and buf:
            e = buf[0]
            n = e.num_rows if isinstance(e, _ARROW) else 1
            if taken + n <= budget:
                out.append(pop())
                taken += n
            else:
                cut = budget - taken
                out.append(e.slice(0, cut))
                buf[0] = e.slice(cut)  # only the reader touches the head; the publisher appends at the tail
                taken += cut
        self._taken_rows += taken
        return out

    def cancel(self, wait: float = 0.0) -> bool:
        """Cancel (through the demand thread, after any request already queued).

        ``wait`` > 0 blocks up to that many seconds until the publisher has been told: the
        reader process may exit right after ``stop()``, taking the demand thread with it.
        Returns whether the cancel was delivered (or nothing was subscribed).
        """
        self._calls.put(_CANCEL)
        caller = self._caller
        if caller is None:
            return True
        if wait > 0:
            caller.join(wait)
        return not caller.is_alive()

    def stats(self) -> Tuple[int, int, int, int]:
        """(requested, received, buffered elements, outstanding demand)."""
        requested, received = self._requested, self._received
        return requested, received, len(self._buffer), requested - received


__all__ = ["Intake", "PublisherFailed"]
