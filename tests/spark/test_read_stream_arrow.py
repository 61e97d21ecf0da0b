"""read_stream converts a Publisher's elements in the user's process and sends Arrow: the query reads
every row once, in micro-batches within ``maxRecordsPerTrigger``, ends AvailableNow at the end of
a ready backlog, and handles a malformed element per ``mode`` there, naming its offset and field."""

from __future__ import annotations

import uuid

import pytest
from pyspark.errors import StreamingQueryException

import rs_spark
from rs_spark import streams as rs


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
