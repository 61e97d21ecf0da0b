"""Network outages seen by the source's readers, without a Spark session: their methods are called as
Spark's reader process and executors call them, against a real endpoint behind a real relay
(tests/faultrelay.py). While the endpoint is unreachable micro-batches plan nothing and fail nothing,
progress shows the outage, and an executor's fetch waits within its task; beyond the window
failOnDataLoss decides. Durations scaled down (keepalive lifetime 1 s, windows of seconds);
tests/spark/test_outage.py runs the same through Spark, one outage 70 s long."""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadMaxRows
from pyspark.sql.types import LongType, StructField, StructType

from rs_spark import net
from rs_spark.net.zero_loss.retention import Retention
from rs_spark.spark.source.data_loss import DataLossError
from rs_spark.spark.source.options import SourceOptions
from rs_spark.spark.source.partitioned.reader import PartitionedStreamReader
from rs_spark.spark.source.single.reader import ReactiveStreamReader
from tests.faultrelay import FaultRelay
from tests.waits import wait_until

from .publishers import LiveCounter

TOKEN = "outage-reader-test"
SCHEMA = StructType([StructField("id", LongType())])
FAST = {
    "token": TOKEN,
    "pollTimeout": "100ms",
    "keepaliveInterval": "200ms",
    "keepaliveTimeout": "1s",
    "reconnectBackoff": "50ms",
    "reconnectBackoffMax": "500ms",
}


def _off_main_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """As Spark calls it: off the main thread (where the reader would install its SIGTERM handler)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args).result(120)


@pytest.fixture
def endpoint():
    """(server, relay) serving a LiveCounter named ``ids``; ``endpoint(window=...)``."""
    made: list[Any] = []

    def start(window: float = 60.0) -> tuple[net.Server, FaultRelay]:
        server = net.serve(LiveCounter(), name="ids", token=TOKEN, retention=Retention(window=window))
        relay = FaultRelay(server.address)
        made.extend([relay, server])
        return server, relay

    yield start
    for x in made:
        x.close() if isinstance(x, FaultRelay) else x.stop()


class _Single:
    """A ReactiveStreamReader driven as Spark drives it: latestOffset, partitions + read, commit."""

    def __init__(self, relay: FaultRelay, server: net.Server, **options: str) -> None:
        opts = SourceOptions.parse({"endpoint": relay.address(server.address), **FAST, **options})
        self.reader = ReactiveStreamReader(opts, SCHEMA)
        self.offset = _off_main_thread(self.reader.latestOffset, self.reader.initialOffset(), ReadMaxRows(50))
        self.ids: list[int] = []

    def trigger(self) -> bool:
        """One micro-batch: plan, read, commit; whether it planned rows (False: an empty micro-batch)."""
        end = _off_main_thread(self.reader.latestOffset, self.offset, ReadMaxRows(50))
        parts = self.reader.partitions(self.offset, end)
        for p in parts:
            for batch in self.reader.read(p):
                self.ids.extend(batch.column(0).to_pylist())
        self.reader.commit(end)
        self.offset = end
        return bool(parts)

    def progress(self) -> dict:
        return self.reader.reportLatestOffset() or {}

    def stop(self) -> None:
        _off_main_thread(self.reader.stop)


def _rows_until(single: _Single, n: int) -> None:
    wait_until(lambda: single.trigger() and len(single.ids) >= n or len(single.ids) >= n, f"{n} rows", 30, 0.0)


def test_while_disconnected_micro_batches_plan_nothing_fail_nothing_and_progress_shows_the_outage(endpoint):
    server, relay = endpoint()
    single = _Single(relay, server)
    try:
        _rows_until(single, 100)
        relay.black_hole()
        empty = 0  # micro-batches that planned nothing (the first ones may plan rows that came before)
        during: dict = {}
        ends = time.monotonic() + 3.0  # three keepalive lifetimes of triggers (the outage lasts that long)
        while time.monotonic() < ends:
            if not single.trigger():  # raises nothing
                empty += 1
            during = single.progress().get("outage") or during
        seen = len(single.ids)
        assert during, "the progress never showed the outage"
        assert during["endpoint"] == f"remote publisher {relay.address(server.address)}"
        assert during["seconds"] > 0 and during["givesUpInSeconds"] > 0 and TOKEN not in json.dumps(during)
        relay.heal()
        _rows_until(single, seen + 100)
        assert "outage" not in single.progress()
        assert single.ids == list(range(single.ids[0], single.ids[0] + len(single.ids))), "a row lost or read twice"
        assert empty > 5
    finally:
        single.stop()


def test_beyond_the_window_fail_on_data_loss_fails_the_query_saying_what_was_lost(endpoint):
    server, relay = endpoint(window=2.0)
    single = _Single(relay, server)
    try:
        _rows_until(single, 50)
        relay.black_hole()
        with pytest.raises(DataLossError) as err:
            wait_until(lambda: single.trigger() and False, "the window to end", 30, 0.0)
        text = str(err.value)
        assert "cannot resume stream" in text and "within 3 s (the endpoint's window" in text, text
        assert "Set failOnDataLoss=false to continue with a new stream" in text and TOKEN not in text
    finally:
        relay.heal()
        single.stop()


def test_beyond_the_window_without_fail_on_data_loss_the_loss_is_reported_and_a_new_stream_read(endpoint, caplog):
    server, relay = endpoint(window=2.0)
    single = _Single(relay, server, failOnDataLoss="false", keepaliveTimeout="3s")
    try:
        _rows_until(single, 50)
        relay.reset()
        wait_until(lambda: server.stats().expired_streams == 1, "the endpoint to expire the stream", 20)
        relay.heal()
        with caplog.at_level(logging.WARNING, logger="rs_spark.source"):  # rows received before the outage come first
            wait_until(lambda: single.trigger() and False or _loss_reports(caplog), "the loss to be reported", 30, 0.0)
            n = len(single.ids)
            wait_until(lambda: single.trigger() and False or len(single.ids) >= n + 20, "rows of a new stream", 30, 0.0)
        (report,) = _loss_reports(caplog)
        assert "continue with a new stream from the endpoint (failOnDataLoss=false)" in report
        ids = single.ids
        steps = [b - a for a, b in itertools.pairwise(ids)]
        assert all(d > 0 for d in steps), "a row read twice or out of order"
        skipped = sum(d - 1 for d in steps)  # the ids the new stream does not start at
        assert skipped <= server.stats().lost_records  # reported above, and counted lost at the endpoint
    finally:
        single.stop()


def _loss_reports(caplog) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if "records it had sent after the last commit are lost" in r.getMessage()
    ]


# -- several endpoints as partitions: the reader process and the executors ---------------------------


def _partitioned(relay: FaultRelay, server: net.Server) -> PartitionedStreamReader:
    opts = SourceOptions.parse({"endpoint": f"a={relay.address(server.address)}", "executorFetch": "true", **FAST})
    return PartitionedStreamReader(opts, SCHEMA)


@pytest.mark.parametrize("fault", ["black_hole", "reset"])
def test_an_executors_fetch_waits_within_its_task_through_an_outage_and_reads_each_row_once(endpoint, fault):
    server, relay = endpoint()
    reader = _partitioned(relay, server)
    try:
        o0 = _off_main_thread(reader.latestOffset, reader.initialOffset(), ReadMaxRows(100))
        o1 = wait_until(
            lambda: (o := _off_main_thread(reader.latestOffset, o0, ReadMaxRows(100)))["positions"]["a"] and o,
            "100 rows planned",
        )
        (part,) = reader.partitions(o0, o1)
        getattr(relay, fault)()
        got: list[int] = []
        failed: list[BaseException] = []

        def task() -> None:  # what an executor runs for the planned range
            try:
                for b in reader.read(part):
                    got.extend(b.column(0).to_pylist())
            except BaseException as exc:
                failed.append(exc)

        t = threading.Thread(target=task)
        t.start()
        time.sleep(3.0)  # the outage: three keepalive lifetimes (time passing is the fault, not a synchronisation)
        assert t.is_alive() and not failed and not got, "the task failed or read during the outage"
        progress = reader.reportLatestOffset()["partitions"]["a"]
        assert progress["outage"]["seconds"] > 0 and TOKEN not in json.dumps(progress)
        relay.heal()
        t.join(30)
        assert not failed, failed
        assert got == list(range(got[0], got[0] + o1["positions"]["a"])) and len(got) == part.hi - part.lo
    finally:
        _off_main_thread(reader.stop)
