"""A Subscriber that checks the spec from the receiving side, for tests."""

from __future__ import annotations

import threading
from typing import Any

from rs_spark.streams.demand import add_cap


class ProtocolError(AssertionError):
    pass


class StrictSubscriber:
    """Records every signal and flags what a conformant Publisher must never do:
    overlapping signals (1.3), more on_next than requested (1.1), signals after a terminal
    (1.7), signals before on_subscribe (1.9), a second on_subscribe (2.12)."""

    def __init__(self, initial_request: int = 0, request_on_next: int = 0) -> None:
        self.initial_request = initial_request
        self.request_on_next = request_on_next
        self.items: list[Any] = []
        self.error: BaseException | None = None
        self.completed = False
        self.subscription: Any = None
        self.violations: list[str] = []
        self.requested = 0
        self._in_signal = threading.Lock()
        self._req_lock = threading.Lock()
        self._arrived = threading.Condition()  # notified at each on_next
        self.done = threading.Event()
        self.subscribed = threading.Event()

    # -- checks ---------------------------------------------------------------------
    def _enter(self, name: str) -> None:
        if not self._in_signal.acquire(blocking=False):
            self.violations.append(f"1.3: {name} overlapped another signal")
            self._in_signal.acquire()
        if self.subscription is None and name != "on_subscribe":
            self.violations.append(f"1.9: {name} before on_subscribe")
        if self.error is not None or self.completed:
            self.violations.append(f"1.7: {name} after a terminal signal")

    def _leave(self) -> None:
        self._in_signal.release()

    def request(self, n: int) -> None:
        with self._req_lock:
            self.requested = add_cap(self.requested, n)
        self.subscription.request(n)

    # -- Subscriber -------------------------------------------------------------------
    def on_subscribe(self, subscription: Any) -> None:
        self._enter("on_subscribe")
        try:
            if self.subscription is not None:
                self.violations.append("2.12: on_subscribe called twice")
            self.subscription = subscription
        finally:
            self._leave()
        self.subscribed.set()
        if self.initial_request:
            self.request(self.initial_request)

    def on_next(self, item: Any) -> None:
        self._enter("on_next")
        try:
            self.items.append(item)
            with self._req_lock:
                if len(self.items) > self.requested:
                    self.violations.append(f"1.1: on_next #{len(self.items)} with only {self.requested} requested")
        finally:
            self._leave()
        with self._arrived:
            self._arrived.notify_all()
        if self.request_on_next:
            self.request(self.request_on_next)

    def on_error(self, error: BaseException) -> None:
        self._enter("on_error")
        try:
            self.error = error
        finally:
            self._leave()
        self._end()

    def on_complete(self) -> None:
        self._enter("on_complete")
        try:
            self.completed = True
        finally:
            self._leave()
        self._end()

    def _end(self) -> None:
        self.done.set()
        with self._arrived:
            self._arrived.notify_all()

    def assert_clean(self) -> None:
        if self.violations:
            raise ProtocolError("; ".join(self.violations[:10]))

    def await_items(self, n: int, timeout: float = 5.0) -> StrictSubscriber:
        """Wait until at least ``n`` elements arrived (or the stream ended: then check ``items``)."""
        with self._arrived:
            arrived = self._arrived.wait_for(lambda: len(self.items) >= n or self.done.is_set(), timeout)
        if not arrived:
            raise AssertionError(f"{n} elements did not arrive within {timeout}s; got {len(self.items)}")
        return self

    def await_done(self, timeout: float = 5.0) -> StrictSubscriber:
        if not self.done.wait(timeout):
            raise AssertionError(f"no terminal signal within {timeout}s; got {len(self.items)} items")
        return self
