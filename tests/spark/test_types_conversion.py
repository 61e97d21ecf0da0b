"""The type matrix, conversion by conversion: rs_spark's value rules against pyspark's own, computed here.

Every row of tests/spark/type_rows.py (one column per Spark SQL type, with edge values) is converted by
rs_spark (:mod:`rs_spark.spark.values`) and by pyspark (``LocalDataToArrowConversion`` for Python ->
Arrow, ``ArrowTableToRowsConversion`` for Arrow -> Python, what Spark Connect's ``createDataFrame`` and
``collect()`` use), in three time zones; the results must be the same values. Values are compared
by ``repr`` so that NaN equals NaN and -0.0 differs from 0.0.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import time
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql import Row
from pyspark.sql.conversion import ArrowTableToRowsConversion, LocalDataToArrowConversion
from pyspark.sql.types import (
    BinaryType,
    DecimalType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from rs_spark.arrow.convert import MalformedElementError
from rs_spark.spark.values import batch_dicts, batch_rows, batch_tuples, element_converter

from . import type_rows

ZONES = ["UTC", "America/New_York", "Asia/Kolkata"]


@pytest.fixture(params=ZONES)
def zone(request):
    """This process's local time zone, as pyspark and rs_spark read naive datetimes."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = request.param
    time.tzset()
    yield request.param
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def _pyspark_table(rows, schema):
    return LocalDataToArrowConversion.convert(list(rows), schema, False)


def _ours(elements, schema, mode="FAILFAST"):
    return element_converter(schema, mode).convert(list(elements), 0).batch


def test_the_zone_fixture_changes_local_time(zone):
    """Guard: the matrix below would prove nothing if every zone read naive datetimes alike."""
    offset = dt.datetime(2026, 7, 1, 12).astimezone().utcoffset()
    assert offset == {"UTC": dt.timedelta(0), "America/New_York": dt.timedelta(hours=-4)}.get(
        zone, dt.timedelta(hours=5, minutes=30)
    )


@pytest.mark.parametrize("shape", ["tuples", "dicts", "rows", "objects", "lists"])
def test_every_type_becomes_the_arrow_pyspark_makes_in_every_zone(zone, shape):
    schema = type_rows.struct()
    rows = type_rows.rows()
    expected = _pyspark_table(rows, schema)
    elements = {
        "tuples": rows,
        "dicts": type_rows.dict_rows(),
        "rows": [Row(**d) for d in type_rows.dict_rows()],
        "objects": [_Obj(d) for d in type_rows.dict_rows()],
        "lists": [list(r) for r in rows],
    }[shape]
    got = _ours(elements, schema)
    assert got.schema.equals(expected.schema), f"{got.schema}\n!=\n{expected.schema}"
    for name in type_rows.NAMES:
        assert repr(got.column(name).to_pylist()) == repr(expected.column(name).to_pylist()), name


def test_one_by_one_path_gives_the_same_values_as_the_bulk_path(zone):
    """A chunk with one malformed element is converted element by element (to name it); the good rows
    must come out as the bulk path makes them."""
    schema = type_rows.struct()
    rows = type_rows.dict_rows()
    bad = dict(rows[0], i64="not a number")
    got = element_converter(schema, "DROPMALFORMED").convert([*rows, bad], 0)
    assert got.dropped == 1
    expected = _pyspark_table(type_rows.rows(), schema)
    for name in type_rows.NAMES:
        assert repr(got.batch.column(name).to_pylist()) == repr(expected.column(name).to_pylist()), name


def test_every_type_reaches_a_subscriber_as_collect_gives_it_in_every_zone(zone):
    schema = type_rows.struct()
    table = _pyspark_table(type_rows.rows(), schema)
    batch = table.combine_chunks().to_batches()[0]
    want_rows = ArrowTableToRowsConversion.convert(table, schema)
    assert repr(batch_rows(batch)) == repr(want_rows)
    assert repr(batch_dicts(batch)) == repr([r.asDict(recursive=True) for r in want_rows])
    assert repr(batch_tuples(batch)) == repr(ArrowTableToRowsConversion.convert(table, schema, return_as_tuples=True))


def test_the_sinks_arrow_shortcut_gives_what_pyspark_gives_for_plain_columns():
    """Columns needing none of pyspark's conversions take Arrow's to_pylist: same values (maps as dicts)."""
    schema = StructType(
        [
            StructField("m", MapType(StringType(), LongType())),
            StructField("bin", BinaryType()),
            StructField("dec", DecimalType(10, 2)),
        ]
    )
    rows = [({"a": 1, "b": None}, b"x", Decimal("1.25")), (None, None, None), ({}, b"", Decimal("-0.01"))]
    table = _pyspark_table(rows, schema)
    batch = table.combine_chunks().to_batches()[0]
    want = ArrowTableToRowsConversion.convert(table, schema)
    assert batch_dicts(batch) == [r.asDict(recursive=True) for r in want]
    assert batch_tuples(batch) == [tuple(r) for r in want]
    assert batch_dicts(batch)[0]["m"] == {"a": 1, "b": None}, "a MAP reaches a Subscriber as a dict"


# -- where pyspark accepts, rs_spark accepts the same value; where it refuses, so does rs_spark ----
_ACCEPTED = [
    ("STRING from an int", StringType(), 5, "5"),
    ("STRING from True", StringType(), True, "true"),
    ("STRING from False", StringType(), False, "false"),
    ("DECIMAL(10,2) from 1.255, half-even", DecimalType(10, 2), Decimal("1.255"), Decimal("1.26")),
    ("DECIMAL(10,2) from 1.245, half-even", DecimalType(10, 2), Decimal("1.245"), Decimal("1.24")),
    ("DECIMAL NaN is null", DecimalType(10, 2), Decimal("NaN"), None),
    ("BINARY from a bytearray", BinaryType(), bytearray(b"ab"), b"ab"),
]
_REFUSED = [
    ("DECIMAL from an int", DecimalType(10, 2), 5),
    ("BINARY from a str", BinaryType(), "ab"),
    ("MAP from a list of pairs", MapType(StringType(), LongType()), [("a", 1)]),
    ("TIMESTAMP_NTZ from an aware datetime", TimestampNTZType(), dt.datetime(2026, 1, 1, tzinfo=dt.UTC)),
    ("INT from a str", IntegerType(), "5"),
]


@pytest.mark.parametrize("case, kind, value, want", _ACCEPTED, ids=[c[0] for c in _ACCEPTED])
def test_a_value_pyspark_accepts_is_accepted_as_pyspark_converts_it(case, kind, value, want):
    schema = StructType([StructField("v", kind)])
    theirs = _pyspark_table([(value,)], schema).column("v").to_pylist()
    assert theirs == [want], "the table's expectation is pyspark's own"
    assert _ours([{"v": value}], schema).column("v").to_pylist() == theirs


@pytest.mark.parametrize("case, kind, value", _REFUSED, ids=[c[0] for c in _REFUSED])
def test_a_value_pyspark_refuses_is_malformed_naming_its_field_and_offset(case, kind, value):
    schema = StructType([StructField("v", kind)])
    with pytest.raises(Exception):  # noqa: B017 - pyspark raises several kinds
        _pyspark_table([(value,)], schema)
    with pytest.raises(MalformedElementError) as e:
        element_converter(schema).convert([{"v": value}], 41)
    assert "offset 41" in str(e.value) and "field 'v'" in str(e.value)


def test_a_struct_from_an_objects_attributes_is_accepted_as_pyspark_accepts_it():
    inner = StructType([StructField("x", IntegerType()), StructField("y", StringType())])
    schema = StructType([StructField("st", inner)])
    value = _Obj({"x": 1, "y": "a"})
    theirs = _pyspark_table([(value,)], schema).column("st").to_pylist()
    assert _ours([{"st": value}], schema).column("st").to_pylist() == theirs == [{"x": 1, "y": "a"}]


def test_a_naive_arrow_timestamp_is_never_read_as_utc_for_a_timestamp_field():
    schema = StructType([StructField("ts", TimestampType())])
    naive = pa.RecordBatch.from_pydict({"ts": pa.array([dt.datetime(2026, 1, 1, 9)], pa.timestamp("us"))})
    with pytest.raises(MalformedElementError, match="TIMESTAMP_NTZ"):
        element_converter(schema).convert([naive], 0)
    zoned = pa.RecordBatch.from_pydict({"ts": pa.array([dt.datetime(2026, 1, 1, 9)], pa.timestamp("us", tz="UTC"))})
    assert element_converter(schema).convert([zoned], 0).batch.num_rows == 1


@dataclasses.dataclass
class _Point:
    x: int
    y: str


def test_dataclasses_are_rows_by_their_fields():
    schema = StructType([StructField("x", IntegerType()), StructField("y", StringType())])
    assert _ours([_Point(1, "a")], schema).to_pylist() == [{"x": 1, "y": "a"}]


class _Obj:
    """An object whose attributes are a row (pyspark reads any object by its ``__dict__``)."""

    def __init__(self, d: dict) -> None:
        self.__dict__.update(d)


def _minutes_across_years(n: int = 3000) -> list[dt.datetime]:
    """Naive wall clocks spread over 1900-2100, the minutes either side of New York's 2026 transitions
    (in hours whose offset does not change), and the first and last minutes of years 2 and 9998."""
    start, step = dt.datetime(1900, 1, 1), dt.timedelta(minutes=35_083, microseconds=7)  # not a whole hour
    edges = [dt.datetime(2026, 3, 8, 1, 59, 59), dt.datetime(2026, 3, 8, 3, 0), dt.datetime(2026, 11, 1, 0, 59)]
    edges += [dt.datetime(2026, 11, 1, 2, 0, 1), dt.datetime(2, 1, 1, 0, 1), dt.datetime(9998, 12, 31, 23, 59)]
    return [start + i * step for i in range(n)] + edges


def test_a_naive_timestamp_column_shifted_an_hour_at_a_time_is_what_pyspark_makes_value_by_value(zone):
    """The bulk path (local_time.naive_to_utc) against pyspark's per-value astimezone, where it applies;
    where an hour has a DST change it must decline (None) and leave the column to pyspark's converter."""
    from rs_spark.spark.values.local_time import naive_to_utc

    schema = StructType([StructField("ts", TimestampType())])
    for values in (_minutes_across_years(), [dt.datetime(2026, 7, 1, 12, 0, 0, 1), None]):
        clean = [v for v in values if v is None or naive_to_utc([v]) is not None]
        shifted = naive_to_utc(clean)
        assert shifted is not None
        assert shifted.to_pylist() == _pyspark_table([(v,) for v in clean], schema).column("ts").to_pylist()
    assert naive_to_utc(_minutes_across_years()[-6:-2]) is not None, "the hours beside a transition are bulk"
    if zone == "America/New_York":
        assert naive_to_utc([dt.datetime(2026, 3, 8, 2, 30)]) is None, "a DST gap value is pyspark's to convert"
        assert naive_to_utc([dt.datetime(2026, 11, 1, 1, 30)]) is None, "an overlap value too"
    assert naive_to_utc([dt.datetime(2026, 1, 1, fold=1)]) is None, "fold=1: pyspark's to convert"
    assert naive_to_utc([dt.date(2026, 1, 1)]) is None, "a date for a TIMESTAMP: pyspark's converter refuses it"


def test_a_utc_timestamp_column_shifted_to_local_time_an_hour_at_a_time_is_what_collect_gives(zone):
    from rs_spark.spark.values.local_time import utc_to_local

    schema = StructType([StructField("ts", TimestampType())])
    instants = pa.array(
        [v.replace(tzinfo=dt.UTC) for v in _minutes_across_years()[:-2]] + [None], pa.timestamp("us", tz="UTC")
    )
    table = pa.table({"ts": instants})
    keep = [i for i in range(len(instants)) if utc_to_local(instants.slice(i, 1)) is not None]
    kept = pa.table({"ts": instants.take(keep)})
    want = [r.ts for r in ArrowTableToRowsConversion.convert(kept, schema)]
    assert utc_to_local(kept.column("ts")).to_pylist() == want
    assert len(keep) > len(instants) - 20, "only hours with a change of offset are declined"
    assert batch_dicts(table.to_batches()[0]) == [
        {"ts": r.ts} for r in ArrowTableToRowsConversion.convert(table, schema)
    ]


def test_a_map_with_struct_keys_reaches_a_subscriber_as_collect_gives_it():
    key = StructType([StructField("x", IntegerType())])
    schema = StructType([StructField("m", MapType(key, LongType()))])
    table = _pyspark_table([({Row(x=1): 2},)], schema)
    want = ArrowTableToRowsConversion.convert(table, schema)
    assert batch_dicts(table.to_batches()[0]) == [r.asDict(recursive=True) for r in want]


def test_a_non_nullable_array_takes_only_what_pyspark_takes():
    from pyspark.sql.types import ArrayType

    schema = StructType([StructField("a", ArrayType(IntegerType()), nullable=False)])
    with pytest.raises(AssertionError):
        _pyspark_table([((1, 2),)], schema)
    with pytest.raises(MalformedElementError, match="field 'a'"):
        element_converter(schema).convert([{"a": (1, 2)}], 0)


def test_a_decimal_too_wide_for_its_column_says_so():
    schema = StructType([StructField("d", DecimalType(4, 2))])
    with pytest.raises(MalformedElementError, match="precision and scale"):
        element_converter(schema).convert([{"d": Decimal("123.456")}], 0)


def test_a_zoned_arrow_timestamp_is_never_taken_as_a_wall_clock_for_a_timestamp_ntz_field():
    schema = StructType([StructField("ts", TimestampNTZType())])
    zoned = pa.RecordBatch.from_pydict(
        {"ts": pa.array([dt.datetime(2026, 1, 1, 14)], pa.timestamp("us", tz="America/New_York"))}
    )
    with pytest.raises(MalformedElementError, match="declare the field TIMESTAMP"):
        element_converter(schema).convert([zoned], 0)
