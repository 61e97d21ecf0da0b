"""How a planned micro-batch reaches executors without a replay log (inline in the partition, or
fetched from the reader process), and dict conversion off the critical path: same rows, same
offsets, same malformed-record handling whichever way."""

from __future__ import annotations

import json
import uuid

import pytest
from pyspark.errors import StreamingQueryException

from rs_spark.spark.options import OptionError
from rs_spark.spark.source.options import SourceOptions

from .publishers import SCHEMA

P = "tests.spark.publishers"


def _run(spark, factory, available_now=True, **options):
    r = spark.readStream.format("reactive").schema(options.pop("schema", SCHEMA))
    r = r.option("publisher", f"{P}:{factory}").option("pollTimeout", "2s")
    for k, v in options.items():
        r = r.option(k, str(v))
    name = "tr_" + uuid.uuid4().hex[:8]
    q = r.load().writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    return q, name


def _rows(spark, name, cols="id, name, price"):
    return [tuple(r) for r in spark.sql(f"select {cols} from {name} order by id").collect()]


@pytest.mark.parametrize("transport", ["inline", "fetch"])
def test_batch_transport_delivers_every_record_once_in_order(spark, transport):
    q, name = _run(
        spark,
        "arrow_batches",
        batchTransport=transport,
        numPartitions=3,
        maxRecordsPerTrigger=2500,
        **{"publisher.batches": 4, "publisher.rows": 1000},
    )
    assert q.awaitTermination(120) and q.exception() is None
    ids = [r[0] for r in _rows(spark, name)]
    assert ids == list(range(4000))


def test_fetch_and_inline_give_identical_rows_for_dict_records(spark):
    got = {}
    for transport in ("inline", "fetch"):
        q, name = _run(
            spark, "counter", batchTransport=transport, maxRecordsPerTrigger=3000, **{"publisher.count": 7000}
        )
        assert q.awaitTermination(120) and q.exception() is None
        got[transport] = _rows(spark, name)
    assert got["inline"] == got["fetch"] and len(got["fetch"]) == 7000
    assert got["fetch"][4321] == (4321, "r-4321", 4321 * 0.5)


def test_failfast_names_the_offset_of_a_malformed_record_deep_in_a_pre_converted_batch(spark):
    q, name = _run(
        spark, "many_malformed", maxRecordsPerTrigger=6000, **{"publisher.count": 20000, "publisher.bad": "13579"}
    )
    with pytest.raises(StreamingQueryException) as ei:
        q.awaitTermination(120)
    text = f"{ei.value}\n{getattr(ei.value, 'desc', '')}"
    assert "offset 13579" in text and "'price'" in text
    # the micro-batches before the one holding the bad record were delivered, each record once
    ids = [r[0] for r in _rows(spark, name, "id")]
    assert ids == list(range(len(ids))) and len(ids) == 12000


def test_dropmalformed_and_permissive_keep_offsets_right_across_pre_converted_chunks(spark):
    bad = [5, 4999, 5000, 12345]
    q, name = _run(
        spark,
        "many_malformed",
        mode="DROPMALFORMED",
        maxRecordsPerTrigger=6000,
        **{"publisher.count": 20000, "publisher.bad": ",".join(map(str, bad))},
    )
    assert q.awaitTermination(120) and q.exception() is None
    assert [r[0] for r in _rows(spark, name, "id")] == [i for i in range(20000) if i not in bad]
    lo = q.lastProgress["sources"][0]["latestOffset"] or q.recentProgress[-2]["sources"][0]["latestOffset"]
    lo = json.loads(lo) if isinstance(lo, str) else lo
    assert lo["droppedRecords"] == 4

    q, name = _run(
        spark,
        "many_malformed",
        mode="PERMISSIVE",
        schema=SCHEMA + ", _corrupt_record STRING",
        maxRecordsPerTrigger=6000,
        **{"publisher.count": 20000, "publisher.bad": ",".join(map(str, bad))},
    )
    assert q.awaitTermination(120) and q.exception() is None
    rows = spark.sql(f"select id, _corrupt_record from {name}").collect()
    assert len(rows) == 20000
    corrupt = sorted(json.loads(r[1])["id"] for r in rows if r[1] is not None)
    assert corrupt == bad


def test_batch_transport_option_is_checked():
    assert SourceOptions.parse({"publisher": "a:b"}).batch_transport == "auto"
    assert SourceOptions.parse({"publisher": "a:b", "BATCHTRANSPORT": "Fetch"}).batch_transport == "fetch"
    with pytest.raises(OptionError, match="batchTransport='tcp' must be one of auto, inline, fetch"):
        SourceOptions.parse({"publisher": "a:b", "batchTransport": "tcp"})
