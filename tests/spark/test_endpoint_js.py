"""Spark with rsocket-js on both ends: a query reads an rsocket-js publisher through
``option("endpoint", ...)`` and its rows reach an rsocket-js Subscriber (through ``write_stream``,
whose Subscriber is ``net.connect_subscriber`` to the JS responder), exactly once and in order."""

from __future__ import annotations

import uuid

import pytest

import rs_spark
from rs_spark import net

from ..js_peer import js_server_at

pytestmark = pytest.mark.usefixtures("rsocket_js")


@pytest.fixture
def js_server():
    with js_server_at(300, 10) as server:
        yield server


def _source(spark, port):
    return (
        spark.readStream.format("reactive")
        .schema("value LONG")
        .option("endpoint", f"tcp://127.0.0.1:{port}/numbers")
        .option("maxRecordsPerTrigger", 120)
        .option("pollTimeout", "300ms")
        .load()
    )


def test_spark_reads_an_rsocket_js_publisher_exactly_once_in_order(spark, js_server):
    _, port = js_server
    name = "js_" + uuid.uuid4().hex[:8]
    q = _source(spark, port).writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    try:
        assert q.awaitTermination(120) and q.exception() is None
        assert [r[0] for r in spark.sql(f"select value from {name}").collect()] == list(range(300))
        assert max(p["numInputRows"] for p in q.recentProgress) <= 120  # demand paced the JS publisher
    finally:
        q.stop()


def test_a_querys_rows_reach_an_rsocket_js_subscriber(spark, js_server, tmp_path):
    peer, port = js_server
    sink = net.connect_subscriber(f"tcp://127.0.0.1:{port}/sink")
    q = rs_spark.write_stream(
        _source(spark, port), sink, trigger={"availableNow": True}, checkpoint=str(tmp_path / "ckpt")
    )
    try:
        assert q.awaitTermination(120) and q.exception() is None
    finally:
        q.stop()
    seen = peer.next()  # the JS responder reports when its channel completed
    assert seen.get("error") is None and seen["route"] == "sink" and seen["over"] == 0
    assert seen["received"] == [{"value": i} for i in range(300)]


# What a JSON peer sends for DECIMAL and BINARY columns (JSON has neither): numbers, or texts holding
# one, and base64 texts, as Spark's to_json writes them. Each line is one payload, sent as written.
JSON_SCHEMA = (
    "id INT, d DECIMAL(38,18), d2 DECIMAL(10,2), b BINARY, x DOUBLE, a ARRAY<DECIMAL(5,2)>, "
    "m MAP<STRING, BINARY>, st STRUCT<v: DECIMAL(20,4), raw: BINARY>"
)
JSON_TEXTS = [
    '{"id": 0, "d": 12345678901234567890.123456789012345678, "d2": 1.255, "b": "aGVsbG8=", "x": 0.1, '
    '"a": [1.5, 2, "3.25"], "m": {"k": "AAH/"}, "st": {"v": 1e2, "raw": ""}}',
    '{"id": 1, "d": -99999999999999999999.999999999999999999, "d2": "99999999.99", "b": "", "x": -0.0, '
    '"a": [], "m": {}, "st": null}',
    '{"id": 2, "d": 0.000000000000000001, "d2": -7, "b": "8J+YgA==", "x": 1e308, "a": [null], '
    '"m": {"z": null}, "st": {"v": -0.00006}}',
    '{"id": 3, "d": null, "d2": null, "b": null, "x": null, "a": null, "m": null, "st": null}',
    '{"id": 4, "d2": 1.245}',  # a tie: pyspark's converter rounds half-even (1.24), from_json half-up (1.25)
    '{"id": 5, "b": "not base64!"}',  # malformed: no base64 text (from_json makes it null)
]


def test_a_json_peers_numbers_and_base64_texts_arrive_as_decimal_and_binary_as_from_json_reads_them(spark, tmp_path):
    from decimal import Decimal

    from pyspark.sql.conversion import LocalDataToArrowConversion
    from pyspark.sql.functions import from_json
    from pyspark.sql.types import DecimalType

    texts = tmp_path / "texts.jsonl"
    texts.write_text("\n".join(JSON_TEXTS) + "\n")
    with js_server_at(0, 10, str(texts)) as (_, port):
        df = (
            spark.readStream.format("reactive")
            .schema(JSON_SCHEMA + ", _corrupt_record STRING")
            .option("endpoint", f"tcp://127.0.0.1:{port}/texts")  # no ?codec=: JSON, as the peer sends
            .option("mode", "PERMISSIVE")
            .load()
        )
        name = "jsj_" + uuid.uuid4().hex[:8]
        q = df.writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
        try:
            assert q.awaitTermination(120) and q.exception() is None
        finally:
            q.stop()
    got = {r.id: r for r in spark.sql(f"select * from {name}").collect() if r.id is not None}
    bad = [r for r in spark.sql(f"select * from {name}").collect() if r.id is None]
    parsed = spark.createDataFrame([(t,) for t in JSON_TEXTS], "j STRING").select(
        from_json("j", JSON_SCHEMA).alias("v")
    )
    want = {r.id: r for r in parsed.select("v.*").collect()}
    for i in range(4):  # Spark's own reading of the same texts, value for value
        assert tuple(got[i])[:-1] == tuple(want[i]), (i, got[i], want[i])
        assert got[i]._corrupt_record is None
    assert got[0].d == Decimal("12345678901234567890.123456789012345678"), "exact: no float on the way"
    # A tie rounds as pyspark's converter rounds a Decimal (Connect's createDataFrame, Python data sources):
    # half-even; from_json (and classic createDataFrame, in the JVM) half-up: the documented difference
    tie = LocalDataToArrowConversion._create_converter(DecimalType(10, 2), True)(Decimal("1.245"))
    assert got[4].d2 == tie == Decimal("1.24") and want[4].d2 == Decimal("1.25")
    assert want[5].b is None and 5 not in got and len(bad) == 1 and "not base64!" in bad[0]._corrupt_record
