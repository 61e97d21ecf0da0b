"""Publishers for the real-time tests: rows ``id`` (and ``t``, when they were emitted) as one-row
Arrow record batches, emitted only as requested, with the demand and cancellation they saw recorded."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pyarrow as pa

from rs_spark.streams import from_iterable
from rs_spark.streams import map as rs_map

SCHEMA = pa.schema([("id", pa.int64()), ("t", pa.float64())])
DDL = "id LONG, t DOUBLE"


class Boom(ValueError):
    """The error a failing test publisher signals."""


def one_row(i: int) -> pa.RecordBatch:
    return pa.record_batch([pa.array([i], pa.int64()), pa.array([time.time()], pa.float64())], schema=SCHEMA)


class Recording:
    """Wraps a Publisher: counts what its one subscriber requested and received, and sees cancel().
    ``max_outstanding``: the most rows ever requested and not yet emitted (the demand in flight)."""

    def __init__(self, upstream: Any) -> None:
        self._upstream = upstream
        self._lock = threading.Lock()
        self.requested = 0
        self.emitted = 0
        self.max_outstanding = 0
        self.cancelled = threading.Event()
        self.subscribed = threading.Event()

    def subscribe(self, subscriber: Any) -> None:
        self._upstream.subscribe(_Tap(subscriber, self))
        self.subscribed.set()

    def on_request(self, n: int) -> None:
        with self._lock:
            self.requested = min(self.requested + n, 2**63 - 1)
            self.max_outstanding = max(self.max_outstanding, self.requested - self.emitted)

    def on_emit(self, rows: int) -> None:
        with self._lock:
            self.emitted += rows


class _Tap:
    def __init__(self, downstream: Any, rec: Recording) -> None:
        self._down = downstream
        self._rec = rec

    def on_subscribe(self, s: Any) -> None:
        self._down.on_subscribe(_TapSubscription(s, self._rec))

    def on_next(self, item: Any) -> None:
        self._rec.on_emit(item.num_rows)
        self._down.on_next(item)

    def on_error(self, e: BaseException) -> None:
        self._down.on_error(e)

    def on_complete(self) -> None:
        self._down.on_complete()


class _TapSubscription:
    def __init__(self, s: Any, rec: Recording) -> None:
        self._s = s
        self._rec = rec

    def request(self, n: int) -> None:
        self._rec.on_request(n)
        self._s.request(n)

    def cancel(self) -> None:
        self._rec.cancelled.set()
        self._s.cancel()


def rows(
    count: int | None = None,
    fail_after: int | None = None,
    message: str = "boom",
    recording: type[Recording] = Recording,
) -> Recording:
    """Rows 0.. (``count`` of them, or endless) on demand; with ``fail_after`` the stream fails
    with :class:`Boom` (``message``) instead of emitting that row. ``recording``: the wrapper class."""

    def to_batch(i: int) -> pa.RecordBatch:
        if fail_after is not None and i >= fail_after:
            raise Boom(f"{message} at row {i}")
        return one_row(i)

    source = from_iterable(range(count) if count is not None else itertools.count())
    return recording(source.pipe(rs_map(to_batch)))
