"""Outages of a resumable stream: how long a reader keeps trying, how long it waits between tries,
and what it tells the user meanwhile.

An outage starts when a stream's connection drops (reset, refused, or silent past the keepalive
lifetime) or cannot be opened, and ends when a connection resumes it, when the endpoint refuses
(its answer is final: it no longer keeps the stream, or the token is wrong), or when the window the
endpoint keeps the stream for has surely ended (:func:`retry_bound`). Tries are spaced by a capped
exponential backoff with jitter (:class:`Backoff`), as rsocket-java's resume strategy and Kafka's
``reconnect.backoff.ms`` / ``reconnect.backoff.max.ms`` space theirs.

The user sees the outage in a WARN line when it starts, one per :data:`WARN_EVERY` seconds while it
lasts (not one per try, nor per Spark trigger) and one when it ends; and in :meth:`Outage.report`,
which the ``reactive`` source puts in its progress. Addresses and errors are redacted there.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable

from ..protocol.address import redact
from ..protocol.client import Pacing

log = logging.getLogger("rs_spark.net")

DEFAULT_WINDOW = 600.0
"""Seconds an endpoint keeps a detached stream when neither it nor the reader said otherwise
(``Retention.window``'s default)."""
WARN_EVERY = 30.0
"""Seconds between the WARN lines of one outage."""


@dataclasses.dataclass(frozen=True)
class Backoff:
    """Pauses between tries: ``first`` seconds, doubling each try up to ``cap``, with jitter."""

    first: float = 0.1
    cap: float = 10.0

    def __post_init__(self) -> None:
        if not 0 < self.first <= self.cap:
            raise ValueError(f"need 0 < first <= cap (seconds), got first={self.first!r}, cap={self.cap!r}")

    def delay(self, attempt: int, u: float) -> float:
        """The pause after failed try number ``attempt`` (0 first), ``u`` uniform in [0, 1): half the
        capped step, plus ``u`` times the other half ("equal jitter": readers that lost the same
        endpoint at once do not come back in step, and none waits less than half the step)."""
        step = min(self.cap, self.first * 2.0 ** min(attempt, 64))
        return step / 2 + u * step / 2


def retry_bound(stated: float | None, asked: float | None, lifetime: float) -> float:
    """Seconds after a drop until the endpoint surely expired the stream: the window it stated (else
    the one the reader asked for, else :data:`DEFAULT_WINDOW`), plus the keepalive lifetime (the
    endpoint may notice the drop up to a lifetime after the reader, and its window starts then)."""
    window = stated if stated is not None else asked if asked is not None else DEFAULT_WINDOW
    return window + lifetime


@dataclasses.dataclass(frozen=True)
class OutageReport:
    """One outage as the user sees it (redacted)."""

    endpoint: str
    seconds: float
    attempts: int
    last_error: str
    gives_up_in: float

    def as_progress(self) -> dict[str, object]:
        """The outage in a source's progress JSON (camelCase keys)."""
        return {
            "endpoint": self.endpoint,
            "seconds": round(self.seconds, 1),
            "attempts": self.attempts,
            "lastError": self.last_error,
            "givesUpInSeconds": round(max(0.0, self.gives_up_in), 1),
        }


class Outage:
    """One outage of one stream (see the module): counts the tries, says how long to pause, logs."""

    def __init__(
        self,
        where: str,
        what: str,
        error: BaseException,
        bound: float,
        clock: Callable[[], float] = time.monotonic,
        warn_every: float = WARN_EVERY,
        bounded_by: str = "the endpoint's window",
    ) -> None:
        self._where = redact(where)  # e.g. "remote publisher tcp://host:port/name"
        self._what = what  # what is tried again, e.g. "resuming stream KEY at position P"
        self._clock = clock
        self._warn_every = warn_every
        self._lock = threading.Lock()
        self.started = clock()
        self.bound = bound
        self.attempts = 0
        self._last = _said(error)
        self._warned_at = self.started
        log.warning(
            "rs_spark.net: %s: connection lost (%s); %s, trying for up to %.0f s (%s)",
            self._where,
            self._last,
            what,
            bound,
            bounded_by,
        )

    @property
    def over(self) -> bool:
        """Whether the endpoint surely no longer keeps the stream (the bound passed)."""
        return self._clock() - self.started >= self.bound

    def left(self) -> float:
        """Seconds until :attr:`over`."""
        return self.bound - (self._clock() - self.started)

    def failed(self, error: BaseException) -> None:
        """A try failed with ``error`` (not a refusal): counted, and said at most once per interval."""
        now = self._clock()
        with self._lock:
            self.attempts += 1
            self._last = _said(error)
            due = now - self._warned_at >= self._warn_every
            if due:
                self._warned_at = now
        if due:
            log.warning(
                "rs_spark.net: %s: still unreachable after %.0f s (%d tries; last: %s); %s, giving up in %.0f s",
                self._where,
                now - self.started,
                self.attempts,
                self._last,
                self._what,
                max(0.0, self.bound - (now - self.started)),
            )

    def pause(self, backoff: Pacing, u: float) -> float:
        """Seconds to wait before the next try: the backoff's, never past the bound."""
        return max(0.0, min(backoff.delay(max(0, self.attempts - 1), u), self.left()))

    def ended(self, how: str) -> None:
        """The outage is over: ``how`` says whether it resumed or why it gave up."""
        log.warning(
            "rs_spark.net: %s: %s after %.1f s of outage (%d tries)",
            self._where,
            how,
            self._clock() - self.started,
            self.attempts,
        )

    def report(self) -> OutageReport:
        """The outage now, for a source's progress."""
        elapsed = self._clock() - self.started
        with self._lock:
            return OutageReport(self._where, elapsed, self.attempts, self._last, self.bound - elapsed)


def _said(error: BaseException) -> str:
    return redact(f"{type(error).__name__}: {error}")[:500]


__all__ = ["Backoff", "DEFAULT_WINDOW", "Outage", "OutageReport", "WARN_EVERY", "retry_bound"]
