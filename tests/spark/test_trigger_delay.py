"""minRecordsPerTrigger with maxTriggerDelay, decided on the reader's clock: here a fake one moved by hand,
so the test needs neither a Spark session nor a sleep (the reader runs in this process)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadMinRows
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from rs_spark.spark.source.options import SourceOptions
from rs_spark.spark.source.single.reader import ReactiveStreamReader

SCHEMA = StructType(
    [StructField("id", LongType()), StructField("name", StringType()), StructField("price", DoubleType())]
)


class FakeClock:
    """Monotonic seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _off_main_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn`` on another thread: the reader installs its SIGTERM handler only on the main thread,
    which here is pytest's."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args).result(60)


@pytest.fixture
def reader_of():
    readers: list[ReactiveStreamReader] = []

    def make(count: int, clock: FakeClock) -> ReactiveStreamReader:
        opts = SourceOptions.parse(
            {
                "publisher": "tests.spark.publishers:some_then_silent",  # `count` records, then silence
                "publisher.count": str(count),
                "minRecordsPerTrigger": "10",
                "maxTriggerDelay": "30s",
                "pollTimeout": "50ms",  # how long each latestOffset waits for the rows it asked for
            }
        )
        readers.append(ReactiveStreamReader(opts, SCHEMA, clock=clock))
        return readers[-1]

    yield make
    for r in readers:
        _off_main_thread(r.stop)


def _latest(reader: ReactiveStreamReader, start: dict) -> dict:
    return _off_main_thread(reader.latestOffset, start, ReadMinRows(10))


def test_fewer_than_min_records_wait_until_max_trigger_delay_passes_on_the_readers_clock(reader_of):
    clock = FakeClock()
    reader = reader_of(4, clock)
    start = reader.initialOffset()
    assert _latest(reader, start) == start  # 4 of 10 records: no micro-batch yet
    clock.now += 29.9
    assert _latest(reader, start) == start  # still within maxTriggerDelay=30s of the reader's start
    clock.now += 0.2
    end = _latest(reader, start)
    assert end["offset"] == 4  # the delay passed: the 4 records make a smaller micro-batch
    clock.now += 29.9
    assert _latest(reader, end) == end  # nothing buffered: no empty batch, whatever the clock says
    clock.now += 100
    assert _latest(reader, end) == end


def test_min_records_reached_plan_at_once_without_the_clock_moving(reader_of):
    clock = FakeClock()
    reader = reader_of(25, clock)
    start = reader.initialOffset()
    assert _latest(reader, start)["offset"] >= 10  # as many as it asked for, at least minRecordsPerTrigger
