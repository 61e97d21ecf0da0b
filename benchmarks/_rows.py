"""The rows latency.py offers and measures: a ticking Publisher that stamps each row with the time
it was emitted and logs what it emitted (:func:`ticking`, :class:`Emitted`), and a Subscriber that
takes now - stamp for every row emitted inside the measured window (:class:`Lat`), as ``dicts`` or
``batches`` elements."""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

SCHEMA = pa.schema([("id", pa.int64()), ("t", pa.float64())])
GRACE_SECONDS = 2.0
"""How long after the window closes the rows emitted inside it may still arrive (and be measured)."""


class Counts(Protocol):
    """What a run's window asks of its publishers: the rows they emitted at ``start <= t < end``."""

    def between(self, start: float, end: float) -> int: ...


class Emitted:
    """What the ticking publishers emitted: (time, rows) per tick, appended by their threads."""

    def __init__(self) -> None:
        self.ticks: list[tuple[float, int]] = []

    def between(self, start: float, end: float) -> int:
        """Rows emitted at ``start <= t < end``."""
        return sum(n for t, n in list(self.ticks) if start <= t < end)


def ticking(rate: float, emitted: Emitted | None = None, dicts: bool = False) -> Any:
    """A hot Publisher of {"id", "t"} rows at ``rate`` rows/s, as record batches (one tick a
    millisecond carrying rate/1000 rows, or one row a tick below 1,000 rows/s); with ``dicts``, as
    one dict an element instead (a tick's rows emitted one after another)."""
    from rs_spark.streams import Overflow, create

    per_tick = max(1, int(rate // 1000))
    interval = per_tick / rate

    def run(emitter: Any) -> None:
        stop = threading.Event()
        emitter.on_cancel(stop.set)

        def loop() -> None:
            i = 0
            nxt = time.time()
            while not stop.is_set():
                now = time.time()
                if emitted is not None:  # logged before it is emitted: a tick the window counts is never missed
                    emitted.ticks.append((now, per_tick))
                if dicts:
                    for k in range(i, i + per_tick):
                        emitter.next({"id": k, "t": now})
                else:
                    ids = pa.array(range(i, i + per_tick), pa.int64())
                    emitter.next(pa.record_batch([ids, pa.array([now] * per_tick, pa.float64())], schema=SCHEMA))
                i += per_tick
                nxt += interval
                time.sleep(max(0.0, nxt - time.time()))

        threading.Thread(target=loop, daemon=True, name="bench-ticks").start()

    return create(run, Overflow.ERROR, buffer_size=1_000_000)


class Lat:
    """Takes every row; records now - t for rows emitted inside the window [``warmup_until``, ``until``)."""

    def __init__(self, warmup_until: float, emitted: Counts | None = None) -> None:
        self.warmup_until = warmup_until
        self.until = math.inf  # set when the run's window closes (close_window)
        self.emitted = emitted
        self.recording = True  # False once the run ends: what the stop holds back is not measured
        self._dicts: list[float] = []
        self._arrays: list[pa.Array] = []
        self.count = 0  # rows measured
        self.offered: int | None = None  # rows emitted inside the window, once it closed
        self.last_arrival = 0.0  # time.time() of the latest on_next, recording or not
        self.error: BaseException | None = None

    def on_subscribe(self, s: Any) -> None:
        self.s = s
        s.request(2**62)

    def on_next(self, row: Any, now: float | None = None) -> None:
        now = time.time() if now is None else now
        self.last_arrival = now
        if not self.recording:
            return
        if isinstance(row, pa.RecordBatch):
            t = row.column(1)
            if self.warmup_until <= t[0].as_py() and t[len(t) - 1].as_py() < self.until:  # the usual case, cheaply
                lat = pc.subtract(now, t)
            else:
                lat = pc.subtract(
                    now, pc.filter(t, pc.and_(pc.greater_equal(t, self.warmup_until), pc.less(t, self.until)))
                )
            self._arrays.append(lat)
            self.count += len(lat)
        elif self.warmup_until <= row["t"] < self.until:
            self._dicts.append(now - row["t"])
            self.count += 1

    def on_error(self, e: BaseException) -> None:
        self.error = e

    def on_complete(self) -> None:
        pass

    def close_window(self) -> None:
        """The measured window ends now: wait (up to GRACE_SECONDS) for the rows emitted inside it."""
        self.until = time.time()
        if self.emitted is None:
            return
        deadline = time.monotonic() + GRACE_SECONDS
        while self.count < self._offered() and time.monotonic() < deadline and self.error is None:
            time.sleep(0.005)  # polling the count: rows arrive on the pipeline's threads
        self.offered = self._offered()  # again: a tick stamped before ``until`` may be logged just after

    def _offered(self) -> int:
        assert self.emitted is not None
        return self.emitted.between(self.warmup_until, self.until)

    def latencies(self) -> pa.Array:
        """Every latency measured, seconds."""
        return pa.chunked_array([*self._arrays, pa.array(self._dicts, pa.float64())], pa.float64()).combine_chunks()


def percentiles(xs: pa.Array | list[float]) -> dict[str, float]:
    """n, p50, p90, p99 and max of ``xs`` (seconds); NaN when empty."""
    arr = xs if isinstance(xs, pa.Array) else pa.array(xs, pa.float64())
    n = len(arr)
    if not n:
        return {"n": 0, "p50": float("nan"), "p90": float("nan"), "p99": float("nan"), "max": float("nan")}
    ordered = pc.take(arr, pc.array_sort_indices(arr))

    def q(p: float) -> float:
        return float(ordered[min(n - 1, int(p * n))].as_py())

    return {"n": n, "p50": q(0.50), "p90": q(0.90), "p99": q(0.99), "max": float(ordered[n - 1].as_py())}


__all__ = ["SCHEMA", "Counts", "Emitted", "ticking", "Lat", "percentiles", "GRACE_SECONDS"]
