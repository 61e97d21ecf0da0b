"""What rs_spark holds for each query it started into a Subscriber, found by query id.

:func:`rs_spark.write_stream` (and ``realtime.write_stream``) record the run they start here, keyed by the
query's ``id``: any handle of the query finds it (the one returned, ``spark.streams.get(id)``, a Spark Connect
client's), and a query started again from its checkpoint (same id, new ``runId``) replaces its stopped run's.
Runs that ended stay readable (their hub's counts and ledger) for the last :data:`KEEP_ENDED` queries.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from typing import Any

from ...delivery import DeliveryHub, DeliveryHubStats

KEEP_ENDED = 100
"""Ended queries whose last run's state is kept (the oldest beyond this are forgotten)."""


@dataclasses.dataclass(frozen=True)
class SinkState:
    """The current (or last) run of a query writing into a Subscriber through rs_spark."""

    query_id: str
    run_id: str
    hub: DeliveryHub | None
    """The hub serving the Subscriber in this process (its counts: :meth:`stats`; its ``ledger``); None
    when the Subscriber is served elsewhere."""
    options: dict[str, Any] = dataclasses.field(repr=False)
    """The sink options the query was started with (``repr`` leaves them out: they may hold a token)."""

    def stats(self) -> DeliveryHubStats | None:
        """The hub's counts now (what reached the Subscriber, what waits for it); None when the
        Subscriber is served elsewhere."""
        return None if self.hub is None else self.hub.stats()


class _Registry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, SinkState] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()  # query ids whose last run ended, oldest first

    def started(self, state: SinkState) -> None:
        with self._lock:
            self._runs[state.query_id] = state
            self._ended.pop(state.query_id, None)

    def ended(self, query_id: str, run_id: str) -> None:
        with self._lock:
            state = self._runs.get(query_id)
            if state is None or state.run_id != run_id:  # a newer run took its place
                return
            self._ended[query_id] = None
            while len(self._ended) > KEEP_ENDED:
                old, _ = self._ended.popitem(last=False)
                self._runs.pop(old, None)

    def get(self, query_id: str) -> SinkState | None:
        with self._lock:
            return self._runs.get(query_id)


_registry = _Registry()


def run_started(query: Any, hub: DeliveryHub | None, options: dict[str, Any]) -> SinkState:
    """Record the run of ``query`` just started (replacing its previous run's state)."""
    state = SinkState(str(query.id), str(query.runId), hub, dict(options))
    _registry.started(state)
    return state


def run_ended(state: SinkState) -> None:
    """The run of ``state`` ended: its state stays readable until :data:`KEEP_ENDED` newer queries end."""
    _registry.ended(state.query_id, state.run_id)


def sink_state(query: Any) -> SinkState:
    """The sink state of ``query`` (a StreamingQuery from any handle, or its id) for its current or last run.

    Raises ``LookupError`` when no query with that id was started by :func:`rs_spark.write_stream` in this
    process."""
    query_id = query if isinstance(query, str) else str(query.id)
    state = _registry.get(query_id)
    if state is None:
        raise LookupError(
            f"query {query_id}: rs_spark holds no sink state for it in this process; it is kept for queries "
            "started with rs_spark.write_stream (or rs_spark.spark.realtime.write_stream) in this process"
        )
    return state


__all__ = ["SinkState", "sink_state", "run_started", "run_ended", "KEEP_ENDED"]
