"""One row per Spark SQL type, with edge values, for the type matrix (tests/spark/test_types_*.py).

``rows()`` are tuples in ``SCHEMA``'s order, built in the calling process's time zone: naive
datetimes are wall clocks of that zone (including a DST gap and a DST overlap in America/New_York),
so pyspark reads them as its local time and so must rs_spark. ``publisher`` is a factory (option
``publisher``) serving the same rows as dicts.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

from rs_spark import streams as rs

SCHEMA = (
    "b BOOLEAN, i8 TINYINT, i16 SMALLINT, i64 BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(38,18), s STRING, bin BINARY, "
    "day DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ, ints ARRAY<INT>, strs ARRAY<STRING>, m MAP<STRING,BIGINT>, "
    "st STRUCT<x: INT, y: STRING>, kvs ARRAY<STRUCT<k: STRING, v: DOUBLE>>, span INTERVAL DAY TO SECOND, var VARIANT"
)
NAMES = [
    "b",
    "i8",
    "i16",
    "i64",
    "f",
    "d",
    "dec",
    "s",
    "bin",
    "day",
    "ts",
    "ntz",
    "ints",
    "strs",
    "m",
    "st",
    "kvs",
    "span",
    "var",
]

_DEC_MAX = Decimal("99999999999999999999.999999999999999999")


def _variant(text: str):
    """A VARIANT value as pyspark builds it from JSON text (the same bytes as Spark's ``parse_json``)."""
    from pyspark.sql.types import VariantVal
    from pyspark.sql.variant_utils import VariantUtils

    return VariantVal(*VariantUtils.parse_json(text))


_DEC_MIN = Decimal("-99999999999999999999.999999999999999999")


def struct():
    """``SCHEMA`` as a StructType, built without a SparkSession (parsing DDL needs one)."""
    from pyspark.sql import types as T

    kv = T.StructType([T.StructField("k", T.StringType()), T.StructField("v", T.DoubleType())])
    xy = T.StructType([T.StructField("x", T.IntegerType()), T.StructField("y", T.StringType())])
    kinds = [
        T.BooleanType(),
        T.ByteType(),
        T.ShortType(),
        T.LongType(),
        T.FloatType(),
        T.DoubleType(),
        T.DecimalType(38, 18),
        T.StringType(),
        T.BinaryType(),
        T.DateType(),
        T.TimestampType(),
        T.TimestampNTZType(),
        T.ArrayType(T.IntegerType()),
        T.ArrayType(T.StringType()),
        T.MapType(T.StringType(), T.LongType()),
        xy,
        T.ArrayType(kv),
        T.DayTimeIntervalType(),
        T.VariantType(),
    ]
    return T.StructType([T.StructField(n, k) for n, k in zip(NAMES, kinds, strict=True)])


DST_ROWS = (1, 2, 3)
"""The rows whose TIMESTAMP is a wall clock in a DST gap or overlap (in America/New_York)."""


def rows() -> list[tuple]:
    """The matrix rows: ordinary values, extremes, empties, nulls inside containers, an all-null row."""
    gap = dt.datetime(2026, 3, 8, 2, 30)  # no such wall clock in New York (clocks jump 02:00 -> 03:00)
    overlap = dt.datetime(2026, 11, 1, 1, 30)  # twice in New York (01:00-02:00 repeats)
    return [
        (
            True,
            1,
            2,
            3,
            1.5,
            2.25,
            Decimal("1.5"),
            "héllo wörld ✓",
            b"\x00\xff",
            dt.date(2026, 12, 2),
            dt.datetime(2026, 12, 2, 9, 45, 1, 123456),
            dt.datetime(2026, 12, 2, 9, 45, 1, 123456),
            [1, 2, 3],
            ["a", None, "c"],
            {"k": 1, "n": None},
            (1, "x"),
            [("k", 1.0), ("l", None)],
            dt.timedelta(days=1, seconds=2, microseconds=3),
            _variant('{"a": 1, "b": [true, null], "c": "x"}'),
        ),
        (
            False,
            -128,
            -32768,
            -(2**63),
            -0.0,
            math.nan,
            _DEC_MAX,
            "",
            b"",
            dt.date(1, 1, 1),
            gap,
            gap,
            [],
            [],
            {},
            (None, None),
            [],
            dt.timedelta(0),
            _variant("null"),  # a JSON null: a VARIANT value, not SQL NULL
        ),
        (
            True,
            127,
            32767,
            2**63 - 1,
            math.inf,
            -math.inf,
            _DEC_MIN,
            "日本語",
            bytes(range(256)),
            dt.date(9999, 12, 31),
            overlap,
            overlap,
            [None],
            [None],
            {"": 0},
            (2**31 - 1, ""),
            [(None, math.nan)],
            dt.timedelta(days=-1, microseconds=1),
            _variant('"日本語"'),
        ),
        (
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            overlap.replace(fold=1),
            dt.datetime(1970, 1, 1),
            None,
            None,
            None,
            None,
            None,
            None,
            _variant('[1.5e300, -0.0, "", {"k": {}}, 12345678901234567890.123456789012345678]'),
        ),
        tuple([None] * 19),
    ]


def dict_rows() -> list[dict]:
    return [dict(zip(NAMES, r, strict=True)) for r in rows()]


def without(*names: str) -> tuple[object, list[tuple]]:
    """``(struct, rows)`` of the matrix without the columns ``names`` (for a path that does not carry them)."""
    from pyspark.sql.types import StructType

    keep = [i for i, n in enumerate(NAMES) if n not in names]
    full = struct()
    return StructType([full.fields[i] for i in keep]), [tuple(r[i] for i in keep) for r in rows()]


def collected(spark, schema=None, values=None) -> list:
    """What pyspark makes of the rows (``schema`` and ``values``: the matrix's by default) on Spark
    Connect: ``createDataFrame`` converts them with ``LocalDataToArrowConversion`` (as Spark's Python data
    sources do), ``collect()`` with ``ArrowTableToRowsConversion``; the JVM keeps the instants between.
    Classic ``createDataFrame(rows)`` differs only for a wall clock in a DST gap or overlap (it reads naive
    datetimes through ``time.mktime``; docs/types.md), and this checks that it agrees everywhere else."""
    from pyspark.sql.conversion import ArrowTableToRowsConversion, LocalDataToArrowConversion

    schema = struct() if schema is None else schema
    values = rows() if values is None else values
    out = ArrowTableToRowsConversion.convert(LocalDataToArrowConversion.convert(values, schema, False), schema)
    classic = spark.createDataFrame(values, schema).collect()
    differ = [i for i, (a, b) in enumerate(zip(out, classic, strict=True)) if canon(a) != canon(b)]
    assert set(differ) <= set(DST_ROWS), f"rows {differ} differ between Connect's and classic conversions"
    return out


def canon(v) -> str:
    """``repr`` with map keys sorted (a Spark MAP has no order: collect() gives the JVM's) and datetimes'
    ``fold`` dropped (it does not change a naive value), so that NaN equals NaN and -0.0 is not 0.0."""
    from pyspark.sql import Row
    from pyspark.sql.types import VariantVal

    if isinstance(v, Row):
        return "Row(" + ", ".join(f"{k}={canon(x)}" for k, x in v.asDict(recursive=False).items()) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(sorted(f"{canon(k)}: {canon(x)}" for k, x in v.items())) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(canon(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(canon(x) for x in v) + ")"
    if isinstance(v, VariantVal):  # classic collect() holds bytearrays, Connect's bytes: the same bytes
        return f"VariantVal({bytes(v.value)!r}, {bytes(v.metadata)!r})"
    if isinstance(v, dt.datetime):
        return repr(v.replace(fold=0))  # classic collect() marks a repeated wall clock fold=1, Connect's does not
    return repr(v)


def publisher(options):
    """Factory: the matrix rows as dicts (in the reader process's time zone)."""
    return rs.from_iterable(dict_rows())


__all__ = ["SCHEMA", "NAMES", "struct", "rows", "dict_rows", "without", "collected", "canon", "publisher"]
