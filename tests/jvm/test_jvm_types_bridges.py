"""TIMESTAMP_NTZ, TIMESTAMP, DATE and DECIMAL across the py4j bridges without Spark: a JVM publisher's
java.time and BigDecimal values arrive as the Python values they name, and a JVM Subscriber gets
LocalDateTime, Instant, LocalDate and BigDecimal back (a standalone JVM, rsspark.fixtures.Typed)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from rs_spark import streams as rs
from rs_spark.jvm import JvmPublisher, JvmSubscriber
from rs_spark.streams.subscribers import BlockingIterator

from ..waits import wait_until
from .test_spark_jvm_types import typed_row

SPEC = "id:int64,wall:timestamp_ntz,at:timestamp,day:date,amount:decimal(38,18)"
NAMES = ["id", "wall", "at", "day", "amount"]


def _java(x):
    """(class, text) of a JVM value; py4j hands a BigDecimal over as a decimal.Decimal, exactly."""
    if x is None:
        return None
    if isinstance(x, Decimal):
        return ("BigDecimal", format(x, "f"))
    return (x.getClass().getName(), x.toString())


def test_a_jvm_publishers_wall_clocks_instants_dates_and_decimals_arrive_as_python_values(jvm):
    it = BlockingIterator(prefetch=16)
    JvmPublisher(jvm.rsspark.fixtures.Elements.typed(8), jvm, elements="rows").subscribe(it)  # declared by the record
    rows = list(it)
    assert rows == [dict(zip(NAMES, typed_row(i), strict=True)) for i in range(8)]
    assert rows[0]["wall"].tzinfo is None and rows[0]["at"].tzinfo is not None


def test_a_jvm_subscriber_gets_local_date_times_instants_local_dates_and_big_decimals(jvm):
    col = jvm.rsspark.jvm.CollectingSubscriber(16)
    rows = [dict(zip(NAMES, typed_row(i), strict=True)) for i in range(4)]
    rs.from_iterable(rows).subscribe(JvmSubscriber(col, jvm, schema=SPEC, kind="map"))
    wait_until(col.isComplete, "the JVM subscriber complete", 30)
    assert col.violation() is None
    items = list(col.items())
    assert [[_java(m[k]) for k in NAMES[1:]] for m in items] == [
        [
            ("java.time.LocalDateTime", "2024-03-10T02:30:00.123456"),
            ("java.time.Instant", "2024-01-02T03:04:05.123456Z"),
            ("java.time.LocalDate", "0001-01-01"),
            ("BigDecimal", "99999999999999999999.999999999999999999"),
        ],
        [
            ("java.time.LocalDateTime", "0001-01-01T00:00"),
            ("java.time.Instant", "1969-12-31T23:59:59.999999Z"),
            ("java.time.LocalDate", "9999-12-31"),
            ("BigDecimal", "-99999999999999999999.999999999999999999"),
        ],
        [
            ("java.time.LocalDateTime", "9999-12-31T23:59:59.999999"),
            ("java.time.Instant", "1970-01-01T00:00:00Z"),
            ("java.time.LocalDate", "1970-01-01"),
            ("BigDecimal", "0.000000000000000001"),
        ],
        [None, None, None, None],
    ]
    # into the record itself: its canonical constructor takes them as they are
    rec = jvm.rsspark.jvm.CollectingSubscriber(16)
    rs.from_iterable(rows).subscribe(JvmSubscriber(rec, jvm, schema=SPEC, kind="rsspark.fixtures.Typed"))
    wait_until(rec.isComplete, "the records subscriber complete", 30)
    assert [r.equals(jvm.rsspark.fixtures.Typed.row(i)) for i, r in enumerate(rec.items())] == [True] * 4
    assert rec.items()[0].amount() == typed_row(0)[4]
    assert rec.items()[1].wall().toString() == dt.datetime(1, 1, 1).isoformat()[:16]
