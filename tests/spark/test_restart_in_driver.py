"""Several queries in one driver, one stopped and started again from its checkpoint (issue 33).

The queries run in a session of their own (``spark.newSession()``: its StreamingQueryListenerBus
delivers only its queries' events) with a gate listener registered before rs_spark's: the gate
holds the QueryTerminatedEvent of a stopped run until its restarted run has delivered rows, which
is the order the listener bus took under load when the issue was seen. rs_spark's listener then
gets the stopped run's end after the restarted run is watched: it must end only the stopped run.
"""

from __future__ import annotations

import threading

import pytest
from pyspark.sql.streaming import StreamingQueryListener

import rs_spark
from rs_spark.spark import register

from ..subscribers import Recorder
from ..waits import wait_until

pytestmark = pytest.mark.timeout(900)

UNBOUNDED = 2**62
TRIGGER = {"processingTime": "100 milliseconds"}
# Each start of a run launches Spark's Python source runner, which must connect back to the JVM within
# Spark's fixed 10 s (under CI load it sometimes did not: "Python worker failed to connect back"). Two
# queries per test and half-second triggers keep the test's own load down; the race it pins down is the
# listener bus's order, which the gate controls, not the trigger.
RESTART_TRIGGER = {"processingTime": "500 milliseconds"}


class Gate(StreamingQueryListener):
    """Holds the end of the runs in ``held`` (run ids) until :meth:`release`; records every end."""

    def __init__(self) -> None:
        self.held: set[str] = set()
        self.ended: set[str] = set()
        self._open = threading.Condition()

    def hold(self, run_id: str) -> None:
        with self._open:
            self.held.add(run_id)

    def release(self, run_id: str) -> None:
        with self._open:
            self.held.discard(run_id)
            self._open.notify_all()

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        pass

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        run = str(event.runId)
        with self._open:
            self._open.wait_for(lambda: run not in self.held, timeout=300)
            self.ended.add(run)


def ids_source(session, name: str, tmp_path):
    """A replayable publisher of ids 0, 1, 2, ...: a restarted run reads on from the committed position."""
    return (
        session.readStream.format("reactive")
        .schema("id LONG, name STRING, price DOUBLE")
        .option("publisher", "tests.reliability.publishers:replayable_ids")
        .option("publisher.marker", str(tmp_path / f"{name}.marker"))
        .option("maxRecordsPerTrigger", "50")
        .load()
    )


def ids(rec: Recorder) -> list[int]:
    return [r["id"] for r in list(rec.items)]


def delivered_more(rec: Recorder, than: int, timeout: float = 120.0) -> None:
    wait_until(lambda: len(rec.items) > than or rec.done.is_set(), f"rows beyond {than}", timeout)
    assert not rec.done.is_set(), f"the Subscriber ended: {rec.error!r}"


class Restarted:
    """A query restarted from its checkpoint: each run into a new Subscriber (``new``, with the
    ledger in a file shared by the runs) or into one Subscriber served once for every run."""

    def __init__(self, session, tmp_path, name: str, gate: Gate, new: bool) -> None:
        self.session, self.tmp, self.name, self.gate, self.new = session, tmp_path, name, gate, new
        self.ck, self.ledger = str(tmp_path / f"{name}.ck"), str(tmp_path / f"{name}.ledger")
        self.recs: list[Recorder] = []
        self.hubs: list = []
        self.ep = None if new else rs_spark.serve_sink(self._recorder(), ledger=self.ledger)
        self.q = None

    def _recorder(self) -> Recorder:
        rec = Recorder(UNBOUNDED)
        self.recs.append(rec)
        return rec

    def start(self) -> None:
        df = ids_source(self.session, self.name, self.tmp)
        if self.new:
            self.q = rs_spark.write_stream(
                df,
                self._recorder(),
                checkpoint=self.ck,
                ledger=self.ledger,
                trigger=RESTART_TRIGGER,
                query_name=self.name,
            )
            self.hubs.append(rs_spark.sink_state(self.q).hub)
        else:
            self.q = rs_spark.write_stream(
                df,
                self.ep.address,
                checkpoint=self.ck,
                trigger=RESTART_TRIGGER,
                query_name=self.name,
                end_on_stop=False,
            )
        delivered_more(self.recs[-1], len(self.recs[-1].items))

    def restart(self) -> None:
        """Stop the run, hold its end event, start the next run, let it deliver, then let the end through."""
        old, before = str(self.q.runId), sum(len(r.items) for r in self.recs)
        self.gate.hold(old)
        self.q.stop()
        hub_before = self.hubs[-1].stats().batches_delivered if self.new else None
        self.start()
        assert sum(len(r.items) for r in self.recs) > before
        self.gate.release(old)
        wait_until(lambda: old in self.gate.ended, f"the end of run {old} through the gate")
        if self.new:
            assert self.recs[-2].done.wait(60), "the stopped run's Subscriber got no terminal signal"
            assert self.recs[-2].completed and self.recs[-2].error is None
            assert self.hubs[-2].stats().batches_delivered == hub_before, "a commit reached the stopped run's endpoint"
        # The restarted run is not ended by the stopped run's late end: it goes on delivering.
        delivered_more(self.recs[-1], len(self.recs[-1].items))
        assert self.q.isActive, f"the restarted query ended: {self.q.exception()}"

    def stop(self) -> list[int]:
        self.q.stop()
        if self.ep is not None:
            self.ep.finish()
        for rec in self.recs:
            assert rec.wait_done(60).error is None, rec.error
        if self.ep is not None:
            self.ep.stop()
        return [i for rec in self.recs for i in ids(rec)]


def restarted_while_another_query_runs(spark, tmp_path, new: bool) -> None:
    """Two queries in one session: ``steady`` runs throughout while the other is stopped and started
    again from its checkpoint three times, each stopped run's end held back by the gate."""
    session = spark.newSession()
    register(session)
    gate = Gate()
    session.streams.addListener(gate)  # before rs_spark's: it holds back what rs_spark's listener sees
    try:
        steady = Recorder(UNBOUNDED)
        other = rs_spark.write_stream(
            ids_source(session, "steady", tmp_path),
            steady,
            checkpoint=str(tmp_path / "steady.ck"),
            trigger=RESTART_TRIGGER,
            query_name="steady",
        )
        restarted = Restarted(session, tmp_path, "new_each_run" if new else "same_served", gate, new=new)
        restarted.start()
        for _ in range(3):
            restarted.restart()
            assert other.isActive, f"the query that was not restarted ended: {other.exception()}"
        # Any handle finds the current run's state: here one from the session's query manager.
        handle = session.streams.get(restarted.q.id)
        assert rs_spark.sink_state(handle).run_id == str(restarted.q.runId)
        if new:
            assert rs_spark.sink_state(handle).hub is restarted.hubs[-1]
        got = restarted.stop()
        assert got == list(range(len(got))), f"{restarted.name}: ids not contiguous from 0"
        other.stop()
        assert steady.wait_done(60).completed
        assert ids(steady) == list(range(len(steady.items)))
    finally:
        for q in session.streams.active:
            q.stop()
        session.streams.removeListener(gate)


def test_a_query_restarted_from_its_checkpoint_in_the_same_driver_with_a_new_subscriber_each_run(spark, tmp_path):
    restarted_while_another_query_runs(spark, tmp_path, new=True)


def test_a_query_restarted_from_its_checkpoint_in_the_same_driver_into_one_served_subscriber(spark, tmp_path):
    restarted_while_another_query_runs(spark, tmp_path, new=False)


def failing_once(df, flag: str):
    """``df`` through a UDF that raises once, at the first row it sees while the file ``flag`` exists
    (it removes the file, so the run restarted from the checkpoint passes)."""
    import os

    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    @F.udf(LongType())
    def checked(i):
        if os.path.exists(flag):
            try:
                os.remove(flag)
            except FileNotFoundError:  # another task took the failure
                return i
            raise ValueError(f"injected failure at id {i}")
        return i

    return df.select(checked("id").alias("id"), "name")


def test_keep_subscriber_on_abort_the_same_subscriber_gets_every_row_once_in_order_across_a_failed_batch(
    spark, tmp_path
):
    from pyspark.errors import StreamingQueryException

    flag, ck = str(tmp_path / "fail-now"), str(tmp_path / "ck")
    rec = Recorder(UNBOUNDED)

    def run():
        return rs_spark.write_stream(
            failing_once(ids_source(spark, "kept", tmp_path), flag),
            rec,
            checkpoint=ck,
            trigger=TRIGGER,
            options={"keepSubscriberOnAbort": "5min"},
        )

    q = run()
    delivered_more(rec, 100)
    open(flag, "w").close()
    with pytest.raises(StreamingQueryException, match="injected failure"):
        q.awaitTermination(120)
    hub = rs_spark.sink_state(q).hub
    wait_until(lambda: hub.kept, "the hub to keep the Subscriber after the failure")
    assert not rec.done.is_set(), f"the kept Subscriber got a terminal signal: {rec.error!r}"
    failed_at = len(rec.items)
    q = run()  # the same Subscriber: write_stream takes up the kept hub
    assert rs_spark.sink_state(q).hub is hub and not hub.kept
    delivered_more(rec, failed_at + 100)
    q.stop()
    assert rec.wait_done(60).completed and rec.error is None
    got = ids(rec)
    assert got == list(range(len(got))), "ids not contiguous from 0: a row lost or delivered twice"
    assert rec.batch_ids == sorted(rec.batch_ids)


def test_keep_subscriber_on_abort_needs_a_checkpoint(spark, tmp_path):
    from rs_spark.spark.options import OptionError

    with pytest.raises(OptionError, match="keepSubscriberOnAbort .* pass checkpoint="):
        rs_spark.write_stream(ids_source(spark, "x", tmp_path), Recorder(), options={"keepSubscriberOnAbort": "true"})


def test_a_kept_subscriber_is_taken_up_only_by_the_run_restarted_from_its_checkpoint():
    from rs_spark.delivery import DeliveryHub
    from rs_spark.spark.sink.run_end import RunEnd, take_kept
    from rs_spark.spark.sink.state import SinkState

    rec = Recorder()
    hub = DeliveryHub(rec)
    endpoint = hub.serve()
    try:
        end = RunEnd(
            SinkState("q", "run-1", hub, {}), endpoint, rec, end_on_stop=True, keep=60.0, checkpoint="/ck/a", folders=[]
        )
        end("ValueError: boom")  # the run failed
        assert hub.kept and not rec.done.is_set()
        with pytest.raises(ValueError, match="checkpoint '/ck/a', not '/ck/b'"):
            take_kept(rec, "/ck/b")
        assert take_kept(Recorder(), "/ck/a") is None  # another Subscriber is not kept
        assert take_kept(rec, "/ck/a") == (hub, endpoint) and not hub.kept
        assert take_kept(rec, "/ck/a") is None  # taken once
    finally:
        hub.finish()
        hub.stop()
