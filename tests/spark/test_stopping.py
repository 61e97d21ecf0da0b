"""Stopping a query at a micro-batch boundary (rs_spark.examples.stopping) with a real SparkSession,
while micro-batches run back to back and a busy process per core runs beside it (issue 32)."""

from __future__ import annotations

import os

import pytest

import rs_spark
from rs_spark.examples import stopping
from rs_spark.examples.stopping import Brake, stop_at_batch_end

from ..cpu_load import CpuLoad
from ..subscribers import Recorder
from .queries import wait_for_rows

PER_BATCH = 500


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
    df = (
        spark.readStream.format("reactive")
        .schema("id LONG, name STRING, price DOUBLE")
        .option("publisher", "tests.spark.publishers:counter")
        .option("publisher.count", str(10**9))
        .option("maxRecordsPerTrigger", str(PER_BATCH))
        .load()
    )
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
