"""The recording Subscriber the tests share: it requests, records every signal and checks the
receiving side's rules, so a test asserts on what arrived instead of writing its own Subscriber."""

from __future__ import annotations

import threading
from typing import Any

from .waits import wait_until

UNBOUNDED = 2**62  # "everything": large, yet far from overflowing demand arithmetic in the peer


class Recorder:
    """Requests ``batch`` elements at on_subscribe and, with ``refill``, ``batch`` more each time
    all requested have arrived; records the elements, the most demand ever outstanding, the
    micro-batch id seen per element (a sink subscription's ``batch_id``), the terminal signal and
    any signal after it.

    Misbehaviour on purpose, for tests of the publisher's side: ``cancel_after`` n elements,
    ``raise_at`` element n, ``request(0)`` (rule 3.9) after ``bad_request_after`` elements; and
    ``delay`` seconds in each on_next (a slow consumer: paces the stream, it synchronises nothing).
    """

    def __init__(
        self,
        batch: int = UNBOUNDED,
        *,
        refill: bool = True,
        cancel_after: int | None = None,
        raise_at: int | None = None,
        delay: float = 0.0,
        bad_request_after: int | None = None,
    ) -> None:
        self.batch, self.refill = batch, refill
        self.cancel_after, self.raise_at, self.delay = cancel_after, raise_at, delay
        self.bad_request_after = bad_request_after
        self.items: list[Any] = []
        self.batch_ids: list[Any] = []
        self.error: BaseException | None = None
        self.completed = False
        self.done = threading.Event()
        self.max_outstanding = 0
        self.outstanding = 0
        self.s: Any = None
        self.signals_after_end = 0
        self.unrequested = 0  # on_next beyond demand (rule 1.1): also raised in on_next
        self.subscribed = threading.Event()
        self._demand = threading.Lock()

    # -- for the test ------------------------------------------------------------------------------
    def request(self, n: int) -> None:
        """Signal demand for ``n`` more elements (counted in ``outstanding``)."""
        with self._demand:  # the test's thread and on_next's may both request
            self.outstanding += n
            self.max_outstanding = max(self.max_outstanding, self.outstanding)
        self.s.request(n)

    def wait_for(self, count: int, timeout: float = 60.0) -> None:
        """Wait until ``count`` elements arrived (fails naming what did arrive, or the error)."""
        wait_until(lambda: len(self.items) >= count or self.done.is_set(), f"{count} elements", timeout)
        assert len(self.items) >= count, f"the stream ended after {len(self.items)} elements: {self.error!r}"

    def wait_done(self, timeout: float = 60.0) -> Recorder:
        """Wait for the terminal signal; fails naming how many elements arrived."""
        assert self.done.wait(timeout), f"no terminal signal within {timeout} s; {len(self.items)} elements arrived"
        return self

    def _count_if_ended(self) -> None:
        if self.completed or self.error is not None:  # rule 1.7 (after a cancel a terminal signal may still come)
            self.signals_after_end += 1

    # -- Subscriber --------------------------------------------------------------------------------
    def on_subscribe(self, s: Any) -> None:
        self.s = s
        self.subscribed.set()
        if self.batch:
            self.request(self.batch)

    def on_next(self, x: Any) -> None:
        if self.done.is_set():
            self.signals_after_end += 1
        with self._demand:
            self.outstanding -= 1
            over = self.outstanding < 0
        if over:
            self.unrequested += 1
            raise AssertionError(f"on_next({x!r}) was not requested (rule 1.1)")
        if self.raise_at is not None and len(self.items) == self.raise_at:
            raise RuntimeError(f"subscriber refuses element {self.raise_at}")
        self.items.append(x)
        self.batch_ids.append(getattr(self.s, "batch_id", None))
        if self.delay:
            threading.Event().wait(self.delay)  # a slow consumer (see the class docstring)
        if self.cancel_after is not None and len(self.items) == self.cancel_after:
            self.s.cancel()
            self.done.set()
        elif self.bad_request_after is not None and len(self.items) == self.bad_request_after:
            self.s.request(0)  # illegal (rule 3.9)
        elif self.refill and self.outstanding == 0:
            self.request(self.batch)

    def on_error(self, e: BaseException) -> None:
        self._count_if_ended()
        self.error = e
        self.done.set()

    def on_complete(self) -> None:
        self._count_if_ended()
        self.completed = True
        self.done.set()
