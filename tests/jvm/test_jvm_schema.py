"""The shim's schema text on the Python side (rs_spark.jvm.schema) and rs_spark.spark.jvm.jvm_schema:
the types the JVM carries, both ways, and a column it does not carry refused naming it and its type.
No JVM: the JVM's own parser is checked by TemporalAndDecimalCodecTest (JUnit) and end to end by
test_spark_jvm_types.py."""

from __future__ import annotations

import pyarrow as pa
import pytest

from rs_spark.jvm.schema import UnsupportedColumn, parse_spec, to_spec


def test_the_new_types_round_trip_through_the_schema_text():
    spec = "ts:timestamp,wall:timestamp_ntz,day:date,amount:decimal(38,18),cents:decimal(10,2),n:decimal(5,0)"
    schema = parse_spec(spec)
    assert schema.types == [
        pa.timestamp("us", tz="UTC"),
        pa.timestamp("us"),
        pa.date32(),
        pa.decimal128(38, 18),
        pa.decimal128(10, 2),
        pa.decimal128(5, 0),
    ]
    assert to_spec(schema) == spec
    assert parse_spec("n:DECIMAL( 5 )").types == [pa.decimal128(5, 0)]
    # a zone names an instant (the JVM carries it as UTC), no zone is a wall clock
    assert to_spec(pa.schema([("a", pa.timestamp("us", tz="America/New_York")), ("b", pa.timestamp("ns"))])) == (
        "a:timestamp,b:timestamp_ntz"
    )


@pytest.mark.parametrize("bad", ["x:decimal", "x:decimal(39,0)", "x:decimal(0,0)", "x:decimal(5,6)", "x:decimal(a)"])
def test_a_decimal_without_a_valid_precision_and_scale_is_refused(bad):
    with pytest.raises(ValueError, match="decimal"):
        parse_spec(bad)


@pytest.mark.parametrize(
    "arrow_type",
    [pa.list_(pa.string()), pa.map_(pa.string(), pa.int64()), pa.struct([("a", pa.int64())]), pa.duration("us")],
)
def test_a_column_the_shim_does_not_carry_is_named_with_its_type(arrow_type):
    with pytest.raises(UnsupportedColumn) as info:
        to_spec(pa.schema([("id", pa.int64()), ("tags", arrow_type)]))
    assert info.value.column == "tags" and info.value.arrow_type == arrow_type
    assert f"column 'tags' has Arrow type {arrow_type}, which the JVM shim does not carry" in str(info.value)


def test_jvm_schema_names_the_spark_type_of_a_refused_column():
    from pyspark.sql.types import (
        ArrayType,
        DecimalType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampNTZType,
        VariantType,
        YearMonthIntervalType,
    )

    from rs_spark.spark.jvm import jvm_schema
    from rs_spark.spark.values import arrow_schema

    carried = StructType(
        [StructField("id", LongType()), StructField("wall", TimestampNTZType()), StructField("d", DecimalType(9, 3))]
    )
    assert jvm_schema(carried) == arrow_schema(carried)  # pyspark's mapping, field by field
    assert jvm_schema(carried, skip="d") == pa.schema([("id", pa.int64()), ("wall", pa.timestamp("us"))])
    for struct, text in [
        (StructType([StructField("tags", ArrayType(StringType()))]), "array<string> (Arrow list<element: string>)"),
        (StructType([StructField("tags", YearMonthIntervalType())]), "interval year to month (no Arrow type)"),
        (
            StructType([StructField("tags", VariantType())]),
            "variant (Arrow struct<value: binary not null, metadata: binary not null>)",
        ),
    ]:
        with pytest.raises(UnsupportedColumn) as info:
            jvm_schema(struct)
        assert f"column 'tags' has type {text}, which the JVM shim does not carry" in str(info.value)
    with pytest.raises(UnsupportedColumn, match=r"column 'tags' has type array<string> \(Arrow list"):
        jvm_schema(pa.schema([("tags", pa.list_(pa.string()))]))
