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
import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from ....streams.demand import add_cap
from ....streams.errors import SpecViolation, throw_if_fatal
from ....streams.types import Subscription
from .chunks import ARROW, Chunk, Precompute, converted, has_arrow, take_from

log = logging.getLogger("rs_spark.source")

_COMPLETE = object()  # the terminal signal on_complete (an error is stored as itself)
_CANCEL = -1  # on the demand thread's queue: cancel, then end the thread
_DETACH = -2  # leave the stream to its endpoint (ResumableSubscription.detach), then end the thread


class Intake:
    """A Subscriber with a bounded buffer; the reader process calls the other methods."""

    def __init__(self, max_buffered: int, base_offset: int, precompute: Precompute | None = None) -> None:
        self.max_buffered = max_buffered
        self._cond = threading.Condition(threading.Lock())
        self._wake_at: int | None = None  # a waiting reader wants received rows to reach this
        self._signal = threading.Lock()  # held during each signal: a second one at once breaks rule 1.3
        # Received elements, oldest first, in two stages: `_ready` (moved there by the converter
        # thread, plain runs converted to Chunks) then `_buffer` (as the publisher sent them).
        self._buffer: collections.deque[Any] = collections.deque()
        self._ready: collections.deque[Any] = collections.deque()
        self._head = threading.Condition(threading.Lock())  # the reader and the converter at the head
        self._converting = False  # the converter holds elements between the two stages
        self._precompute = precompute
        self.chunk = 8192  # elements the converter takes at once (the reader tunes it per micro-batch)
        self._convert_wake = threading.Event()
        self._converter: threading.Thread | None = None
        self._closed = False
        self._taken_rows = 0  # rows the reader took out; buffered = received - taken
        self._taken_elements = 0
        self._subscription: Subscription | None = None
        # Every request/cancel goes through one thread: calls stay serial (rule 2.7), and a
        # synchronous publisher produces the next micro-batch there while Spark runs this one.
        # Demand (n > 0), _CANCEL, _DETACH, or a call to make on the Subscription (on_commit).
        self._calls: queue.SimpleQueue[int | Callable[[Subscription], None]] = queue.SimpleQueue()
        self._caller: threading.Thread | None = None
        self._requested = 0  # elements requested in total (saturating)
        self._received = 0  # elements received in total
        self._received_rows = 0
        self._terminal: Any = None  # _COMPLETE or the publisher's exception
        self._violation: SpecViolation | None = None
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
                self._caller = threading.Thread(
                    target=self._call_loop, args=(subscription,), name="rs-spark-demand", daemon=True
                )
                self._caller.start()
                if self._precompute is not None:
                    self._converter = threading.Thread(target=self._convert_loop, name="rs-spark-convert", daemon=True)
                    self._converter.start()
            self._cond.notify_all()
        if dup:
            subscription.cancel()  # rule 2.5

    def on_next(self, item: Any) -> None:
        if item is None:
            self._violate("2.13", "the publisher signalled on_next(None)")
            raise TypeError("on_next(None) is illegal (rule 2.13)")
        if not self._signal.acquire(blocking=False):
            self._violate(
                "1.3",
                "the publisher signalled on_next while another signal was still running (signals must not overlap)",
            )
            return
        try:
            # No lock on this hot path: only this (serial) signal writes the receive counters,
            # the reader writes only the take counters, and deque appends are atomic.
            if not self._admit(1):
                return
            self._buffer.append(item)
            self._landed(1, item.num_rows if isinstance(item, ARROW) else 1)
        finally:
            self._signal.release()

    def _admit(self, n: int) -> bool:
        """Check the publisher may send ``n`` more elements now (rules 1.7, 1.1); record why not."""
        if self._violation is not None:
            return False
        if self._terminal is not None:
            self._violate(
                "1.7",
                "the publisher signalled on_next after "
                + ("on_complete" if self._terminal is _COMPLETE else "on_error"),
            )
            return False
        if self._received + n > self._requested:
            self._violate(
                "1.1", f"the publisher sent element #{self._received + n} but only {self._requested} were requested"
            )
            return False
        return True

    def on_next_many(self, items: list[Any]) -> None:
        """Receive several elements in one call (from rs_spark's own sources; same rules)."""
        if not self._signal.acquire(blocking=False):
            self._violate("1.3", "the publisher signalled on_next while another signal was still running")
            return
        try:
            n = len(items)
            if not self._admit(n):
                return
            rows = n
            if has_arrow(items):
                for item in items:
                    if isinstance(item, ARROW):
                        rows += item.num_rows - 1
            self._buffer.extend(items)
            self._landed(n, rows)
        finally:
            self._signal.release()

    def _landed(self, n: int, rows: int) -> None:
        """Count ``n`` elements (``rows`` rows) just added to the buffer; wake a reader waiting for
        them, and the converter once a chunk is there. Runs inside the (serial) signal."""
        self._received += n
        self._received_rows += rows
        w = self._wake_at
        if w is not None and self._received_rows >= w:
            with self._cond:
                self._cond.notify_all()
        if self._precompute is not None and len(self._buffer) >= self.chunk:
            self._convert_wake.set()

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
                rule,
                f"{what}, at stream offset {self._base_offset + self._received_rows}; "
                "the publisher breaks the Reactive Streams spec, so the subscription was cancelled",
            )
            self._calls.put(_CANCEL)  # not from inside the publisher's own signal
        self._cond.notify_all()

    # -- reader side ----------------------------------------------------------------------
    def check(self) -> None:
        """Raise the publisher's spec violation, if any."""
        v = self._violation
        if v is not None:
            raise v

    @property
    def violated(self) -> bool:
        return self._violation is not None

    @property
    def subscription(self) -> Subscription | None:
        return self._subscription

    @property
    def outstanding(self) -> int:
        return self._requested - self._received

    @property
    def buffered(self) -> int:
        return self._received - self._taken_elements

    @property
    def buffered_rows(self) -> int:
        return self._received_rows - self._taken_rows

    @property
    def completed(self) -> bool:
        return self._terminal is _COMPLETE

    @property
    def failed(self) -> BaseException | None:
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
        """Request so that buffered + outstanding reaches ``elements``, capped so that they hold
        at most ``max_buffered`` rows at the rows per element seen so far (a RecordBatch
        element counts its rows; one element is always allowed). Returns what was requested now."""
        with self._cond:
            s = self._subscription
            if s is None or self._terminal is not None or self._violation is not None:
                return 0
            per = self._received_rows / self._received if self._received else 1.0
            target = min(elements, max(1, int(self.max_buffered / max(per, 1.0))))
            n = target - (self._received - self._taken_elements) - (self._requested - self._received)
            if n <= 0:
                return 0
            self._requested = add_cap(self._requested, n)
        self._calls.put(n)
        return n

    def _call_loop(self, s: Subscription) -> None:
        calls = self._calls
        while True:
            n = calls.get()
            if n == _CANCEL or n == _DETACH:
                self._end_upstream(s, detach=n == _DETACH)
                return
            if not isinstance(n, int):
                self._call_subscription(s, n)
                continue
            try:
                s.request(n)
            except BaseException as exc:  # rule 3.16 says request returns normally; this one did not
                # Recorded even when fatal (SystemExit, CancelledError...): the query then fails
                # saying so instead of waiting for demand this thread would never signal again.
                self._violate("3.16", f"the publisher's Subscription.request({n}) raised {type(exc).__name__}: {exc}")
                if not isinstance(exc, Exception):  # fatal: cancel, as the violation says, and end this thread
                    self._cancel_upstream(s)
                    raise

    @staticmethod
    def _call_subscription(s: Subscription, fn: Callable[[Subscription], None]) -> None:
        try:
            fn(s)
        except Exception as exc:  # an acknowledgement the publisher fumbled must not stop the demand thread
            log.warning("format('reactive'): the publisher's on_commit raised %s: %s", type(exc).__name__, exc)

    def _end_upstream(self, s: Subscription, detach: bool) -> None:
        detach_fn = getattr(s, "detach", None) if detach else None
        if callable(detach_fn):
            detach_fn()
            return
        self._cancel_upstream(s)

    @staticmethod
    def _cancel_upstream(s: Subscription) -> None:
        try:
            s.cancel()
        except BaseException as exc:  # rule 3.15: cancel must return normally
            throw_if_fatal(exc)  # the demand thread ends here either way
            log.warning(
                "format('reactive'): the publisher's Subscription.cancel() raised %s: %s "
                "(Reactive Streams rule 3.15 says it must return normally); the subscription is "
                "abandoned",
                type(exc).__name__,
                exc,
            )

    def wait_subscribed(self, timeout: float, give_up: Callable[[], bool]) -> bool:
        """Wait until on_subscribe arrives, ``give_up()`` is true (checked when :meth:`wake` is
        called) or ``timeout``; returns whether on_subscribe arrived."""
        with self._cond:
            self._cond.wait_for(lambda: self._subscription is not None or give_up(), max(0.0, timeout))
            return self._subscription is not None

    def wake(self) -> None:
        """Wake :meth:`wait_subscribed` to look at its ``give_up`` again."""
        with self._cond:
            self._cond.notify_all()

    def wait(self, rows: int, timeout: float) -> bool:
        """Wait until ``rows`` rows are buffered, a terminal/violation arrives, or ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._wake_at = self._taken_rows + rows
            try:
                while (
                    self._received_rows - self._taken_rows < rows
                    and self._terminal is None
                    and self._violation is None
                    and (self._requested > self._received or self._subscription is None)
                ):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._cond.wait(left)
                return self._received_rows - self._taken_rows >= rows
            finally:
                self._wake_at = None

    def take_rows(self, max_rows: int | None) -> tuple[list[Any], int]:
        """Remove up to ``max_rows`` rows (all when None) from the buffer, splitting a batch element.

        Returns the elements (plain elements, the publisher's Arrow elements, and :class:`Chunk`
        s of plain elements the converter thread already converted) and the rows they hold.
        """
        avail = self._received_rows - self._taken_rows
        budget = avail if max_rows is None else min(max_rows, avail)
        if budget <= 0:
            return [], 0
        with self._head:
            while self._converting:  # it holds elements that come before the rest: let it land them
                self._head.wait()
            # Only the reader (under _head) removes elements; the publisher appends at the tail.
            out: list[Any] = []
            taken, elements = take_from(self._ready, budget, out)
            buf = self._buffer
            if not out and len(buf) == budget == avail and not isinstance(buf[0], ARROW):
                out = [buf.popleft() for _ in range(budget)]  # the common case: every row, plain elements
                taken = elements = budget
            else:
                more, more_elements = take_from(buf, budget - taken, out)
                taken += more
                elements += more_elements
            self._taken_rows += taken
            self._taken_elements += elements
        return out, taken

    # -- the converter thread ----------------------------------------------------------------
    def _convert_loop(self) -> None:
        """Move elements from ``_buffer`` to ``_ready``, converting plain runs to Chunks, while
        Spark runs the previous micro-batch (so the next ``latestOffset`` finds them converted)."""
        while not self._closed:
            self._convert_wake.wait()
            self._convert_wake.clear()
            while not self._closed and len(self._buffer) >= self.chunk:
                self._convert_next()

    def _convert_next(self) -> None:
        """Move the oldest ``chunk`` elements of ``_buffer`` to ``_ready``, plain runs converted."""
        with self._head:
            buf = self._buffer
            items = [buf.popleft() for _ in range(min(len(buf), self.chunk))]
            self._converting = True
        moved = items
        try:
            if self._precompute is not None:
                moved = converted(items, self._precompute)
        except BaseException as exc:  # never lose elements: hand them on unconverted (the reader converts them)
            # A fatal error ends the converter thread after the finally below: the reader then
            # converts everything that arrives itself.
            throw_if_fatal(exc)
            log.debug("format('reactive'): converting ahead failed: %s: %s", type(exc).__name__, exc)
        finally:
            with self._head:
                self._ready.extend(moved)
                self._converting = False
                self._head.notify_all()

    def call_on_subscription(self, fn: Callable[[Subscription], None]) -> None:
        """Run ``fn(subscription)`` on the demand thread, after the calls queued before it (serial
        with ``request`` and ``cancel``, rule 2.7). For ``on_commit``."""
        self._calls.put(fn)

    def cancel(self, wait: float = 0.0, detach: bool = False) -> bool:
        """Cancel (through the demand thread, after any request already queued); with ``detach``
        a resumable subscription is left to its endpoint instead (kept for a restarted reader).

        ``wait`` > 0 blocks up to that many seconds until the publisher has been told: the
        reader process may exit right after ``stop()``, taking the demand thread with it.
        Returns whether the cancel was delivered (or nothing was subscribed).
        """
        self._closed = True
        self._convert_wake.set()
        self._calls.put(_DETACH if detach else _CANCEL)
        caller = self._caller
        if caller is None:
            return True
        if wait > 0:
            caller.join(wait)
        return not caller.is_alive()

    def stats(self) -> IntakeStats:
        """Its counts of demand and elements now (read without a lock: each field is current, the
        set may straddle a signal)."""
        requested, received = self._requested, self._received
        return IntakeStats(requested, received, received - self._taken_elements, requested - received)


@dataclasses.dataclass(frozen=True, slots=True)
class IntakeStats:
    """What :meth:`Intake.stats` reports."""

    requested: int
    """Elements requested from the publisher in total (saturating)."""
    received: int
    """Elements received from the publisher in total."""
    buffered: int
    """Elements received and not yet taken by the reader."""
    outstanding: int
    """Demand requested but not yet received."""


__all__ = ["Intake", "IntakeStats", "Chunk", "Precompute"]
