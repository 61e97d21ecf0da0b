"""The TCK's test environment: timeouts, asynchronous error collection, a manual subscriber.

Modelled on the JVM TCK's ``TestEnvironment``: signals arrive on any thread, so a subscriber
records protocol errors in the environment (``flop``) and the test checks them at the end
(``verify_no_async_errors``). Everything waits on conditions; nothing busy-waits.
"""
from __future__ import annotations

import collections
import dataclasses
import os
import threading
import time
from typing import Any, Deque, List, Optional, Type


def _env_ms(name: str, default: int) -> int:
    v = os.environ.get(name)
    return int(v) if v else default


@dataclasses.dataclass
class Timeouts:
    """Seconds. Defaults come from RS_TCK_* environment variables (milliseconds) or the JVM's."""

    default: float = dataclasses.field(default_factory=lambda: _env_ms("RS_TCK_DEFAULT_TIMEOUT_MS", 100) / 1000)
    no_signals: float = dataclasses.field(
        default_factory=lambda: _env_ms("RS_TCK_NO_SIGNALS_TIMEOUT_MS", _env_ms("RS_TCK_DEFAULT_TIMEOUT_MS", 100)) / 1000)
    poll: float = dataclasses.field(default_factory=lambda: _env_ms("RS_TCK_POLL_TIMEOUT_MS", 10) / 1000)
    gc: float = dataclasses.field(default_factory=lambda: _env_ms("RS_TCK_GC_TIMEOUT_MS", 300) / 1000)


class TCKFailure(AssertionError):
    """A rule was broken; the message names it."""


class TestEnvironment:
    """One per test: holds the timeouts and the errors signalled asynchronously."""

    __test__ = False  # not a pytest class

    def __init__(self, timeouts: Timeouts) -> None:
        self.t = timeouts
        self._lock = threading.Lock()
        self.async_errors: List[BaseException] = []

    def flop(self, message: str, cause: Optional[BaseException] = None) -> None:
        """Record a failure seen on some thread; the test fails when it verifies."""
        err = TCKFailure(message if cause is None else f"{message}: {type(cause).__name__}: {cause}")
        err.__cause__ = cause
        with self._lock:
            self.async_errors.append(err)

    def record_error(self, error: BaseException) -> None:
        """An ``on_error`` a test may expect (see :meth:`expect_error`)."""
        with self._lock:
            self.async_errors.append(error)

    def verify_no_async_errors(self, delay: bool = True) -> None:
        self._raise_first()
        if delay:
            time.sleep(self.t.no_signals)
            self._raise_first()

    def _raise_first(self) -> None:
        with self._lock:
            errors = list(self.async_errors)
        if errors:
            first = errors[0]
            if isinstance(first, AssertionError):
                raise first
            raise TCKFailure(f"async error during the test: {type(first).__name__}: {first}") from first

    def expect_error(self, kind: Type[BaseException], what: str) -> BaseException:
        """Wait up to the default timeout for an error of ``kind`` to be recorded; take it."""
        deadline = time.monotonic() + self.t.default
        while True:
            with self._lock:
                if self.async_errors:
                    err = self.async_errors.pop(0)
                    if not isinstance(err, kind):
                        raise TCKFailure(f"{what}: expected {kind.__name__}, got {type(err).__name__}: {err}")
                    return err
            left = deadline - time.monotonic()
            if left <= 0:
                raise TCKFailure(f"{what}: no {kind.__name__} signalled within {self.t.default:.3f} s")
            time.sleep(min(self.t.poll, left))


_END = object()


class ManualSubscriber:
    """Requests only when the test says so and buffers what arrives, checking the protocol."""

    def __init__(self, env: TestEnvironment) -> None:
        self.env = env
        self.subscription: Any = None
        self._cond = threading.Condition()
        self._items: Deque[Any] = collections.deque()
        self._completed = False
        self._subscribed = threading.Event()

    # Subscriber
    def on_subscribe(self, subscription: Any) -> None:
        if subscription is None:
            self.env.flop("on_subscribe(None) (rule 2.13)")
        if self.subscription is not None:
            self.env.flop("on_subscribe called twice (rule 2.12 / 1.9)")
            subscription.cancel()
            return
        self.subscription = subscription
        self._subscribed.set()

    def on_next(self, item: Any) -> None:
        if self.subscription is None:
            self.env.flop(f"on_next({item!r}) before on_subscribe (rule 1.9)")
        with self._cond:
            if self._completed:
                self.env.flop(f"on_next({item!r}) after on_complete (rule 1.7)")
            self._items.append(item)
            self._cond.notify_all()

    def on_error(self, error: BaseException) -> None:
        self.env.record_error(error)
        with self._cond:
            self._cond.notify_all()

    def on_complete(self) -> None:
        with self._cond:
            if self._completed:
                self.env.flop("on_complete signalled twice (rule 1.7)")
            self._completed = True
            self._items.append(_END)
            self._cond.notify_all()

    # test-side helpers
    def await_subscription(self) -> None:
        if not self._subscribed.wait(self.env.t.default):
            self.env.flop(f"no on_subscribe within {self.env.t.default:.3f} s (rule 1.9)")

    def request(self, n: int) -> None:
        self.subscription.request(n)

    def cancel(self) -> None:
        if self.subscription is not None:
            self.subscription.cancel()

    def _take(self, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._items:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            return self._items.popleft()

    def next_element(self, what: str = "element") -> Any:
        x = self._take(self.env.t.default)
        if x is None:
            raise TCKFailure(f"did not receive {what} within {self.env.t.default:.3f} s")
        if x is _END:
            raise TCKFailure(f"expected {what} but the stream completed")
        return x

    def next_elements(self, n: int, what: str = "elements") -> List[Any]:
        deadline = time.monotonic() + self.env.t.default
        out = []
        for i in range(n):
            x = self._take(max(0.0, deadline - time.monotonic()))
            if x is None:
                raise TCKFailure(f"received {i} of {n} {what} within {self.env.t.default:.3f} s")
            if x is _END:
                raise TCKFailure(f"the stream completed after {i} of {n} {what}")
            out.append(x)
        return out

    def next_or_end(self) -> Any:
        """An element, ``_END`` for completion, or None (recorded as a failure) on timeout."""
        x = self._take(self.env.t.default)
        if x is None:
            self.env.flop(f"neither an element nor on_complete within {self.env.t.default:.3f} s")
        return x

    def expect_completion(self, what: str = "on_complete") -> None:
        x = self._take(self.env.t.default)
        if x is not _END:
            self.env.flop(f"expected {what}, got {'nothing' if x is None else repr(x)}")

    def expect_none(self, what: str) -> None:
        time.sleep(self.env.t.no_signals)
        with self._cond:
            if self._items:
                x = self._items.popleft()
                self.env.flop(f"{what}: unexpected {'on_complete' if x is _END else f'on_next({x!r})'}")


END = _END


class Verification:
    """Base of the four verifications: pytest collects user subclasses only, never the bases."""

    __test__ = False
    timeouts: Optional[Timeouts] = None  # class-level override; else RS_TCK_* environment or defaults

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if "__test__" not in cls.__dict__:
            cls.__test__ = True

    def _env(self) -> TestEnvironment:
        return TestEnvironment(self.timeouts or Timeouts())

__all__ = ["Timeouts", "TestEnvironment", "ManualSubscriber", "TCKFailure", "END", "Verification"]
