"""AvailableNow: asking endpoints where their publisher's live edge is, instead of the reader's clock.

An ask that falls short within ``pollTimeout`` says nothing about the publisher over a slow link or
on a busy machine: the rows may be on their way. An rs_spark endpoint answers the question "how far
are your rows ready?" (:data:`rs_spark.net.zero_loss.resume.READY_MIME`), measured where the
publisher runs; both readers put it to their partitions' endpoints with :class:`LiveEdge` and give
the planner the answers (:class:`~.planner.Said`). A stream that does not answer (an endpoint served
by an earlier build, or one read with ``resumable=false``) is left to the reader's own rule, with a
WARN line once per stream.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from ...net.protocol.address import redact
from .planner import Said

log = logging.getLogger("rs_spark.source")


UNANSWERED = Said(0, False)
"""What a stream that answers, but did not this time, is taken to say: not at its edge."""


def answers(subscription: Any) -> bool:
    """Whether ``subscription`` can put the question to its endpoint, which has not said it does not
    answer (it says so when it opens the stream)."""
    asks = callable(getattr(subscription, "ask_ready", None))
    return asks and getattr(subscription, "answers_ready", None) is not False


class LiveEdge:
    """Asks endpoints how far their rows are ready; ``poll_timeout``: how long an endpoint watches its
    publisher (the reader's ``pollTimeout``, now measured where the publisher runs)."""

    def __init__(self, poll_timeout: float) -> None:
        self._wait = poll_timeout
        self._warned: set[str] = set()

    @property
    def timeout(self) -> float:
        """How long to wait for the answers (the endpoint's watch, plus a bound on the round trip)."""
        return self._wait + max(10.0, 20 * self._wait)

    def ask(self, streams: Mapping[str, tuple[Any, str]]) -> dict[str, Said]:
        """For each partition id: ``(its subscription, its endpoint's address)``. The answers, in the
        stream's positions. A stream that does not answer is left out (the reader's own rule
        decides). One that answers but is without a connection, or whose answer did not come within
        :attr:`timeout`, is taken as not at its edge (:data:`UNANSWERED`): the reader's clock decides
        nothing for it, the rows will come or its stream will end."""
        asked: dict[str, tuple[Any, int]] = {}
        said: dict[str, Said] = {}
        for pid, (sub, address) in streams.items():
            if not answers(sub):
                self._warn(pid, address)
            elif getattr(sub, "outage", None) is not None:  # no connection: no answer could come
                said[pid] = UNANSWERED
            else:
                asked[pid] = (sub, sub.ask_ready(self._wait))
        deadline = time.monotonic() + self.timeout
        for pid, (sub, question) in asked.items():
            a = sub.wait_ready(question, max(0.0, deadline - time.monotonic()))
            if a is not None:
                said[pid] = Said(a.position, a.edge)
            elif sub.answers_ready is False:  # it said, once it opened the stream, that it does not answer
                self._warn(pid, streams[pid][1])
            else:
                said[pid] = UNANSWERED
        return said

    def _warn(self, pid: str, address: str) -> None:
        if pid in self._warned:
            return
        self._warned.add(pid)
        which = f"partition {pid!r} ({redact(address)})" if pid else redact(address)
        log.warning(
            "format('reactive'): the endpoint %s does not say where its publisher's live edge is (it is served by an "
            "earlier rs_spark build, or read with resumable=false), so Trigger.AvailableNow ends this run at the first "
            "ask whose rows do not all come within pollTimeout, as the reader's clock sees it: over a slow link or on "
            "a busy machine that may be early (nothing is lost: the next run continues). Serve the endpoint with this "
            "rs_spark build, or raise option pollTimeout",
            which,
        )


def await_rows_bound(poll_timeout: float) -> float:
    """AvailableNow: how long one ``latestOffset`` waits for rows due before its target (the planner's
    AWAIT_ROWS) before it gives up and ends the run there."""
    return max(60.0, 40 * poll_timeout)


def rows_never_came(poll_timeout: float, at: int | str, target: Any) -> None:
    """The WARN line when AWAIT_ROWS gave up (the run ends; the next run continues)."""
    log.warning(
        "format('reactive'): Trigger.AvailableNow: rows due before the run's target (%s) did not come for %.0f s "
        "(the endpoint may be unreachable or its publisher stalled); this run ends at %s and the next run continues "
        "from there",
        "not fixed yet" if target is None else target,
        await_rows_bound(poll_timeout),
        at,
    )


__all__ = ["LiveEdge", "UNANSWERED", "answers", "await_rows_bound", "rows_never_came"]
