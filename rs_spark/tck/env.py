"""The TCK's test environment: timeouts, asynchronous error collection, a manual subscriber.

Modelled on the JVM TCK's ``TestEnvironment``: signals arrive on any thread, so a subscriber
records protocol errors in the environment (``flop``) and the test checks them at the end
(``verify_no_async_errors``). Everything waits on ``threading.Condition``; nothing busy-waits.

Timeouts (milliseconds) come, in this order, from an explicit :class:`Timeouts`, from the
verification's class attributes (``default_timeout_ms`` ...), from the environment variables
``RS_TCK_DEFAULT_TIMEOUT_MS``, ``RS_TCK_NO_SIGNALS_TIMEOUT_MS``, ``RS_TCK_POLL_TIMEOUT_MS`` and
``RS_TCK_GC_TIMEOUT_MS``, and finally from the JVM defaults (100 / = default / = default / 300).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from .skip import TckSkipped, skip_reason

T = TypeVar("T")

ENV_DEFAULT = "RS_TCK_DEFAULT_TIMEOUT_MS"
ENV_NO_SIGNALS = "RS_TCK_NO_SIGNALS_TIMEOUT_MS"
ENV_POLL = "RS_TCK_POLL_TIMEOUT_MS"
ENV_GC = "RS_TCK_GC_TIMEOUT_MS"


def _env_ms(name: str) -> int | None:
    v = os.environ.get(name, "").strip()
    if not v:
        return None
    try:
        ms = int(v)
    except ValueError:
        raise ValueError(f"{name}={v!r} is not a whole number of milliseconds") from None
    if ms < 0:
        raise ValueError(f"{name}={v!r} must not be negative")
    return ms


def _default_ms() -> int:
    return _env_ms(ENV_DEFAULT) or 100


@dataclasses.dataclass
class Timeouts:
    """Seconds. Defaults come from the RS_TCK_* environment variables (milliseconds) or the JVM's."""

    default: float = dataclasses.field(default_factory=lambda: _default_ms() / 1000)
    no_signals: float = dataclasses.field(default_factory=lambda: (_env_ms(ENV_NO_SIGNALS) or _default_ms()) / 1000)
    poll: float = dataclasses.field(default_factory=lambda: (_env_ms(ENV_POLL) or _default_ms()) / 1000)
    gc: float = dataclasses.field(default_factory=lambda: (_env_ms(ENV_GC) or 300) / 1000)

    @classmethod
    def resolve(
        cls,
        default_ms: int | None = None,
        no_signals_ms: int | None = None,
        poll_ms: int | None = None,
        gc_ms: int | None = None,
    ) -> Timeouts:
        """Explicit milliseconds win over the environment, which wins over the JVM defaults."""
        d = default_ms if default_ms is not None else _default_ms()
        n = no_signals_ms if no_signals_ms is not None else (_env_ms(ENV_NO_SIGNALS) or d)
        p = poll_ms if poll_ms is not None else (_env_ms(ENV_POLL) or d)
        g = gc_ms if gc_ms is not None else (_env_ms(ENV_GC) or 300)
        return cls(default=d / 1000, no_signals=n / 1000, poll=p / 1000, gc=g / 1000)


class TCKFailure(AssertionError):
    """A rule was broken; the message names it."""


class TestEnvironment:
    """One per test: holds the timeouts and the errors signalled asynchronously (from any thread)."""

    __test__ = False  # not a pytest class

    def __init__(self, timeouts: Timeouts | None = None) -> None:
        self.t = timeouts or Timeouts()
        self._cond = threading.Condition()
        self.async_errors: list[BaseException] = []

    def flop(self, message: str, cause: BaseException | None = None) -> None:
        """Record a failure seen on some thread; the test fails when it verifies."""
        err = TCKFailure(message if cause is None else f"{message}: {type(cause).__name__}: {cause}")
        err.__cause__ = cause
        self.record_error(err)

    def flop_and_fail(self, message: str) -> None:
        """Record and raise at once."""
        self.flop(message)
        raise self.async_errors[-1]

    def record_error(self, error: BaseException) -> None:
        """An ``on_error`` a test may expect (see :meth:`expect_error`)."""
        with self._cond:
            self.async_errors.append(error)
            self._cond.notify_all()

    def drop_async_error(self) -> BaseException | None:
        """Remove and return the first recorded error, or None."""
        with self._cond:
            return self.async_errors.pop(0) if self.async_errors else None

    def clear_async_errors(self) -> None:
        with self._cond:
            self.async_errors.clear()

    def verify_no_async_errors(self, delay: bool = True) -> None:
        """Raise the first recorded error; with ``delay``, check again after the no-signals timeout."""
        self._raise_first()
        if delay:
            time.sleep(self.t.no_signals)
            self._raise_first()

    def _raise_first(self) -> None:
        with self._cond:
            first = self.async_errors[0] if self.async_errors else None
        if first is not None:
            if isinstance(first, AssertionError):
                raise first
            raise TCKFailure(f"async error during the test: {type(first).__name__}: {first}") from first

    def expect_error(self, kind: type[BaseException], what: str, timeout: float | None = None) -> BaseException:
        """Wait up to the default timeout for an error to be recorded; it must be a ``kind``."""
        limit = self.t.default if timeout is None else timeout
        with self._cond:
            if not self._cond.wait_for(lambda: bool(self.async_errors), limit):
                raise TCKFailure(f"{what}: no {kind.__name__} signalled within {limit:.3f} s")
            err = self.async_errors.pop(0)
        if not isinstance(err, kind):
            raise TCKFailure(f"{what}: expected {kind.__name__}, got {type(err).__name__}: {err}") from err
        return err


class Latch:
    """A resettable one-shot gate (the JVM's ``Latch``); failures are flopped into the env."""

    def __init__(self, env: TestEnvironment) -> None:
        self.env = env
        self._event = threading.Event()

    def close(self) -> None:
        self._event.set()

    def is_closed(self) -> bool:
        return self._event.is_set()

    def reopen(self) -> None:
        self._event = threading.Event()

    def assert_open(self, message: str) -> None:
        if self.is_closed():
            self.env.flop(message)

    def assert_closed(self, message: str) -> None:
        if not self.is_closed():
            self.env.flop(message)

    def expect_close(self, message: str, timeout: float | None = None) -> bool:
        limit = self.env.t.default if timeout is None else timeout
        if not self._event.wait(limit):
            self.env.flop(f"{message} within {limit:.3f} s")
            return False
        return True


class Promise(Generic[T]):
    """A value set once (the JVM's ``Promise``); a second completion is flopped."""

    def __init__(self, env: TestEnvironment) -> None:
        self.env = env
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._value: T | None = None

    def complete(self, value: T) -> None:
        with self._lock:
            if self._event.is_set():
                self.env.flop("cannot complete a promise more than once")
                return
            self._value = value
            self._event.set()

    def is_completed(self) -> bool:
        return self._event.is_set()

    def value(self) -> T | None:
        if not self._event.is_set():
            self.env.flop("cannot access the promise value before completion")
        return self._value

    def expect_completion(self, message: str, timeout: float | None = None) -> T | None:
        limit = self.env.t.default if timeout is None else timeout
        if not self._event.wait(limit):
            self.env.flop(f"{message} within {limit:.3f} s")
        return self._value


END: Any = type("EndOfStream", (), {"__repr__": lambda self: "END"})()
"""Marks end-of-stream in a :class:`Receptacle`."""

TEST_BUFFER_SIZE = 16


class BufferOverflow(RuntimeError):
    """The TCK subscriber received more than its buffer holds without taking any (thrown to the publisher)."""


class Receptacle:
    """Many values, then end-of-stream: a bounded, condition-guarded buffer with deadlines."""

    def __init__(self, env: TestEnvironment, capacity: int = 2 * TEST_BUFFER_SIZE) -> None:
        self.env = env
        self.capacity = capacity
        self._cond = threading.Condition()
        self._items: collections.deque[Any] = collections.deque()
        self.completed = False

    def add(self, value: Any) -> None:
        with self._cond:
            if self.completed:
                self.env.flop(f"unexpected element {value!r} received after the stream completed (rule 1.7)")
            if len(self._items) >= self.capacity:
                raise BufferOverflow(
                    f"received more than bufferSize ({self.capacity}) on_next signals; "
                    "the publisher ignored demand (rule 1.1)"
                )
            self._items.append(value)
            self._cond.notify_all()

    def complete(self) -> None:
        with self._cond:
            if self.completed:
                self.env.flop("unexpected additional on_complete signal received (rule 1.7)")
                return
            self.completed = True
            self._items.append(END)
            self._cond.notify_all()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def take(self, timeout: float) -> Any:
        """The next item, :data:`END`, or None when nothing arrived within ``timeout``."""
        with self._cond:
            if not self._cond.wait_for(lambda: bool(self._items), max(0.0, timeout)):
                return None
            return self._items.popleft()

    def poll(self) -> Any:
        with self._cond:
            return self._items.popleft() if self._items else None

    def drain(self) -> list[Any]:
        """Everything buffered now (END included)."""
        with self._cond:
            out = list(self._items)
            self._items.clear()
            return out

    def next(self, what: str = "element", timeout: float | None = None) -> Any:
        limit = self.env.t.default if timeout is None else timeout
        x = self.take(limit)
        if x is None:
            raise TCKFailure(f"did not receive {what} within {limit:.3f} s")
        if x is END:
            raise TCKFailure(f"expected {what} but got end-of-stream")
        return x

    def next_n(self, n: int, what: str = "elements", timeout: float | None = None) -> list[Any]:
        limit = self.env.t.default if timeout is None else timeout
        deadline = time.monotonic() + limit
        out: list[Any] = []
        for i in range(n):
            x = self.take(deadline - time.monotonic())
            if x is None:
                raise TCKFailure(f"received {i} of {n} {what} within {limit:.3f} s")
            if x is END:
                raise TCKFailure(f"the stream completed after {i} of {n} {what}")
            out.append(x)
        return out

    def next_or_end(self, timeout: float | None = None) -> Any:
        """An element, END, or None (flopped) on timeout."""
        limit = self.env.t.default if timeout is None else timeout
        x = self.take(limit)
        if x is None:
            self.env.flop(f"neither an element nor on_complete within {limit:.3f} s")
        return x

    def expect_completion(self, what: str = "on_complete", timeout: float | None = None) -> None:
        limit = self.env.t.default if timeout is None else timeout
        x = self.take(limit)
        if x is not END:
            self.env.flop(f"expected {what}, got {'nothing' if x is None else f'element {x!r}'} within {limit:.3f} s")

    def expect_none(self, what: str, timeout: float | None = None) -> None:
        """Wait the no-signals timeout; an element or end-of-stream arriving meanwhile is flopped."""
        limit = self.env.t.no_signals if timeout is None else timeout
        with self._cond:
            self._cond.wait_for(lambda: bool(self._items), limit)
            x = self._items.popleft() if self._items else None
        if x is not None:
            self.env.flop(f"{what}: unexpected {'on_complete' if x is END else f'on_next({x!r})'}")


class ManualSubscriber:
    """Requests only when the test says so and buffers what arrives, checking the protocol.

    ``on_error`` records the error in the environment, where :meth:`expect_error` finds it.
    """

    def __init__(self, env: TestEnvironment) -> None:
        self.env = env
        self.subscription: Any = None
        self.received = Receptacle(env)
        self._subscribed = Latch(env)

    # Subscriber
    def on_subscribe(self, subscription: Any) -> None:
        if subscription is None:
            self.env.flop("on_subscribe(None) (rule 2.13)")
            return
        if self.subscription is not None:
            self.env.flop("on_subscribe called twice (rule 2.12 / 1.9)")
            subscription.cancel()
            return
        self.subscription = subscription
        self._subscribed.close()

    def on_next(self, item: Any) -> None:
        if self.subscription is None:
            self.env.flop(f"on_next({item!r}) before on_subscribe (rule 1.9)")
        self.received.add(item)

    def on_error(self, error: BaseException) -> None:
        if self.subscription is None:
            self.env.flop("on_error before on_subscribe (rule 1.9)", error)
        self.env.record_error(error)
        self.received.wake()

    def on_complete(self) -> None:
        if self.subscription is None:
            self.env.flop("on_complete before on_subscribe (rule 1.9)")
        self.received.complete()

    # test-side helpers
    def await_subscription(self) -> None:
        self._subscribed.expect_close("no on_subscribe (rule 1.9)")

    def request(self, n: int) -> None:
        if self.subscription is None:
            raise TCKFailure("cannot request: on_subscribe was never called (rule 1.9)")
        self.subscription.request(n)

    def cancel(self) -> None:
        if self.subscription is not None:
            self.subscription.cancel()

    def expect_next(self, what: str = "element") -> Any:
        return self.received.next(what)

    def expect_next_n(self, n: int, what: str = "elements") -> list[Any]:
        return self.received.next_n(n, what)

    def request_next(self) -> Any:
        self.request(1)
        return self.expect_next()

    def next_or_end(self) -> Any:
        return self.received.next_or_end()

    def expect_completion(self, what: str = "on_complete") -> None:
        self.received.expect_completion(what)

    def expect_error(self, kind: type[BaseException] = BaseException, what: str = "on_error") -> BaseException:
        return self.env.expect_error(kind, what)

    def expect_none(self, what: str = "no signal expected") -> None:
        self.received.expect_none(what)

    # older names
    next_element = expect_next
    next_elements = expect_next_n


class Verification:
    """Base of the four verifications: pytest collects user subclasses only, never the bases.

    Override timeouts with ``timeouts = Timeouts(...)`` (seconds) or the ``*_timeout_ms``
    class attributes; unset ones fall back to the RS_TCK_* environment variables.

    Pin the tests that may skip with :attr:`skips`; see there.
    """

    __test__ = False
    timeouts: Timeouts | None = None
    default_timeout_ms: int | None = None
    no_signals_timeout_ms: int | None = None
    poll_timeout_ms: int | None = None
    gc_timeout_ms: int | None = None

    skips: ClassVar[Mapping[str, str] | None] = None
    """The tests this verification may skip, each with why: ``{test name or rule number: why}``.

    A key is a test's name (``"test_optional_spec111_may_support_multi_subscribe"``) or a rule
    (``"1.11"``: every test of that rule). With ``skips`` set, a test that skips without being
    listed fails, saying so: a regression cannot hide as one more skip. ``{}`` means no test may
    skip. Left ``None``, skips are not pinned (the kit's own limits, e.g. ``create_failed_publisher()``
    returning None, still skip).

    Listing an *optional* test (or its rule) is also how an implementation declares that it does
    not implement that optional rule: only then does an error in that test count as "does NOT
    implement this OPTIONAL requirement" (a skip); in any test not listed it is a failure.
    """

    _rules: ClassVar[dict[str, tuple[str, str, str]]] = {}  # the verification's table: name -> (jvm, rule, status)
    _running: str = ""  # the kit test now running on this instance

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if "__test__" not in cls.__dict__:
            cls.__test__ = True
        for name, fn in list(cls.__dict__.items()):
            if name in cls._rules and callable(fn) and not getattr(fn, "_tck_pinned", False):
                setattr(cls, name, pinned(fn))

    def _timeouts(self) -> Timeouts:
        if self.timeouts is not None:
            return self.timeouts
        return Timeouts.resolve(
            self.default_timeout_ms, self.no_signals_timeout_ms, self.poll_timeout_ms, self.gc_timeout_ms
        )

    def _env(self) -> TestEnvironment:
        return TestEnvironment(self._timeouts())

    def _rule_of(self, name: str) -> str:
        return self._rules[name][1] if name in self._rules else "-"

    def _allowed_skip(self, name: str) -> str | None:
        """Why test ``name`` may skip, as :attr:`skips` says (by its name or its rule), else None."""
        pinned = self.skips
        if not pinned:
            return None
        if name in pinned:
            return pinned[name]
        return pinned.get(self._rule_of(name))

    def _skips_owner(self) -> str:
        """The class whose :attr:`skips` decide (a processor's inner verifications name the processor's)."""
        return type(self).__name__

    def _check_skips(self) -> None:
        """Every key of :attr:`skips` names a test or a rule of this verification."""
        if not self.skips:
            return
        rules = {rule for _, rule, status in self._rules.values() if status != "untested"}
        tests = {name for name, (_, _, status) in self._rules.items() if status != "untested"}
        wrong = sorted(k for k in self.skips if k not in tests and k not in rules)
        if wrong:
            raise TCKFailure(
                f"{type(self).__name__}.skips names {wrong}, neither a test nor a rule that this verification "
                f"runs: key each entry by a test name (test_...) or a rule number (e.g. '1.11')"
            )


def pinned(test: Callable[[Any], None]) -> Callable[[Any], None]:
    """Wrap a kit test so that a skip its verification's :attr:`Verification.skips` does not allow fails."""
    name = test.__name__

    @functools.wraps(test)
    def run(self: Verification) -> None:
        self._check_skips()
        self._running = name
        try:
            test(self)
        except BaseException as exc:
            reason = skip_reason(exc)
            if reason is None or self.skips is None:
                raise
            why = self._allowed_skip(name)
            if why is None:
                raise TCKFailure(
                    f"{type(self).__name__}.{name} skipped, and {type(self).__name__}.skips does not list it "
                    f"(nor rule {self._rule_of(name)}): {reason}. If this skip is expected, add "
                    f"{name!r}: 'why' to skips; if not, the implementation or the test setup regressed"
                ) from None
            raise TckSkipped(f"{reason} [pinned: {why}]") from None

    run._tck_pinned = True  # type: ignore[attr-defined]
    return run


def wait_until(cond: threading.Condition, pred: Callable[[], bool], timeout: float) -> bool:
    """``cond.wait_for`` under the lock."""
    with cond:
        return cond.wait_for(pred, timeout)


__all__ = [
    "Timeouts",
    "TestEnvironment",
    "ManualSubscriber",
    "TCKFailure",
    "END",
    "Verification",
    "pinned",
    "Latch",
    "Promise",
    "Receptacle",
    "BufferOverflow",
    "TEST_BUFFER_SIZE",
]
