"""Stopping a query at a micro-batch boundary (rs_spark.examples.stopping) with a real SparkSession,
while micro-batches run back to back and a busy process per core runs beside it (issue 32)."""

from __future__ import annotations

import os

import pytest

import rs_spark
from rs_spark.examples import stopping
from rs_spark.examples.stopping import Brake, stop_at_batch_end
from rs_spark.spark import internals

from ..cpu_load import CpuLoad
from ..subscribers import Recorder
from ..waits import wait_until
from .queries import wait_for_rows

PER_BATCH = 500


def _counter(spark):
    """An endless reactive source, PER_BATCH rows a micro-batch."""
    return (
        spark.readStream.format("reactive")
        .schema("id LONG, name STRING, price DOUBLE")
        .option("publisher", "tests.spark.publishers:counter")
        .option("publisher.count", str(10**9))
        .option("maxRecordsPerTrigger", str(PER_BATCH))
        .load()
    )


def _batches(folder: str) -> list[int]:
    """The micro-batch ids Spark logged in a checkpoint's ``offsets`` or ``commits`` folder."""
    return sorted(int(n) for n in os.listdir(folder) if n.isdigit())


@pytest.mark.timeout(300)
def test_stop_at_batch_end_lets_the_held_batch_commit_and_plans_no_batch_after_it(spark, tmp_path, monkeypatch):
    marked: list[bool] = []
    real = stopping.mark_terminated
    monkeypatch.setattr(stopping, "mark_terminated", lambda q: marked.append(real(q)) or marked[-1])
    # Each commit takes about PER_BATCH x 2 ms in the Subscriber, ten times the trigger interval:
    # Spark plans the next micro-batch as soon as one ends, so there is no idle moment to stop in.
    rec = Recorder(batch=64, delay=0.002)
    brake = Brake(rec)
    ck = tmp_path / "ck"
    df = _counter(spark)
    q = rs_spark.write_stream(df, brake, checkpoint=str(ck), trigger={"processingTime": "100 milliseconds"})
    try:
        wait_for_rows(q, batches=2, rows=2 * PER_BATCH)
        with CpuLoad(seconds=240):
            assert stop_at_batch_end(q, brake, timeout=120)
    finally:
        if q.isActive:
            q.stop()
    assert marked == [True], "the query was not marked terminated: stop() interrupted it instead"
    assert not q.isActive and q.exception() is None
    assert rec.done.wait(30) and rec.completed and rec.error is None
    # Every micro-batch Spark planned was committed: none was started and then aborted by the stop.
    planned, committed = _batches(str(ck / "offsets")), _batches(str(ck / "commits"))
    assert planned == committed, f"planned {planned}, committed {committed}"
    # The batch held at the brake was delivered whole, and it was the last one.
    last = committed[-1]
    assert rec.batch_ids[-1] == last and rec.batch_ids.count(last) == PER_BATCH
    assert len(rec.items) == (last + 1) * PER_BATCH


def _rate_query(spark, ck, trigger="200 milliseconds"):
    return (
        spark.readStream.format("rate")
        .option("rowsPerSecond", "50")
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(ck))
        .trigger(processingTime=trigger)
        .start()
    )


@pytest.mark.timeout(300)
def test_stop_when_idle_ends_the_query_between_batches_with_every_planned_batch_committed(spark, tmp_path):
    ck = tmp_path / "ck"
    q = _rate_query(spark, ck)
    try:
        wait_until(lambda: q.lastProgress is not None and q.lastProgress["batchId"] >= 2, "three batches")
        with CpuLoad(seconds=120):
            assert stopping.stop_when_idle(q, timeout=60)
    finally:
        q.stop()
    assert q.exception() is None
    planned, committed = _batches(str(ck / "offsets")), _batches(str(ck / "commits"))
    assert planned == committed, f"planned {planned}, committed {committed}"


def test_a_query_seen_busy_is_not_marked(spark, tmp_path):
    rec = Recorder(batch=64)
    brake = Brake(rec)
    df = _counter(spark)
    q = rs_spark.write_stream(
        df, brake, checkpoint=str(tmp_path / "ck"), trigger={"processingTime": "100 milliseconds"}
    )
    try:
        brake.hold()
        assert brake.holding.wait(120)  # the query's thread waits in a commit: a batch runs
        assert internals.mark_terminated_if_idle(q) is False
        assert q.isActive
    finally:
        brake.release()
        q.stop()


def test_a_trigger_that_fires_between_the_two_looks_finds_the_mark_withdrawn(spark, tmp_path, monkeypatch):
    q = _rate_query(spark, tmp_path / "ck", trigger="1 hour")  # after the first batch: idle for an hour
    try:
        wait_until(lambda: q.lastProgress is not None, "the first batch")
        seen = iter([True, False])  # idle before the mark, awake after it: the trigger fired in between
        monkeypatch.setattr(internals, "_waits_for_trigger", lambda jvm, thread: next(seen))
        assert internals.mark_terminated_if_idle(q) is False
        assert q._jsq.streamingQuery().state().get().getClass().getSimpleName() == "ACTIVE$"
        assert q.isActive and q.exception() is None
        monkeypatch.undo()
        assert internals.mark_terminated_if_idle(q) is True  # really idle: marked, and kept
        assert not q.isActive
    finally:
        q.stop()
