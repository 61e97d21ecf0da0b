"""spark.readStream.format("reactive") with real SparkSessions: demand, replay, lifecycle, errors."""

from __future__ import annotations

import json
import uuid

import pytest
from pyspark.errors import StreamingQueryException

from rs_spark.spark.options import OptionError
from rs_spark.spark.source.options import SourceOptions

from ..waits import wait_until
from .publishers import SCHEMA
from .queries import count, wait_for_count, wait_for_rows

P = "tests.spark.publishers"


def _stream(spark, factory, schema=SCHEMA, **options):
    r = spark.readStream.format("reactive")
    if schema:
        r = r.schema(schema)
    r = r.option("publisher", f"{P}:{factory}").option("pollTimeout", "200ms")
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load()


def _name():
    return "q_" + uuid.uuid4().hex[:8]


def _run_to_memory(df, spark, trigger=None):
    name = _name()
    w = df.writeStream.format("memory").queryName(name)
    if trigger:
        w = w.trigger(**trigger)
    q = w.start()
    return q, name


def _error_text(exc: BaseException) -> str:
    return f"{exc}\n{getattr(exc, 'desc', '')}\n{getattr(exc, 'stackTrace', '')}"


def test_micro_batches_follow_max_records_per_trigger_and_deliver_everything_once(spark):
    df = _stream(spark, "counter", **{"publisher.count": 1000, "maxRecordsPerTrigger": 300})
    q, name = _run_to_memory(df, spark)
    try:
        q.processAllAvailable()
        rows = spark.sql(f"select id, name, price from {name} order by id").collect()
        sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
        src = q.lastProgress["sources"][0]
    finally:
        q.stop()
    assert [r.id for r in rows] == list(range(1000))
    assert rows[7].name == "r-7" and rows[7].price == 3.5
    assert sizes == [300, 300, 300, 100]
    assert (
        json.loads(src["endOffset"]) == {"v": 1, "offset": 1000}
        if isinstance(src["endOffset"], str)
        else src["endOffset"] == {"v": 1, "offset": 1000}
    )


def test_memory_bound_buffered_plus_requested_never_exceeds_max_buffered_records(spark):
    df = _stream(spark, "endless", **{"maxRecordsPerTrigger": 500, "maxBufferedRecords": 800})
    q, name = _run_to_memory(df, spark)
    try:
        wait_for_rows(q, batches=4)
        progress = list(q.recentProgress)
    finally:
        q.stop()
    seen = [p["sources"][0]["latestOffset"] for p in progress if p["sources"][0].get("latestOffset")]
    assert seen, "no metrics reported"
    for m in seen:
        m = json.loads(m) if isinstance(m, str) else m
        assert m["bufferedElements"] + m["outstandingDemand"] <= 800
    assert all(p["numInputRows"] <= 500 for p in progress)


def test_trigger_available_now_reads_a_finite_publisher_and_stops(spark):
    df = _stream(spark, "counter", **{"publisher.count": 250, "maxRecordsPerTrigger": 100})
    q, name = _run_to_memory(df, spark, trigger={"availableNow": True})
    assert q.awaitTermination(120)
    assert spark.sql(f"select count(*) c, count(distinct id) d from {name}").first() == (250, 250)


def test_trigger_once_runs_one_batch(spark):
    df = _stream(spark, "counter", **{"publisher.count": 50})
    q, name = _run_to_memory(df, spark, trigger={"once": True})
    assert q.awaitTermination(120)
    assert spark.sql(f"select count(*) from {name}").first()[0] <= 50


def test_record_batch_publisher_is_split_by_rows(spark):
    df = _stream(
        spark, "arrow_batches", **{"publisher.batches": 4, "publisher.rows": 1000, "maxRecordsPerTrigger": 1500}
    )
    q, name = _run_to_memory(df, spark)
    try:
        q.processAllAvailable()
        sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    finally:
        q.stop()
    assert sum(sizes) == 4000 and max(sizes) <= 1500
    assert spark.sql(f"select count(distinct id) from {name}").first()[0] == 4000


def test_publisher_error_fails_the_query_with_its_type_and_message(spark):
    df = _stream(spark, "failing", **{"publisher.count": 5})
    q, name = _run_to_memory(df, spark)
    with pytest.raises(StreamingQueryException) as ei:
        q.awaitTermination(120)
    text = _error_text(ei.value)
    assert "KeyError" in text and "sensor 5 went offline" in text
    # records received before the error were delivered first
    assert spark.sql(f"select count(*) from {name}").first()[0] == 5


def test_spec_1_1_publisher_sending_more_than_requested_fails_the_query_naming_rule_and_offset(spark):
    df = _stream(spark, "overshoot", **{"maxRecordsPerTrigger": 10})
    q, _ = _run_to_memory(df, spark)
    with pytest.raises(StreamingQueryException) as ei:
        q.awaitTermination(120)
    text = _error_text(ei.value)
    assert "rule 1.1" in text and "offset" in text


def test_failfast_names_offset_and_field(spark):
    df = _stream(spark, "malformed")
    q, _ = _run_to_memory(df, spark)
    with pytest.raises(StreamingQueryException) as ei:
        q.awaitTermination(120)
    text = _error_text(ei.value)
    assert "offset 3" in text and "'price'" in text and "DROPMALFORMED" in text


def test_permissive_keeps_malformed_records_as_text(spark):
    df = _stream(spark, "malformed", schema=SCHEMA + ", _corrupt_record STRING", mode="PERMISSIVE")
    q, name = _run_to_memory(df, spark)
    try:
        q.processAllAvailable()
        bad = spark.sql(f"select _corrupt_record from {name} where _corrupt_record is not null").collect()
        total = spark.sql(f"select count(*) from {name}").first()[0]
    finally:
        q.stop()
    assert total == 10 and len(bad) == 2 and '"bad"' in bad[0][0]


def test_dropmalformed_drops_and_reports_the_count(spark):
    df = _stream(spark, "malformed", mode="DROPMALFORMED")
    q, name = _run_to_memory(df, spark)
    try:
        q.processAllAvailable()
        ids = [r.id for r in spark.sql(f"select id from {name} order by id").collect()]
        lo = q.lastProgress["sources"][0]["latestOffset"]
    finally:
        q.stop()
    lo = json.loads(lo) if isinstance(lo, str) else lo
    assert ids == [0, 1, 2, 4, 5, 6, 8, 9]
    assert lo["droppedRecords"] == 2


def test_num_partitions_splits_each_micro_batch(spark):
    df = _stream(spark, "counter", **{"publisher.count": 90, "numPartitions": 3, "maxRecordsPerTrigger": 90})
    seen = []

    def each(batch_df, batch_id):
        if batch_df.count():
            seen.append(batch_df.rdd.getNumPartitions())

    q = df.writeStream.foreachBatch(each).start()
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    assert seen == [3]


def test_schema_declared_by_the_publisher(spark):
    df = spark.readStream.format("reactive").option("publisher", f"{P}:declared").option("pollTimeout", "200ms").load()
    assert [f.name for f in df.schema.fields] == ["k", "v"]


def test_batch_read_of_a_finite_publisher(spark):
    df = (
        spark.read.format("reactive")
        .schema(SCHEMA)
        .option("publisher", f"{P}:counter")
        .option("publisher.count", "123")
        .load()
    )
    rows = df.orderBy("id").collect()
    assert len(rows) == 123 and rows[-1].id == 122


def test_restart_from_checkpoint_replays_the_uncommitted_batch_identically(spark, tmp_path):
    ckpt, logdir = str(tmp_path / "ckpt"), str(tmp_path / "log")
    batches = {}

    def run(run_tag, fail_on):
        df = _stream(
            spark,
            "counter",
            **{"publisher.count": 1000, "publisher.run": run_tag, "maxRecordsPerTrigger": 100, "logPath": logdir},
        )

        def each(batch_df, batch_id):
            rows = sorted((r.id, r.name) for r in batch_df.collect())
            batches.setdefault(batch_id, []).append(rows)
            if batch_id == fail_on:
                raise RuntimeError(f"sink failure in batch {batch_id}")

        q = df.writeStream.foreachBatch(each).option("checkpointLocation", ckpt).start()
        return q

    q1 = run("first", fail_on=2)
    with pytest.raises(StreamingQueryException, match="sink failure in batch 2"):
        q1.awaitTermination(120)
    q2 = run("second", fail_on=-1)
    try:
        wait_until(lambda: 4 in batches, "micro-batch 4 of the restarted query", 60)
    finally:
        q2.stop()
    first_try, replay = batches[2][0], batches[2][1]
    assert replay == first_try, "the uncommitted batch must be replayed identically"
    assert all(name.startswith("first-") for _, name in replay)
    # new records after the replay come from the new subscription and continue the offsets
    assert all(name.startswith("second-") for _, name in batches[3][0])


def test_restart_without_log_fails_on_data_loss_with_advice(spark, tmp_path):
    ckpt = str(tmp_path / "ckpt")

    def run(fail_on, **extra):
        df = _stream(spark, "counter", **{"publisher.count": 1000, "maxRecordsPerTrigger": 100, **extra})

        def each(batch_df, batch_id):
            if batch_id == fail_on:
                raise RuntimeError("sink failure")

        return df.writeStream.foreachBatch(each).option("checkpointLocation", ckpt).start()

    q1 = run(fail_on=1)
    with pytest.raises(StreamingQueryException, match="sink failure"):
        q1.awaitTermination(120)
    q2 = run(fail_on=-1)
    with pytest.raises(StreamingQueryException) as ei:
        q2.awaitTermination(120)
    text = _error_text(ei.value)
    assert "cannot be replayed" in text and "logPath" in text and "failOnDataLoss" in text


def test_unknown_option_is_refused_with_a_suggestion():
    with pytest.raises(OptionError, match="Did you mean 'maxRecordsPerTrigger'"):
        SourceOptions.parse({"publisher": "a:b", "maxRecordPerTrigger": "5"})
    with pytest.raises(OptionError, match="exactly one of option 'publisher'"):
        SourceOptions.parse({})
    with pytest.raises(OptionError, match="minRecordsPerTrigger=10 is larger"):
        SourceOptions.parse({"publisher": "a:b", "maxRecordsPerTrigger": "5", "minRecordsPerTrigger": "10"})
    o = SourceOptions.parse(
        {
            "publisher": "a:b",
            "MAXRECORDSPERTRIGGER": "5",
            "publisher.anything": "x",
            "pollTimeout": "2s",
            "maxTriggerDelay": "1 min",
        }
    )
    assert o.max_records_per_trigger == 5 and o.poll_timeout == 2.0 and o.max_trigger_delay == 60.0


def test_bad_factory_is_a_clear_error_at_load_time(spark):
    with pytest.raises(StreamingQueryException) as ei:
        (
            spark.readStream.format("reactive")
            .schema(SCHEMA)
            .option("publisher", "no_such_module:f")
            .load()
            .writeStream.format("memory")
            .queryName(_name())
            .start()
            .awaitTermination(60)
        )
    assert "cannot import module 'no_such_module'" in _error_text(ei.value)


def test_query_stop_cancels_the_subscription(spark, tmp_path):
    marker = tmp_path / "cancelled"
    df = _stream(spark, "cancel_marker", **{"publisher.marker": str(marker), "maxRecordsPerTrigger": 50})
    q, _ = _run_to_memory(df, spark)
    try:
        wait_for_rows(q)
    finally:
        q.stop()
    # stopping the query must cancel the subscription, which closes the generator
    wait_until(marker.exists, "the generator closed after query.stop() (the subscription cancelled)", 30)


def test_min_records_per_trigger_waits_for_enough_records(spark):
    # 30 records, one every 20 ms: batches wait for 10 records unless 15m pass
    df = _stream(spark, "slow", **{"publisher.count": 30, "publisher.interval_ms": 20, "minRecordsPerTrigger": 10})
    q, name = _run_to_memory(df, spark)
    try:
        wait_for_count(spark, name, 30)

        def sizes() -> list[int]:
            return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]

        # The memory sink shows a batch's rows before Spark records that batch's progress.
        wait_until(lambda: sum(sizes()) >= 30, lambda: f"progress of every batch: {sizes()}")
        got = sizes()
    finally:
        q.stop()
    assert sum(got) == 30 and min(got) >= 10, got


def test_max_trigger_delay_releases_a_smaller_batch(spark):
    df = _stream(
        spark,
        "slow",
        **{"publisher.count": 6, "publisher.interval_ms": 20, "minRecordsPerTrigger": 100, "maxTriggerDelay": "1s"},
    )
    q, name = _run_to_memory(df, spark)
    try:
        wait_for_count(spark, name, 6)
        total = count(spark, name)
    finally:
        q.stop()
    assert total == 6


def test_slow_publisher_yields_small_batches_instead_of_stalling(spark):
    df = _stream(spark, "slow", **{"publisher.count": 20, "publisher.interval_ms": 50, "maxRecordsPerTrigger": 1000})
    q, name = _run_to_memory(df, spark)
    try:
        wait_for_count(spark, name, 20)
        sizes = wait_until(
            lambda: (s := [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]) and sum(s) >= 20 and s,
            "the progress of every batch",  # recorded after the memory sink shows the batch's rows
        )
    finally:
        q.stop()
    assert sum(sizes) == 20 and len(sizes) >= 2 and max(sizes) < 20, sizes
