"""The sink with real SparkSessions: writeStream.format("reactive") into Subscribers.

Each query reads the reactive source (a finite counter publisher, 1000 records per micro-batch)
and writes into a Subscriber in this process (rs_spark.write_stream), served elsewhere
(rs_spark.serve_sink + option endpoint), or built per task (option subscriber)."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException

import rs_spark
from rs_spark.delivery import BatchAborted, QueryFailed
from rs_spark.spark.options import OptionError
from rs_spark.spark.sink.options import SinkOptions

from ..subscribers import Recorder

SCHEMA = "id LONG, name STRING, price DOUBLE"


def source(spark, count=3000, per_batch=1000, publisher="counter", log=None, **extra):
    r = (
        spark.readStream.format("reactive")
        .schema(SCHEMA)
        .option("publisher", f"tests.spark.publishers:{publisher}")
        .option("publisher.count", str(count))
        .option("maxRecordsPerTrigger", str(per_batch))
    )
    if log:
        r = r.option("logPath", log)
    for k, v in extra.items():
        r = r.option(k, str(v))
    return r.load()


AVAILABLE_NOW = {"availableNow": True}


def test_rows_arrive_in_order_exactly_once_then_on_complete(spark, tmp_path):
    rec = Recorder()
    q = rs_spark.write_stream(source(spark), rec, checkpoint=str(tmp_path / "ck"), trigger=AVAILABLE_NOW)
    assert q.awaitTermination(120), "the query did not end within 120 s"
    assert q.exception() is None
    assert rec.done.wait(30) and rec.completed and rec.error is None
    assert [r["id"] for r in rec.items] == list(range(3000))
    assert rec.items[7] == {"id": 7, "name": "r-7", "price": 3.5}
    # Each element's micro-batch is readable on the subscription: 3 batches of 1000, in order.
    assert rec.batch_ids == [0] * 1000 + [1] * 1000 + [2] * 1000
    stats = rs_spark.sink_state(q).stats()
    assert stats is not None and (stats.batches_delivered, stats.delivered) == (3, 3000)


def test_a_named_query_delivers_too(spark, tmp_path):
    # Spark passes DataStreamWriter.queryName to the sink as option 'queryName'.
    rec = Recorder()
    q = rs_spark.write_stream(
        source(spark, count=20, per_batch=20),
        rec,
        checkpoint=str(tmp_path / "ck"),
        trigger=AVAILABLE_NOW,
        query_name="named_sink_query",
    )
    assert q.awaitTermination(120), "the query did not end within 120 s"
    assert q.exception() is None and q.name == "named_sink_query"
    assert rec.done.wait(30) and [r["id"] for r in rec.items] == list(range(20))


def test_demand_paces_the_query_subscriber_requesting_10_sees_at_most_10_outstanding(spark, tmp_path):
    rec = Recorder(batch=10)
    q = rs_spark.write_stream(source(spark, count=2000), rec, checkpoint=str(tmp_path / "ck"), trigger=AVAILABLE_NOW)
    assert q.awaitTermination(120), "the query did not end within 120 s"
    assert rec.done.wait(30) and rec.completed
    assert len(rec.items) == 2000 and rec.max_outstanding == 10
    stats = rs_spark.sink_state(q).stats()
    assert stats is not None and stats.buffered == 0


def test_record_batch_subscriber_gets_arrow_with_batch_id_metadata(spark, tmp_path):
    rec = Recorder(batch=1)
    q = rs_spark.write_stream(
        source(spark, count=2500), rec, elements="batches", checkpoint=str(tmp_path / "ck"), trigger=AVAILABLE_NOW
    )
    assert q.awaitTermination(120), "the query did not end within 120 s"
    assert rec.done.wait(30) and rec.completed
    assert all(isinstance(b, pa.RecordBatch) for b in rec.items)
    table = pa.Table.from_batches(rec.items)
    assert table.column("id").to_pylist() == list(range(2500))
    ids = [int(b.schema.metadata[b"rs_spark.batch_id"]) for b in rec.items]
    assert ids == sorted(ids) and set(ids) == {0, 1, 2}


def test_tuples_elements(spark, tmp_path):
    rec = Recorder()
    q = rs_spark.write_stream(
        source(spark, count=5, per_batch=5),
        rec,
        elements="tuples",
        checkpoint=str(tmp_path / "ck"),
        trigger=AVAILABLE_NOW,
    )
    assert q.awaitTermination(120), "the query did not end within 120 s"
    assert rec.done.wait(30)
    assert rec.items == [(i, f"r-{i}", i * 0.5) for i in range(5)]


def test_restart_from_checkpoint_does_not_deliver_a_committed_batch_again(spark, tmp_path):
    """The hub delivered micro-batch 2 but the driver died before Spark recorded the commit
    (simulated by deleting commits/2): the restarted query re-runs batch 2, the hub
    acknowledges it as a duplicate, and the Subscriber sees every row once."""
    rec = Recorder()
    ep = rs_spark.serve_sink(rec)
    try:
        ck, log = str(tmp_path / "ck"), str(tmp_path / "log")

        def run():
            q = (
                source(spark, log=log)
                .writeStream.format("reactive")
                .option("endpoint", ep.address)
                .option("checkpointLocation", ck)
                .trigger(availableNow=True)
                .start()
            )
            assert q.awaitTermination(120), "the query did not end within 120 s"
            assert q.exception() is None

        run()
        assert [r["id"] for r in rec.items] == list(range(3000))
        for name in ("2", ".2.crc"):
            os.remove(os.path.join(ck, "commits", name))
        run()
        # Batch 2 re-ran from the replay log and was not delivered again. (The restarted query's
        # publisher starts over, so AvailableNow then reads new batches 3.. from it.)
        assert rec.batch_ids[:3000] == [0] * 1000 + [1] * 1000 + [2] * 1000
        assert rec.batch_ids.count(2) == 1000 and set(rec.batch_ids[3000:]) <= {3, 4, 5}
        assert [r["id"] for r in rec.items[:3000]] == list(range(3000))
        assert not rec.done.is_set()  # a served Subscriber stays open across query runs
        ep.finish()
        assert rec.done.wait(10) and rec.completed
    finally:
        ep.stop()


def test_query_failure_reaches_the_subscriber_as_on_error_with_the_cause(spark, tmp_path):
    rec = Recorder()
    q = rs_spark.write_stream(
        source(spark, count=10, publisher="failing"),
        rec,
        checkpoint=str(tmp_path / "ck"),
        trigger={"processingTime": "100 milliseconds"},
    )
    with pytest.raises(StreamingQueryException, match="went offline"):
        q.awaitTermination(120)
    assert rec.done.wait(30)
    assert isinstance(rec.error, QueryFailed) and "went offline" in str(rec.error)


def test_query_stop_reaches_the_subscriber_as_on_complete(spark, tmp_path):
    rec = Recorder()
    q = rs_spark.write_stream(
        source(spark, publisher="endless", count=0),
        rec,
        checkpoint=str(tmp_path / "ck"),
        trigger={"processingTime": "100 milliseconds"},
    )
    try:
        rec.wait_for(1000)
    finally:
        q.stop()
    assert rec.done.wait(30) and rec.completed and rec.error is None
    ids = [r["id"] for r in rec.items]
    assert ids == list(range(len(ids)))


def test_subscriber_cancel_stops_the_query_with_a_message_saying_so(spark, tmp_path):
    rec = Recorder(cancel_after=1500)
    q = rs_spark.write_stream(source(spark), rec, checkpoint=str(tmp_path / "ck"), trigger=AVAILABLE_NOW)
    with pytest.raises(StreamingQueryException, match="cancelled its subscription after micro-batch 1, row 499"):
        q.awaitTermination(120)
    assert len(rec.items) == 1500 and rec.signals_after_end == 0


def test_spec_2_13_subscriber_raising_in_on_next_fails_the_query_with_that_error(spark, tmp_path):
    rec = Recorder(raise_at=1234)
    q = rs_spark.write_stream(source(spark), rec, checkpoint=str(tmp_path / "ck"), trigger=AVAILABLE_NOW)
    with pytest.raises(StreamingQueryException, match="subscriber refuses element 1234") as info:
        q.awaitTermination(120)
    assert "rule 2.13" in str(info.value)
    assert len(rec.items) == 1234 and not rec.completed
    assert rs_spark.sink_state(q).hub.ledger.rows == 234  # row 234 of batch 1 raised: not counted as delivered


def test_spec_3_9_subscriber_requesting_zero_gets_on_error_and_the_query_fails_naming_the_rule(spark, tmp_path):
    rec = Recorder(batch=100, bad_request_after=1100)
    q = rs_spark.write_stream(source(spark), rec, checkpoint=str(tmp_path / "ck"), trigger=AVAILABLE_NOW)
    with pytest.raises(StreamingQueryException, match="rule 3.9"):
        q.awaitTermination(120)
    assert isinstance(rec.error, ValueError) and "rule 3.9" in str(rec.error)
    assert len(rec.items) == 1100


def test_subscriber_that_never_requests_fails_the_commit_after_commit_timeout(spark, tmp_path):
    rec = Recorder(batch=0)  # never signals demand
    q = rs_spark.write_stream(
        source(spark, count=10, per_batch=10),
        rec,
        checkpoint=str(tmp_path / "ck"),
        trigger=AVAILABLE_NOW,
        options={"commitTimeout": "2s"},
    )
    with pytest.raises(StreamingQueryException, match="did not take the rows within commitTimeout=2.0 s"):
        q.awaitTermination(120)
    assert rec.items == []


def test_abort_delivers_nothing_of_the_batch_and_signals_on_error(spark, tmp_path):
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    @F.udf(LongType())
    def explode_at_1500(i):
        if i == 1500:
            raise ValueError("bad record 1500")
        return i

    df = source(spark).select(explode_at_1500("id").alias("id"), "name")
    rec = Recorder()
    q = rs_spark.write_stream(df, rec, checkpoint=str(tmp_path / "ck"), trigger=AVAILABLE_NOW)
    with pytest.raises(StreamingQueryException, match="bad record 1500"):
        q.awaitTermination(120)
    assert rec.done.wait(30)
    assert [r["id"] for r in rec.items] == list(range(1000))  # batch 0 only: nothing of batch 1
    assert isinstance(rec.error, (BatchAborted, QueryFailed))


def test_subscriber_factory_runs_per_task_on_executors(spark, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    q = (
        source(spark, count=2000)
        .writeStream.format("reactive")
        .option("subscriber", "tests.spark.subscribers:to_files")
        .option("subscriber.dir", str(out))
        .option("subscriber.batch", "64")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    assert q.awaitTermination(120), "the query did not end within 120 s"
    assert q.exception() is None
    lines = [json.loads(line) for f in sorted(out.iterdir()) for line in f.read_text().splitlines()]
    rows = [x for x in lines if "id" in x]
    assert sorted(r["id"] for r in rows) == list(range(2000))
    assert sum(1 for x in lines if x.get("complete")) == len(list(out.iterdir()))


def test_subscriber_factory_raising_fails_the_query_naming_rule_2_13(spark, tmp_path):
    q = (
        source(spark, count=10)
        .writeStream.format("reactive")
        .option("subscriber", "tests.spark.subscribers:raising")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(StreamingQueryException, match="refuses rows"):
        q.awaitTermination(120)


def test_subscriber_factory_cancelling_fails_the_query_saying_after_how_many(spark, tmp_path):
    q = (
        source(spark, count=10)
        .writeStream.format("reactive")
        .option("subscriber", "tests.spark.subscribers:cancelling")
        .option("subscriber.after", "3")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(StreamingQueryException, match="cancelled its subscription after 3 elements of this task"):
        q.awaitTermination(120)


def test_batch_write_delivers_the_dataframe(spark):
    rec = Recorder()
    ep = rs_spark.serve_sink(rec)
    try:
        df = spark.createDataFrame([(i, f"n{i}") for i in range(100)], "id LONG, name STRING").coalesce(2)
        df.write.format("reactive").option("endpoint", ep.address).mode("append").save()
        assert sorted(r["id"] for r in rec.items) == list(range(100))
        assert not rec.done.is_set()
    finally:
        ep.stop()


def test_big_partitions_are_staged_at_staging_location(spark, tmp_path):
    rec = Recorder()
    staging = tmp_path / "staging"
    q = rs_spark.write_stream(
        source(spark, count=2000),
        rec,
        checkpoint=str(tmp_path / "ck"),
        trigger=AVAILABLE_NOW,
        options={"inlineMaxBytes": "1k", "stagingLocation": str(staging)},
    )
    assert q.awaitTermination(120), "the query did not end within 120 s"
    assert q.exception() is None and rec.done.wait(30)
    assert [r["id"] for r in rec.items] == list(range(2000))
    assert staging.exists() and list(staging.iterdir()) == []  # staged files removed after commit


def test_big_partition_without_staging_location_fails_saying_what_to_set(spark, tmp_path):
    rec = Recorder()
    ep = rs_spark.serve_sink(rec)
    try:
        q = (
            source(spark, count=2000)
            .writeStream.format("reactive")
            .option("endpoint", ep.address)
            .option("inlineMaxBytes", "1k")
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        with pytest.raises(StreamingQueryException, match="set option stagingLocation"):
            q.awaitTermination(120)
        assert rec.items == []
    finally:
        ep.stop()


def test_write_stream_in_local_mode_stages_on_local_disk_and_cleans_up(spark, tmp_path):
    rec = Recorder()
    q = rs_spark.write_stream(source(spark, count=1000), rec, checkpoint=str(tmp_path / "ck"), trigger=AVAILABLE_NOW)
    assert q.awaitTermination(120), "the query did not end within 120 s"
    assert rec.done.wait(30) and len(rec.items) == 1000
    staging = [v for k, v in rs_spark.sink_state(q).options.items() if k == "stagingLocation"]
    assert staging and not os.path.exists(staging[0])


def test_unreachable_endpoint_fails_the_commit_with_the_address(spark, tmp_path):
    """Tried again for reconnectTimeout (an outage is ridden out: tests/spark/test_outage.py), then the
    commit fails naming the address and the option."""
    q = (
        source(spark, count=10)
        .writeStream.format("reactive")
        .option("endpoint", "tcp://127.0.0.1:9/nobody")
        .option("reconnectTimeout", "2s")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(StreamingQueryException, match=r"127\.0\.0\.1:9.*reconnectTimeout=2 s"):
        q.awaitTermination(120)


@pytest.mark.parametrize(
    "options, message",
    [
        ({}, "needs exactly one of option 'endpoint'"),
        ({"endpoint": "tcp://127.0.0.1:1/x", "subscriber": "a.b:c"}, "needs exactly one"),
        ({"endpoint": "tcp://127.0.0.1:1/x", "stagingLocaton": "/tmp"}, "Did you mean 'stagingLocation'"),
        ({"endpoint": "tcp://127.0.0.1:1/x", "elements": "batches"}, "subscriber factories only"),
        ({"subscriber": "nocolon"}, "package.module:factory"),
        ({"endpoint": "tcp://127.0.0.1:1/x", "inlineMaxBytes": "lots"}, "not a size"),
        ({"endpoint": "tcp://127.0.0.1:1/x", "keepSubscriberOnAbort": "soon"}, "not a duration"),
        ({"endpoint": "tcp://127.0.0.1:1/x", "keepSubscriberOnAbort": "500ms"}, "at least 1s, e.g. '10min'"),
    ],
)
def test_bad_sink_options_are_refused_with_the_fix(options, message):
    with pytest.raises(OptionError, match=message):
        SinkOptions.parse({"checkpointLocation": "/tmp/ck", **options})


@pytest.mark.parametrize(
    "value, window", [(None, None), ("false", None), ("true", 600.0), ("10min", 600.0), ("2s", 2.0)]
)
def test_keep_subscriber_on_abort_is_false_by_default_or_a_window(value, window):
    options = {"endpoint": "tcp://127.0.0.1:1/x"} | ({} if value is None else {"keepSubscriberOnAbort": value})
    assert SinkOptions.parse(options).keep_on_abort == window


def test_bad_sink_options_fail_the_query_as_it_starts_saying_the_fix(spark, tmp_path):
    """Spark hands the options to the sink as the query starts (the cases: the test above)."""
    w = (
        source(spark, count=1)
        .writeStream.format("reactive")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .option("endpoint", "tcp://127.0.0.1:1/x")
        .option("stagingLocaton", "/tmp")
    )
    with pytest.raises(StreamingQueryException, match="Did you mean 'stagingLocation'"):
        q = w.trigger(availableNow=True).start()
        q.awaitTermination(60)
