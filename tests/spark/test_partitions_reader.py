"""The partitioned reader's demand and acknowledgements against a real endpoint, without Spark: its
methods are called as Spark's reader process calls them (rs_spark/spark/source/partitioned/)."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import pytest
from pyspark.sql.streaming.datasource import ReadMaxRows
from pyspark.sql.types import LongType, StringType, StructField, StructType

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.spark.source.data_loss import DataLossError
from rs_spark.spark.source.options import SourceOptions
from rs_spark.spark.source.partitioned.fetch import EndpointRange
from rs_spark.spark.source.partitioned.reader import PartitionedStreamReader
from tests.waits import wait_until

TOKEN = "partitions-reader-test"
SCHEMA = StructType([StructField("p", StringType()), StructField("id", LongType())])


def _serve() -> net.Server:
    return net.serve(rs.range_(10**9).pipe(rs.map(lambda i: {"p": "a", "id": i})), name="a", token=TOKEN)


def _reader(server: net.Server) -> PartitionedStreamReader:
    opts = SourceOptions.parse(
        {"endpoint": f"a={server.address}", "token": TOKEN, "executorFetch": "true", "pollTimeout": "10s"}
    )
    return PartitionedStreamReader(opts, SCHEMA)


def _latest(reader: PartitionedStreamReader, start: dict, rows: int) -> dict:
    """latestOffset off the main thread, as Spark's reader process does not call it (the reader
    installs its SIGTERM handler only on the main thread)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(reader.latestOffset, start, ReadMaxRows(rows)).result(60)


def _stream(server: net.Server) -> net.StreamStats | None:
    streams = server.stats().streams
    return streams[0] if streams else None


def test_the_next_micro_batch_is_made_available_while_spark_runs_this_one():
    """Option prefetch (default true): once a micro-batch is planned the endpoints are asked for
    the next one, so the publisher makes it while Spark runs this one (before: only at the next
    latestOffset, which then waited for the publisher every micro-batch)."""
    server = _serve()
    reader = _reader(server)
    try:
        o0 = _latest(reader, reader.initialOffset(), 100)  # names the new stream, opens nothing
        o1 = _latest(reader, o0, 100)
        assert o1["positions"] == {"a": 100}
        wait_until(
            lambda: getattr(_stream(server), "end_position", 0) >= 200,
            what="the endpoint to make the next micro-batch's 100 rows available",
        )
    finally:
        reader.stop()
        server.stop()


def test_a_restarted_reader_acknowledges_only_what_spark_commits_not_at_latest_offset():
    """Spark committed a micro-batch, then the reader process died before it acknowledged it. The
    next reader process does not acknowledge the checkpoint's position at latestOffset (with
    asyncProgressTrackingEnabled Spark asks for the next batch before its commit log holds the last
    one): it does when Spark calls commit(), which it does for the checkpoint's last batch once it
    planned the next one (MicroBatchExecution.cleanUpLastExecutedMicroBatch)."""
    server = _serve()
    first = _reader(server)
    try:
        o0 = _latest(first, first.initialOffset(), 100)
        o1 = _latest(first, o0, 100)
    finally:
        first.stop()  # no commit(o1): the process is gone; the endpoint keeps the stream for a reader
    wait_until(lambda: getattr(_stream(server), "state", None) == "detached", what="the stream to wait for a reader")
    assert _stream(server).acked_position == 0
    second = _reader(server)
    try:
        o2 = _latest(second, o1, 100)  # Spark restarts from its checkpoint: o1 committed
        o3 = _latest(second, o2, 100)  # (with async progress tracking o2 may not be committed yet)
        assert o3["positions"] == {"a": 300}
        second.commit(o1)  # Spark, after writing o2 to its offset log
        # Acknowledgements travel in order on the stream's connection: had latestOffset(o2)
        # acknowledged 200, the endpoint would hold 200 (it ignores 100 after it), not 100.
        wait_until(lambda: _stream(server).acked_position == 100, what="the acknowledgement of position 100")
        assert _stream(server).first_position == 100
    finally:
        second.stop()
        server.stop()


def test_executor_side_loss_follows_fail_on_data_loss():
    """What an executor does for a planned range its endpoint no longer keeps (here: a stream the
    endpoint never had): failOnDataLoss=true fails the task saying so; false warns naming the
    positions and yields no rows for them, as Kafka's executor-side consumer skips."""
    server = _serve()
    try:
        lost = EndpointRange("a", "f" * 32, 100, 200)
        strict = _reader(server)
        with pytest.raises(DataLossError, match=r"partition 'a' .* no longer keeps positions \[100, 200\)"):
            list(strict.read(lost))
        opts = SourceOptions.parse(
            {"endpoint": f"a={server.address}", "token": TOKEN, "executorFetch": "true", "failOnDataLoss": "false"}
        )
        records: list[logging.LogRecord] = []
        handler = logging.Handler()
        handler.emit = records.append  # type: ignore[method-assign]
        logging.getLogger("rs_spark.source").addHandler(handler)
        try:
            assert list(PartitionedStreamReader(opts, SCHEMA).read(lost)) == []
        finally:
            logging.getLogger("rs_spark.source").removeHandler(handler)
        text = " ".join(r.getMessage() for r in records)
        assert "no longer keeps positions [100, 200)" in text and "skip these 100 rows" in text
    finally:
        server.stop()
