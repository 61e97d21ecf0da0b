"""Zero loss across a driver crash without a replay log: the endpoint keeps what it sent until
Spark commits and the restarted reader resumes the same stream; a replayable publisher is asked
again from the committed position. (The 20-kill trial is tests/reliability/test_kill_driver.py.)"""

from __future__ import annotations

import json
import threading

import pytest

import rs_spark
from rs_spark.net import Retention
from rs_spark.spark.source.read_stream import served
from tests.publishers import Counting
from tests.reliability.trial import Trial
from tests.waits import wait_until


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_driver_sigkill_loses_and_duplicates_nothing_from_an_endpoint_or_a_replayable_publisher(tmp_path):
    trial = Trial(tmp_path)
    try:
        trial.kill(runs=1, seed=11)
        trial.finish(run=1)
        trial.check()
    finally:
        trial.close()


class _Gate:
    """A Subscriber that takes 300 rows, then nothing until opened."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.open = threading.Event()

    def on_subscribe(self, s) -> None:
        self.s = s
        s.request(300)

    def on_next(self, row) -> None:
        self.ids.append(row["id"])
        if len(self.ids) == 300:
            threading.Thread(target=lambda: (self.open.wait(120), self.s.request(10**9)), daemon=True).start()

    def on_error(self, e) -> None:
        pass

    def on_complete(self) -> None:
        pass


@pytest.mark.timeout(300)
def test_a_stalled_query_pauses_the_publisher_at_the_retention_bound_and_drops_nothing(spark):
    """The Subscriber stops taking rows, so commits stop; the endpoint keeps at most
    Retention.max_records rows beyond the last acknowledgement and asks its publisher for no
    more (backpressure to the source of data) although the reader wants more; nothing is
    dropped: once the Subscriber takes rows again every id arrives once, in order."""
    pub = Counting(10**9, as_row=lambda i: {"id": i})
    df = rs_spark.read_stream(
        spark,
        pub,
        schema="id LONG",
        retention=Retention(max_records=800),
        options={
            "maxRecordsPerTrigger": 1000,
            "maxBufferedRecords": 2000,  # the reader would hold 2,000 uncommitted rows: the endpoint's bound is lower
            "pollTimeout": "100ms",
        },
    )
    gate = _Gate()
    q = rs_spark.write_stream(df, gate, trigger={"processingTime": "50 milliseconds"})
    server = served()[-1]  # the one this read_stream started
    try:
        wait_until(lambda: _kept(server) == 800, what="the endpoint to reach its bound of 800 kept rows", timeout=120)
        stream = server.stats().streams[0]
        assert pub.requested == stream.acked_position + 800  # asked for nothing beyond the bound
        assert stream.held_bytes < 800 * 64  # small rows: the bound bounds memory too
        gate.open.set()
        wait_until(lambda: len(gate.ids) >= 3000, what="3000 rows after the stall", timeout=120)
        progress = wait_until(lambda: _source_metrics(q), what="the source's progress")
        assert progress["committedPosition"] > 0 and progress["endpointRetainedRecords"] <= 800
    finally:
        q.stop()
    assert gate.ids[:3000] == list(range(3000))


def _kept(server) -> int:
    streams = server.stats().streams
    return streams[0].held_records if streams else -1


def _source_metrics(q):
    p = q.lastProgress
    m = p and p["sources"][0].get("latestOffset")
    m = json.loads(m) if isinstance(m, str) else m
    return m if m and "endpointRetainedRecords" in m else None
