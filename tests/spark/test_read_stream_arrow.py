"""read_stream converts a Publisher's elements in the user's process and sends Arrow: the query reads
every row once, in micro-batches within ``maxRecordsPerTrigger``, ends AvailableNow at the end of
a ready backlog, and handles a malformed element per ``mode`` there, naming its offset and field."""

from __future__ import annotations

import os
import uuid

import pytest
from pyspark.errors import StreamingQueryException

import rs_spark
from rs_spark import streams as rs
from rs_spark.spark.options import OptionError
from rs_spark.spark.served import served
from rs_spark.spark.source.options import SourceOptions


def _run(spark, df, **trigger):
    name = f"rsa_{uuid.uuid4().hex[:8]}"
    q = df.writeStream.format("memory").queryName(name).trigger(**(trigger or {"availableNow": True})).start()
    try:
        try:
            finished = q.awaitTermination(180)
        except StreamingQueryException:
            finished = True  # it failed: the test reads q.exception()
        return q, name, finished
    finally:
        q.stop()


def test_available_now_reads_a_ready_backlog_of_dicts_whole_within_max_records_per_trigger(spark):
    pub = rs.range_(10_000).pipe(rs.map(lambda i: {"id": i, "name": f"n{i}"}))
    df = rs_spark.read_stream(spark, pub, "id LONG, name STRING", options={"maxRecordsPerTrigger": 1500})
    q, name, finished = _run(spark, df)
    assert finished and q.exception() is None
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 10_000 and max(sizes) <= 1500, sizes
    ids = [r.id for r in spark.table(name).collect()]
    assert sorted(ids) == list(range(10_000)), "every row once"


def test_a_malformed_element_fails_the_query_naming_its_offset_and_field(spark):
    pub = rs.range_(100).pipe(rs.map(lambda i: {"id": "x" if i == 63 else i}))
    df = rs_spark.read_stream(spark, pub, "id LONG")
    q, _, finished = _run(spark, df)
    assert finished
    err = str(q.exception())
    assert "offset 63" in err and "field 'id'" in err and "mode=PERMISSIVE" in err, err


@pytest.mark.parametrize("mode", ["DROPMALFORMED", "PERMISSIVE"])
def test_a_malformed_element_is_dropped_or_kept_as_text_in_the_users_process(spark, mode):
    pub = rs.range_(50).pipe(rs.map(lambda i: {"id": "x" if i == 7 else i}))
    schema = "id LONG, _corrupt_record STRING" if mode == "PERMISSIVE" else "id LONG"
    df = rs_spark.read_stream(spark, pub, schema, options={"mode": mode})
    q, name, finished = _run(spark, df)
    assert finished and q.exception() is None
    rows = spark.table(name).collect()
    if mode == "DROPMALFORMED":
        assert sorted(r.id for r in rows) == [i for i in range(50) if i != 7]
    else:
        bad = [r for r in rows if r.id is None]
        assert len(rows) == 50 and len(bad) == 1 and '"x"' in bad[0]._corrupt_record


def _listening_ports() -> set[int]:
    """The TCP ports this process listens on (its sockets in /proc/net/tcp in state LISTEN)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:
                    ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


BAD_OPTIONS = [
    {"mode": "bogus"},
    {"maxBufferedRecords": "x"},
    {"maxBufferedRecords": "0"},
    {"maxRecordsPerTrigger": "10", "maxBufferedRecords": "5"},
    {"maxRecordPerTrigger": "5"},
    {"pollTimeout": "soon"},
]


@pytest.mark.parametrize("options", BAD_OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
@pytest.mark.parametrize("codec", ["arrow", "json"])
def test_a_bad_option_is_refused_at_once_in_the_words_of_format_reactive_and_nothing_is_left_served(
    spark, options, codec
):
    before, listening = len(served()), _listening_ports()
    with pytest.raises(OptionError) as got:
        rs_spark.read_stream(spark, rs.just({"id": 1}), "id LONG", options=options, codec=codec)
    with pytest.raises(OptionError) as parsed:
        SourceOptions.parse({"publisher": "tests.spark.publishers:counter", **options})
    assert str(got.value) == str(parsed.value)
    assert len(served()) == before and _listening_ports() <= listening, "the endpoint is stopped"


def test_format_reactive_refuses_the_bad_value_in_the_same_words(spark):
    df = (
        spark.readStream.format("reactive")
        .schema("id LONG")
        .option("publisher", "tests.spark.publishers:counter")
        .option("maxBufferedRecords", "x")
        .load()
    )
    q, _, finished = _run(spark, df)
    assert finished
    with pytest.raises(ValueError) as parsed:
        SourceOptions.parse({"publisher": "tests.spark.publishers:counter", "maxBufferedRecords": "x"})
    assert str(parsed.value) in str(q.exception())


def test_partitions_served_as_json_take_numbers_for_decimal_and_base64_texts_for_binary(spark):
    """codec json: elements cross as JSON texts and are read on executors (each partition fetched from its
    endpoint) as Spark's from_json reads them: a number for DECIMAL, base64 text for BINARY."""
    import base64
    from decimal import Decimal

    rows = [{"id": i, "d": i + 0.25, "b": base64.b64encode(bytes([i, 255])).decode()} for i in range(20)]
    pubs = {"a": rs.from_iterable(rows[:10]), "b": rs.from_iterable(rows[10:])}
    df = rs_spark.read_stream(spark, pubs, "id INT, d DECIMAL(10,2), b BINARY", codec="json")
    q, name, finished = _run(spark, df)
    assert finished and q.exception() is None
    got = sorted(tuple(r) for r in spark.table(name).collect())
    assert got == [(i, Decimal(i) + Decimal("0.25"), bytes([i, 255])) for i in range(20)]
