"""A bursty sensor feed: quiet stretches, then bursts far faster than a sink can take. Replayable.

``readings(options)`` is a ``format("reactive")`` factory. Options (all optional, under the
``publisher.`` prefix, as the source passes them): ``sensors`` (default 8), ``total`` (records,
default unbounded), ``rate`` (records/s between bursts, default 200), ``burst`` (records per
burst, default 5000), ``burst_every`` (seconds, default 3), ``seed`` (default 42), ``origin``
(the first record's time: ISO 8601 such as ``2026-05-01T12:00:00Z``, or seconds since the
epoch; default 2025-01-01T00:00:00Z) and ``buffer`` (records, default 500000).

Every record is a function of its number: record ``seq`` has the sensor and temperature drawn
from ``(seed, seq)`` and the time ``origin`` plus its place in the schedule (``rate`` records per
second for ``burst_every`` seconds, then ``burst`` records at one instant, again and again). So
the feed is :class:`~rs_spark.streams.types.Replayable`: ``subscribe_at(subscriber, p)`` starts
at record ``p`` and gives the same records as any other subscription with the same options, in
this process or another; ``subscribe`` is ``subscribe_at(subscriber, 0)``. The ``reactive``
source can resume it after a restart without a replay log. Pin ``origin`` (the demo sets it to
its start time) to get timestamps near now; every process that builds the feed then agrees.

It stays a real push source: each subscription has a thread that emits on the feed's own clock
(record ``p`` at once, the later ones as their time comes, relative to the subscription's start)
through ``create`` with a bounded buffer (``buffer``, ``Overflow.DROP_OLDEST``); Spark's demand
drains it. The buffer holds record numbers (a few dozen bytes each), the records are made as they
are delivered, so a long backlog costs little memory. A sensor cannot be slowed, so if the
consumer falls ``buffer`` records behind, the oldest waiting readings are dropped (counted in
:attr:`SensorFeed.dropped`, logged once per subscription). Drops and replay: positions are record
numbers, so after a drop a subscription has received fewer records than the record number it
reached. A consumer that counts what it received (the ``reactive`` source's offsets do) and
resumes at that count gets the records after the drop again (regenerated, equal), as many as were
dropped; the dropped ones are not sent again. For exact replay, size ``buffer`` (and the source's
``maxRecordsPerTrigger``) so it never fills.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from ..streams import Overflow, create
from ..streams import map as map_each
from ..streams.types import Subscriber

SCHEMA = "sensor STRING, ts TIMESTAMP, temperature DOUBLE, seq LONG"
DEFAULT_ORIGIN = "2025-01-01T00:00:00Z"

log = logging.getLogger("rs_spark.examples.sensors")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MASK = (1 << 64) - 1


@dataclasses.dataclass(frozen=True)
class FeedOptions:
    """The feed's options, parsed: every record follows from them and its number."""

    sensors: int = 8
    total: int | None = None
    rate: float = 200.0
    burst: int = 5000
    burst_every: float = 3.0
    seed: int = 42
    origin_us: int = 0  # the first record's time, microseconds since the epoch
    buffer: int = 500_000

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> FeedOptions:
        """From a factory's options (``<name>``: option ``publisher.<name>`` with its prefix stripped, any
        case); errors name the option as the user wrote it."""
        opt = {str(k).lower(): v for k, v in options.items()}

        def number(name: str, default: float, lowest: float) -> float:
            raw = opt.get(name, default)
            try:
                value = float(raw)
            except (TypeError, ValueError):
                raise ValueError(f"option publisher.{name}={raw!r} is not a number") from None
            if value < lowest:
                raise ValueError(f"option publisher.{name}={raw!r} must be >= {lowest:g}")
            return value

        total = int(number("total", -1, -1))
        f = cls(
            sensors=int(number("sensors", 8, 1)),
            total=None if total < 0 else total,
            rate=number("rate", 200.0, 0),
            burst=int(number("burst", 5000, 0)),
            burst_every=number("burst_every", 3.0, 0.001),
            seed=int(number("seed", 42, 0)),
            origin_us=parse_origin(opt.get("origin", DEFAULT_ORIGIN)),
            buffer=int(number("buffer", 500_000, 1)),
        )
        if f.rate == 0 and f.burst == 0:
            raise ValueError("options publisher.rate and publisher.burst are both 0: the feed would never emit")
        return f


def parse_origin(raw: Any) -> int:
    """``publisher.origin`` as microseconds since the epoch: ISO 8601 (UTC unless it says) or seconds."""
    text = str(raw).strip()
    try:
        return round(float(text) * 1_000_000)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"option publisher.origin={raw!r} is neither ISO 8601 (2026-05-01T12:00:00Z) nor seconds since the epoch"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return (dt - _EPOCH) // timedelta(microseconds=1)


class Schedule:
    """When record ``seq`` happens, in microseconds after the origin: each cycle of ``burst_every``
    seconds has its quiet records ``1/rate`` apart, then ``burst`` records at the cycle's end."""

    def __init__(self, f: FeedOptions) -> None:
        self.period_us = max(1, round(1_000_000 / f.rate)) if f.rate > 0 else 0
        if f.burst == 0:  # no bursts: one quiet record per "cycle" of one period
            self.cycle_us, self.quiet = self.period_us, 1
        else:
            self.cycle_us = max(1, round(f.burst_every * 1_000_000))
            self.quiet = self.cycle_us // self.period_us if self.period_us else 0
        self.burst = f.burst
        self.per_cycle = self.quiet + self.burst

    def offset_us(self, seq: int) -> int:
        cycle, i = divmod(seq, self.per_cycle)
        at = cycle * self.cycle_us
        return at + i * self.period_us if i < self.quiet else at + self.cycle_us


def _mix(x: int) -> int:
    """splitmix64: a well-spread 64-bit hash, the same on every platform and process."""
    z = (x + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


class SensorFeed:
    """The sensor feed as a Publisher that can start at any record (``Replayable``)."""

    def __init__(self, options: FeedOptions) -> None:
        self.options = options
        self.schedule = Schedule(options)
        self._salt = _mix(options.seed)
        self._lock = threading.Lock()
        self._dropped = 0

    @property
    def dropped(self) -> int:
        """Readings dropped so far because a subscription's buffer was full (all subscriptions)."""
        return self._dropped

    def record(self, seq: int) -> dict[str, Any]:
        """Record number ``seq``: the same for the same options, wherever it is computed."""
        h = _mix(self._salt ^ seq)
        s = h % self.options.sensors
        at = self.options.origin_us + self.schedule.offset_us(seq)
        return {
            "sensor": f"sensor-{s}",
            "ts": _EPOCH + timedelta(microseconds=at),
            "temperature": round(20 + 5 * ((h >> 20) & 0xFFFFFF) / 0x1000000 + s, 2),
            "seq": seq,
        }

    def subscribe(self, subscriber: Subscriber[dict[str, Any]]) -> None:
        self.subscribe_at(subscriber, 0)

    def subscribe_at(self, subscriber: Subscriber[dict[str, Any]], position: int) -> None:
        """Subscribe from record number ``position`` (a bad position reaches ``on_error``)."""
        warned = threading.Event()

        def dropped(_: Any) -> None:
            with self._lock:
                self._dropped += 1
            if not warned.is_set():
                warned.set()
                log.warning(
                    "sensor feed (subscribed at record %d): %d readings wait for demand (option "
                    "publisher.buffer), so the oldest are dropped from now on: a sensor cannot wait. A "
                    "consumer that resumes by counting what it received re-reads as many records as were "
                    "dropped (see rs_spark.examples.sensors). Raise publisher.buffer or the reader's demand "
                    "(maxRecordsPerTrigger)",
                    position,
                    self.options.buffer,
                )

        def start(emitter: Any) -> None:
            if isinstance(position, bool) or not isinstance(position, int) or position < 0:
                raise ValueError(f"sensor feed: subscribe_at(position={position!r}): a record number >= 0 is needed")
            _Clock(self, emitter, position).start()

        # The buffer holds record numbers; map makes each record as it is delivered.
        numbers = create(start, Overflow.DROP_OLDEST, buffer_size=self.options.buffer, on_drop=dropped)
        numbers.pipe(map_each(self.record)).subscribe(subscriber)


class _Clock:
    """One subscription's emitting thread: record ``position`` now, the next ones on schedule."""

    def __init__(self, feed: SensorFeed, emitter: Any, position: int) -> None:
        self.feed, self.emitter, self.seq = feed, emitter, position
        self.stop = threading.Event()
        emitter.on_cancel(self.stop.set)
        self.t0 = time.monotonic()
        self.base_us = feed.schedule.offset_us(position)
        total = feed.options.total
        self.end: float = total if total is not None else float("inf")

    def start(self) -> None:
        threading.Thread(target=self.run, name="sensor-feed", daemon=True).start()

    def run(self) -> None:
        offset_us = self.feed.schedule.offset_us
        while not self.stop.is_set():
            if self.seq >= self.end:
                self.emitter.complete()
                return
            wait = (offset_us(self.seq) - self.base_us) / 1e6 - (time.monotonic() - self.t0)
            if wait > 0 and self.stop.wait(wait):
                return
            now_us = self.base_us + int((time.monotonic() - self.t0) * 1_000_000)
            # Every record due by now (a burst shares one instant), then look at the clock again.
            while self.seq < self.end and offset_us(self.seq) <= now_us and not self.stop.is_set():
                self.emitter.next(self.seq)
                self.seq += 1


def readings(options: Mapping[str, Any]) -> SensorFeed:
    """The ``format("reactive")`` factory: a :class:`SensorFeed` for these options."""
    return SensorFeed(FeedOptions.parse(options))


__all__ = ["SCHEMA", "DEFAULT_ORIGIN", "FeedOptions", "SensorFeed", "Schedule", "parse_origin", "readings"]
