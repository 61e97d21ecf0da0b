"""Several publishers as partitions, read by executors straight from their endpoints
(rs_spark/spark/source/partitioned/)."""

from __future__ import annotations

import json

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable
from pyspark.sql.types import StructType

import rs_spark
from rs_spark import streams as rs
from rs_spark.spark.options import OptionError
from rs_spark.spark.source.data_loss import DataLossError
from rs_spark.spark.source.options import SourceOptions
from rs_spark.spark.source.partitioned.fetch import EndpointRange
from rs_spark.spark.source.partitioned.reader import PartitionedStreamReader
from tests.waits import wait_until


def _rows(p: str, n: int):
    return rs.range_(n).pipe(rs.map(lambda i: {"p": p, "id": i}))


def _reader(**options) -> PartitionedStreamReader:
    opts = SourceOptions.parse({"endpoint": "a=tcp://127.0.0.1:1/a,b=tcp://127.0.0.1:2/b", **options})
    return PartitionedStreamReader(opts, StructType.fromDDL("p STRING, id LONG"))


def _offsets(progress):
    e = progress["sources"][0]["endOffset"]
    return json.loads(e) if isinstance(e, str) else e


@pytest.mark.timeout(300)
def test_several_publishers_are_partitions_each_read_once_in_order_with_the_limit_shared(spark):
    sizes = {"eu": 3000, "us": 1200, "ap": 50}
    df = rs_spark.read_stream(
        spark,
        {p: _rows(p, n) for p, n in sizes.items()},
        schema="p STRING, id LONG",
        options={"maxRecordsPerTrigger": 700},
    )
    q = df.writeStream.format("memory").queryName("partitions_read").trigger(availableNow=True).start()
    assert q.awaitTermination(240)
    got: dict[str, list[int]] = {}
    for r in spark.sql("select p, id from partitions_read").collect():
        got.setdefault(r.p, []).append(r.id)
    assert {p: sorted(v) for p, v in got.items()} == {p: list(range(n)) for p, n in sizes.items()}
    assert all(len(v) == len(set(v)) for v in got.values())
    batches = [p for p in q.recentProgress if p["numInputRows"]]
    assert all(p["numInputRows"] <= 700 for p in batches)
    assert set(_offsets(batches[-1])["positions"]) == set(sizes)  # offsets per partition, as Kafka's
    # The reader process handled demand, positions and acknowledgements only: no row passed through it.
    metrics = [p["sources"][0]["latestOffset"] for p in batches if p["sources"][0].get("latestOffset")]
    metrics = [json.loads(m) if isinstance(m, str) else m for m in metrics]
    assert metrics and all(m["rowBytesThroughReader"] == 0 for m in metrics)


def test_a_busy_partition_is_split_over_several_tasks():
    reader = _reader(minPartitions=4)
    start = {"positions": {"a": 0, "b": 0}, "streams": {"a": "a" * 32, "b": "b" * 32}}
    end = {"positions": {"a": 900, "b": 100}, "streams": {"a": "a" * 32, "b": "b" * 32}}
    parts = reader.partitions(start, end)
    assert all(isinstance(p, EndpointRange) for p in parts)
    ranges = [(p.pid, p.lo, p.hi) for p in parts]
    assert ranges == [("a", 0, 250), ("a", 250, 500), ("a", 500, 750), ("a", 750, 900), ("b", 0, 100)]
    assert reader.partitions(end, end) == []


def test_partition_ids_must_be_distinct_and_several_endpoints_need_executor_fetch():
    with pytest.raises(OptionError, match="names partition 'a' twice"):
        SourceOptions.parse({"endpoint": "tcp://127.0.0.1:1/a,tcp://127.0.0.1:2/a"})
    with pytest.raises(OptionError, match="several endpoints are read by executors"):
        SourceOptions.parse({"endpoint": "tcp://127.0.0.1:1/a,tcp://127.0.0.1:2/b", "executorFetch": "false"})
    assert SourceOptions.parse({"endpoint": "x=tcp://127.0.0.1:1/a,tcp://127.0.0.1:2/b"}).endpoints == {
        "x": "tcp://127.0.0.1:1/a",
        "b": "tcp://127.0.0.1:2/b",
    }


def _failing():
    def gen():
        yield from ({"p": "bad", "id": i} for i in range(5))
        raise KeyError("gateway 7 went offline")

    return rs.defer(gen)


@pytest.mark.timeout(300)
def test_a_partition_whose_publisher_fails_fails_the_query_naming_it(spark):
    df = rs_spark.read_stream(spark, {"good": _rows("good", 10**6), "bad": _failing()}, schema="p STRING, id LONG")
    q = df.writeStream.format("memory").queryName("partitions_fail").start()
    wait_until(lambda: not q.isActive, what="the query to fail", timeout=180)
    text = str(q.exception())
    assert "partition 'bad'" in text and "gateway 7 went offline" in text and "after 5 records" in text
    # The rows the partition made available before its error were read first, as on the single path.
    assert spark.sql("select id from partitions_fail where p = 'bad' order by id").collect() == [(i,) for i in range(5)]


def test_a_partition_gone_from_option_endpoint_is_data_loss_naming_it():
    reader = _reader()
    start = {"positions": {"a": 3, "b": 4, "c": 9}, "streams": {"a": "a" * 32, "b": "b" * 32, "c": "c" * 32}}
    with pytest.raises(DataLossError, match=r"partitions c are in the checkpoint but not in option endpoint"):
        reader.latestOffset(start, ReadAllAvailable())


def test_a_new_partition_starts_at_position_0_with_its_key_recorded_before_any_row_is_read():
    reader = _reader()
    start = {"positions": {"a": 3}, "streams": {"a": "a" * 32}}
    end = reader.latestOffset(start, ReadAllAvailable())  # no endpoint is contacted: nothing is read yet
    assert end["positions"] == {"a": 3, "b": 0} and end["streams"]["a"] == "a" * 32
    assert len(end["streams"]["b"]) == 32 and end["streams"]["b"] != "a" * 32


@pytest.mark.parametrize(
    "option", ["logPath", "prefetch", "numPartitions", "batchTransport", "minRecordsPerTrigger", "resumable"]
)
def test_single_reader_options_are_refused_when_executors_fetch_saying_why(option):
    with pytest.raises(OptionError, match=f"option {option} does not apply when executors fetch from the endpoints"):
        _reader(**{option: "1"})
