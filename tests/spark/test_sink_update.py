"""Output modes into a Subscriber with real Spark: ``update`` (through foreachBatch, rs_spark.spark.sink.each_batch)
and ``complete`` (format("reactive")), on a windowed count with a watermark and late rows
(tests/spark/event_publishers.py: five micro-batches of four rows)."""

from __future__ import annotations

import os

import pytest
from pyspark.errors import IllegalArgumentException, StreamingQueryException
from pyspark.sql import functions as F

import rs_spark
from rs_spark.examples.stopping import stop_when_idle
from rs_spark.jvm import jar_path
from rs_spark.spark.jvm import EXTENSIONS, with_shim
from rs_spark.spark.sink.each_batch import Route, deliver_each_batch, route
from rs_spark.spark.sink.mode_refusal import ADVICE, explain

from ..subscribers import UNBOUNDED, Recorder
from ..waits import wait_until
from .event_publishers import SCHEMA

AVAILABLE_NOW = {"availableNow": True}

# What each micro-batch of the windowed count updates: (window start, key, count).
UPDATES = [
    {(0, "a", 3), (0, "b", 1)},
    {(0, "a", 4), (0, "b", 2), (10, "a", 1), (10, "b", 1)},
    {(0, "b", 3), (10, "a", 2), (20, "a", 1), (20, "b", 1)},
    {(0, "a", 5), (10, "b", 2), (20, "a", 2), (40, "a", 1)},  # late against the batch before's watermark only
    {(20, "b", 2), (40, "a", 2)},  # the late rows (7, a) and (16, b) changed no window: the watermark closed theirs
]
FINAL = {(0, "a"): 5, (0, "b"): 3, (10, "a"): 2, (10, "b"): 2, (20, "a"): 2, (20, "b"): 2, (40, "a"): 2}


def events(spark, publisher="events", per_batch=4, **extra):
    r = (
        spark.readStream.format("reactive")
        .schema(SCHEMA)
        .option("publisher", f"tests.spark.event_publishers:{publisher}")
        .option("maxRecordsPerTrigger", str(per_batch))
    )
    for k, v in extra.items():
        r = r.option(k, str(v))
    return r.load()


def windowed_counts(spark):
    ev = events(spark).withColumn("ts", F.timestamp_seconds("t")).withWatermark("ts", "5 seconds")
    counts = ev.groupBy(F.window("ts", "10 seconds"), "key").count()
    return counts.select(F.col("window.start").cast("long").alias("w"), "key", "count")


def by_batch(rec):
    """The rows each micro-batch delivered, as sets of (w, key, count), in batchId order; the ids increase."""
    assert rec.batch_ids == sorted(rec.batch_ids), f"rows arrived out of batchId order: {rec.batch_ids}"
    batches: dict[int, list] = {}
    for bid, r in zip(rec.batch_ids, rec.items, strict=True):
        batches.setdefault(bid, []).append((r["w"], r["key"], r["count"]))
    for bid, rows in batches.items():
        assert len(rows) == len(set(rows)), f"micro-batch {bid} delivered a row twice: {rows}"
    return [set(batches[b]) for b in sorted(batches)]


def run(q):
    assert q.awaitTermination(120), "the query did not end within 120 s"
    assert q.exception() is None, q.exception()
    return q


@pytest.mark.parametrize(
    "mode, expected",
    [
        (None, Route.FORMAT),
        ("append", Route.FORMAT),
        ("complete", Route.FORMAT),
        ("Complete", Route.FORMAT),
        ("update", Route.EACH_BATCH),
        ("UPDATE", Route.EACH_BATCH),
    ],
)
def test_update_mode_goes_through_foreach_batch_the_others_through_the_format(mode, expected):
    assert route(mode) is expected


def test_an_unknown_output_mode_is_refused_naming_the_three():
    with pytest.raises(ValueError, match="output_mode='upsert': use one of append, update, complete"):
        route("upsert")


def test_update_mode_delivers_each_windows_updates_once_in_batch_order_and_the_final_value(spark, tmp_path):
    rec = Recorder()
    q = rs_spark.write_stream(
        windowed_counts(spark), rec, checkpoint=str(tmp_path / "ck"), trigger=AVAILABLE_NOW, output_mode="update"
    )
    run(q)
    assert rec.wait_done(30).completed and rec.error is None
    assert by_batch(rec) == UPDATES
    last = {(r["w"], r["key"]): r["count"] for r in rec.items}  # an upsert by the grouping key
    assert last == FINAL
    stats = rs_spark.sink_state(q).stats()
    assert stats is not None and stats.delivered == 16 and stats.buffered == 0


def test_complete_mode_delivers_the_whole_result_each_batch(spark, tmp_path):
    rec = Recorder()
    counts = events(spark).groupBy("key").count()
    run(
        rs_spark.write_stream(
            counts, rec, checkpoint=str(tmp_path / "ck"), trigger=AVAILABLE_NOW, output_mode="complete"
        )
    )
    assert rec.wait_done(30).completed
    assert by_key_per_batch(rec) == COMPLETE


COMPLETE = [
    {("a", 3), ("b", 1)},
    {("a", 5), ("b", 3)},
    {("a", 7), ("b", 5)},
    {("a", 10), ("b", 6)},
    {("a", 12), ("b", 8)},
]
"""What each micro-batch of a count per key (no window) sends in complete mode: the whole result."""


def by_key_per_batch(rec):
    per_batch: dict[int, list] = {}
    for bid, r in zip(rec.batch_ids, rec.items, strict=True):
        per_batch.setdefault(bid, []).append((r["key"], r["count"]))
    assert all(len(rows) == len(set(rows)) for rows in per_batch.values()), per_batch
    return [set(per_batch[b]) for b in sorted(per_batch)]


def test_complete_mode_into_a_served_subscriber_through_option_endpoint(spark, tmp_path):
    rec = Recorder()
    ep = rs_spark.serve_sink(rec)
    try:
        q = (
            events(spark)
            .groupBy("key")
            .count()
            .writeStream.format("reactive")
            .option("endpoint", ep.address)
            .outputMode("complete")
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        run(q)
        ep.finish()
        assert rec.wait_done(10).completed
    finally:
        ep.stop()
    assert by_key_per_batch(rec) == COMPLETE


def test_a_query_restarted_after_failing_mid_batch_delivers_nothing_twice(spark, tmp_path):
    """The first Subscriber raises in on_next at the second row of micro-batch 2 (rule 2.13): the query fails
    there. Restarted from its checkpoint with the same ledger and a new Subscriber, Spark runs batch 2 again
    and the hub resumes it at the row that was not delivered."""
    ck, ledger = str(tmp_path / "ck"), str(tmp_path / "ledger.json")
    first = Recorder(raise_at=7)  # rows 0-5: batches 0 and 1; row 6 is the first of batch 2
    q = rs_spark.write_stream(
        windowed_counts(spark), first, checkpoint=ck, ledger=ledger, trigger=AVAILABLE_NOW, output_mode="update"
    )
    with pytest.raises(
        StreamingQueryException, match="subscriber refuses element 7 in on_next at micro-batch 2, row 1"
    ):
        q.awaitTermination(120)
    assert len(first.items) == 7 and not first.completed  # rule 2.13: it cancelled, no signal follows
    assert rs_spark.sink_state(q).hub.ledger.rows == 1  # batch 2's row 1 raised: not counted as delivered

    second = Recorder()
    run(rs_spark.write_stream(
        windowed_counts(spark), second, checkpoint=ck, ledger=ledger, trigger=AVAILABLE_NOW, output_mode="update"
    ))  # fmt: skip
    assert second.wait_done(30).completed
    assert set(second.batch_ids) == {2, 3, 4} and len(second.items) == 9  # batch 2's 3 rows not delivered, 4, 2

    both = Recorder()
    both.items, both.batch_ids = first.items + second.items, first.batch_ids + second.batch_ids
    assert by_batch(both) == UPDATES


def test_a_slow_subscriber_paces_an_update_query(spark, tmp_path):
    """A Subscriber that requested 5 rows holds the query in micro-batch 0 (20 updated rows) until it asks for
    more: no batch completes, nothing beyond its demand is delivered."""
    rec = Recorder(batch=5, refill=False)
    counts = events(spark, "keys", per_batch=20, **{"publisher.count": 40}).groupBy("key").count()
    q = rs_spark.write_stream(counts, rec, checkpoint=str(tmp_path / "ck"), trigger=AVAILABLE_NOW, output_mode="update")
    rec.wait_for(5)
    hub = rs_spark.sink_state(q).hub
    assert hub is not None
    assert hub.outstanding == 0 and len(rec.items) == 5
    assert q.recentProgress == []  # micro-batch 0 waits for the Subscriber
    rec.request(UNBOUNDED)
    run(q)
    assert rec.wait_done(30).completed and rec.unrequested == 0
    assert sorted(r["key"] for r in rec.items) == sorted(f"k{i}" for i in range(40))
    assert rec.batch_ids[:20] == [0] * 20


def test_plain_pyspark_update_mode_into_a_served_subscriber_through_deliver_each_batch(spark, tmp_path):
    rec = Recorder()
    ep = rs_spark.serve_sink(rec, ledger=str(tmp_path / "hub.json"))
    try:
        q = (
            windowed_counts(spark)
            .writeStream.foreachBatch(deliver_each_batch(ep.address))
            .outputMode("update")
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        run(q)
        assert by_batch(rec) == UPDATES
        ep.finish()
        assert rec.wait_done(10).completed
    finally:
        ep.stop()


@pytest.mark.parametrize(
    "text, advised",
    [
        (None, False),
        ("", False),
        ("requirement failed: reactive does not support Update mode.", True),
        ("[STREAM_FAILED] Query [id = x] terminated with exception: requirement failed: reactive does not support "
         "Update mode. SQLSTATE: XXKST", True),
        ("requirement failed: Reactive does not support Update mode.", True),  # the format as the user typed it
        ("requirement failed: memory does not support Complete mode.", False),
        ("requirement failed: myreactive does not support Update mode.", False),
    ],
)  # fmt: skip
def test_the_advice_follows_sparks_refusal_of_update_mode_only(text, advised):
    assert (explain(text) == ADVICE) is advised


@pytest.mark.parametrize("fmt", ["reactive", "Reactive"])
def test_plain_format_reactive_in_update_mode_is_refused_at_start_saying_what_to_use(spark, tmp_path, fmt):
    """local_session's session extension (rsspark.spark.ReactiveExtensions) refuses the query as start() analyses
    it: nothing starts, the served Subscriber gets nothing. Without it Spark would start the query and fail it at
    its first micro-batch (tests/test_discovery.py: a plain session)."""
    rec = Recorder()
    ep = rs_spark.serve_sink(rec)
    name = f"plain_update_{fmt}"
    writer = (
        windowed_counts(spark)
        .writeStream.format(fmt)
        .option("endpoint", ep.address)
        .outputMode("update")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .queryName(name)
    )
    try:
        with pytest.raises(IllegalArgumentException) as refused:
            writer.start()
        said = str(refused.value)
        assert said.startswith(f"rs_spark refused to start query '{name}' (checkpoint ")
        assert f"which writes format('{fmt}') in output mode update. {ADVICE}." in said
        assert f"'requirement failed: {fmt} does not support Update mode'" in said
        assert name not in [q.name for q in spark.streams.active]
        assert rec.items == [] and not rec.done.is_set()
    finally:
        ep.stop()


def test_the_session_extension_gives_the_same_advice_as_the_listener(spark):
    assert spark._jvm.rsspark.spark.ReactiveExtensions.advice() == ADVICE


def test_local_session_conf_gets_the_shim_and_its_extension_after_the_callers_own():
    shim = jar_path()
    conf = with_shim({"spark.jars": "/opt/a.jar", "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension"})
    assert conf["spark.jars"] == f"/opt/a.jar,{shim}"
    assert conf["spark.sql.extensions"] == f"io.delta.sql.DeltaSparkSessionExtension,{EXTENSIONS}"
    assert with_shim(conf) == conf  # given twice (the shim as file:, too): once
    assert with_shim({"spark.jars": f"file:{shim}"})["spark.jars"] == f"file:{shim}"
    assert with_shim({}) == {"spark.jars": shim, "spark.sql.extensions": EXTENSIONS}


def test_update_mode_on_a_processing_time_trigger_then_a_stop_completes_the_subscriber(spark, tmp_path):
    rec = Recorder()
    q = rs_spark.write_stream(
        windowed_counts(spark),
        rec,
        checkpoint=str(tmp_path / "ck"),
        trigger={"processingTime": "200 milliseconds"},
        output_mode="update",
    )
    rec.wait_for(16)
    assert stop_when_idle(q)  # between micro-batches: none is cut short
    assert rec.wait_done(30).completed and rec.error is None
    assert by_batch(rec) == UPDATES


def test_update_mode_into_a_served_subscriber_by_its_address_ends_it_when_the_query_stops(spark, tmp_path):
    rec = Recorder()
    ep = rs_spark.serve_sink(rec)
    try:
        q = rs_spark.write_stream(
            windowed_counts(spark),
            ep.address,
            checkpoint=str(tmp_path / "ck"),
            trigger=AVAILABLE_NOW,
            output_mode="update",
        )
        run(q)
        assert rec.wait_done(30).completed  # write_stream sent the served hub "end"
        assert by_batch(rec) == UPDATES
        assert rs_spark.sink_state(q).hub is None
    finally:
        ep.stop()


def _broken_at_25(t):
    if t == 25:
        raise ValueError("sensor 25 is broken")
    return t


def test_a_micro_batch_that_fails_delivers_nothing_and_the_subscriber_gets_the_cause(spark, tmp_path):
    rec = Recorder()
    ev = events(spark).withColumn("t", F.udf(_broken_at_25, "long")("t")).withColumn("ts", F.timestamp_seconds("t"))
    counts = ev.withWatermark("ts", "5 seconds").groupBy(F.window("ts", "10 seconds"), "key").count()
    counts = counts.select(F.col("window.start").cast("long").alias("w"), "key", "count")
    q = rs_spark.write_stream(counts, rec, checkpoint=str(tmp_path / "ck"), trigger=AVAILABLE_NOW, output_mode="update")
    with pytest.raises(StreamingQueryException, match="sensor 25 is broken"):
        q.awaitTermination(120)
    assert rec.wait_done(30).error is not None and "sensor 25 is broken" in str(rec.error)
    assert by_batch(rec) == UPDATES[:2]  # batch 2 (the row t=25) failed: none of its rows was delivered
    assert rs_spark.sink_state(q).hub.ledger.batch_id == 1


def _broken_while(t, flag):
    if t == 25 and os.path.exists(flag):
        raise ValueError("sensor 25 is broken")
    return t


def test_a_kept_subscriber_gets_every_update_once_across_a_failure_and_a_restart(spark, tmp_path):
    """Option keepSubscriberOnAbort: micro-batch 2 fails while a flag file exists; the Subscriber is kept, the
    query restarted from its checkpoint with the same Subscriber (the flag removed) goes on after batch 1."""
    ck, flag = str(tmp_path / "ck"), tmp_path / "broken"
    flag.write_text("")
    rec = Recorder()

    def start():
        ev = events(spark).withColumn("t", F.udf(_broken_while, "long")("t", F.lit(str(flag))))
        counts = ev.withColumn("ts", F.timestamp_seconds("t")).withWatermark("ts", "5 seconds")
        counts = counts.groupBy(F.window("ts", "10 seconds"), "key").count()
        counts = counts.select(F.col("window.start").cast("long").alias("w"), "key", "count")
        return rs_spark.write_stream(
            counts,
            rec,
            checkpoint=ck,
            trigger=AVAILABLE_NOW,
            output_mode="update",
            options={"keepSubscriberOnAbort": "10min"},
        )

    q = start()
    with pytest.raises(StreamingQueryException, match="sensor 25 is broken"):
        q.awaitTermination(120)
    wait_until(lambda: rs_spark.sink_state(q).hub.kept, "the Subscriber kept after the failure")
    assert not rec.done.is_set() and len(rec.items) == 6
    flag.unlink()
    run(start())
    assert rec.wait_done(30).completed and rec.error is None
    assert by_batch(rec) == UPDATES
