"""Fetching a kept range across network outages: what a Spark executor does for a partition's range.

:func:`fetch_riding_outages` yields the rows ``[lo, hi)`` a resumable stream's endpoint keeps, as
:meth:`~.resume_client.ResumablePublisher.fetch` does, but a connection that cannot be opened, is
reset or goes silent past the keepalive lifetime does not end it: the fetch starts again at the
first row not yet yielded, spaced by the backoff, until ``bound`` seconds of outage passed. A
refusal (the endpoint no longer keeps the range, or the token is wrong) ends it at once: the
caller decides what that means (``failOnDataLoss``).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from typing import Any

from ..protocol.errors import NetError, Refused
from .outage import Backoff, Outage
from .resume_client import ResumablePublisher


def rows_of(item: Any) -> int:
    """The stream positions an element takes: a record batch's rows, else one."""
    n = getattr(item, "num_rows", None)
    return int(n) if isinstance(n, int) else 1


def fetch_riding_outages(
    publisher: ResumablePublisher, lo: int, hi: int, *, bound: float, backoff: Backoff | None = None
) -> Iterator[Any]:
    """The kept rows ``[lo, hi)``, in order, each once, fetched again from where a lost connection
    left off (see the module). Raises the refusal, or the last connection error once an outage
    lasted ``bound`` seconds."""
    backoff = backoff or Backoff()
    at = lo
    outage: Outage | None = None
    pause = threading.Event()  # never set: waits that a test's timeout or the task's kill can end
    while at < hi:
        try:
            for item in publisher.fetch(at, hi):
                if outage is not None:  # rows again: the outage is over
                    outage.ended(f"fetching rows [{at}, {hi}) again")
                    outage = None
                at += rows_of(item)
                yield item
            return
        except Refused:
            if outage is not None:
                outage.ended(f"gave up fetching rows [{at}, {hi}): refused")
            raise
        except NetError as exc:
            if outage is None:
                outage = Outage(
                    f"remote publisher {publisher.address}", f"fetching rows [{at}, {hi}) again", exc, bound
                )
            else:
                outage.failed(exc)
            if outage.over:
                outage.ended(f"gave up fetching rows [{at}, {hi})")
                raise
            pause.wait(outage.pause(backoff, random.random()))


__all__ = ["fetch_riding_outages", "rows_of"]
