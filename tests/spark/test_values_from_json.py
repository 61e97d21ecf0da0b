"""JSON's stand-ins for DECIMAL and BINARY (codec json), read as Spark's from_json reads them, then by
pyspark's rules; elements that did not cross as JSON keep pyspark's rules alone. (The same through a
real JSON peer and Spark: tests/spark/test_endpoint_js.py, and read_stream(codec="json") in
tests/spark/test_read_stream_arrow.py.)"""

from __future__ import annotations

from decimal import Decimal

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DecimalType,
    DoubleType,
    IntegerType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rs_spark.arrow.convert import MalformedElementError
from rs_spark.net.protocol.codecs import JsonCodec
from rs_spark.spark.values import element_converter
from rs_spark.spark.values.from_json import json_reader


def _json(text: str):
    return JsonCodec().decode(text.encode())


TYPES: dict[str, DataType] = {
    "DECIMAL(38,18)": DecimalType(38, 18),
    "DECIMAL(38,0)": DecimalType(38, 0),
    "DECIMAL(10,2)": DecimalType(10, 2),
    "BINARY": BinaryType(),
    "DOUBLE": DoubleType(),
    "STRING": StringType(),
    "INT": IntegerType(),
    "TIMESTAMP": TimestampType(),
    "ARRAY<DECIMAL(5,2)>": ArrayType(DecimalType(5, 2)),
    "ARRAY<BINARY>": ArrayType(BinaryType()),
    "ARRAY<STRING>": ArrayType(StringType()),
    "MAP<STRING, BINARY>": MapType(StringType(), BinaryType()),
    "MAP<STRING, INT>": MapType(StringType(), IntegerType()),
    "STRUCT<d: DECIMAL(5,1), b: BINARY>": StructType(
        [StructField("d", DecimalType(5, 1)), StructField("b", BinaryType())]
    ),
    "STRUCT<d: DECIMAL(5,1), s: STRING>": StructType(
        [StructField("d", DecimalType(5, 1)), StructField("s", StringType())]
    ),
    "STRUCT<x: INT>": StructType([StructField("x", IntegerType())]),
}


def _one(ddl: str, text: str, from_json: bool = True):
    """The value column ``v`` of type ``ddl`` gets from the JSON element ``text``."""
    c = element_converter(StructType([StructField("v", TYPES[ddl])]), from_json=from_json)
    return c.convert([_json(text)], 0).batch.column(0).to_pylist()[0]


@pytest.mark.parametrize(
    ("ddl", "text", "value"),
    [
        ("DECIMAL(38,18)", '{"v": 12345678901234567890.123456789012345678}', "12345678901234567890.123456789012345678"),
        (
            "DECIMAL(38,18)",
            '{"v": -99999999999999999999.999999999999999999}',
            "-99999999999999999999.999999999999999999",
        ),
        ("DECIMAL(38,0)", '{"v": 99999999999999999999999999999999999999}', "99999999999999999999999999999999999999"),
        ("DECIMAL(10,2)", '{"v": 1}', "1.00"),
        ("DECIMAL(10,2)", '{"v": 1e2}', "100.00"),
        ("DECIMAL(10,2)", '{"v": "1.5"}', "1.50"),
        ("DECIMAL(10,2)", '{"v": -0.0}', "0.00"),
        ("DECIMAL(10,2)", '{"v": 1.255}', "1.26"),
        ("DECIMAL(10,2)", '{"v": 1.245}', "1.24"),  # pyspark's converter: half-even
        ("DECIMAL(10,2)", '{"v": null}', None),
        ("BINARY", '{"v": "aGVsbG8="}', b"hello"),
        ("BINARY", '{"v": ""}', b""),
        ("BINARY", '{"v": null}', None),
        ("ARRAY<DECIMAL(5,2)>", '{"v": [1.5, null, 2]}', [Decimal("1.50"), None, Decimal("2.00")]),
        ("MAP<STRING, BINARY>", '{"v": {"k": "AAE=", "n": null}}', {"k": b"\x00\x01", "n": None}),
        ("STRUCT<d: DECIMAL(5,1), b: BINARY>", '{"v": {"d": 0.1, "b": "/w=="}}', {"d": Decimal("0.1"), "b": b"\xff"}),
        ("STRUCT<d: DECIMAL(5,1), s: STRING>", '{"v": {"s": "x"}}', {"d": None, "s": "x"}),
        ("DOUBLE", '{"v": 0.1}', 0.1),
        ("STRING", '{"v": 1.50}', "1.5"),  # a JSON number for STRING: str() of it, as before
    ],
)
def test_a_json_value_is_read_as_from_json_reads_it_then_by_pyspark_s_rules(ddl, text, value):
    got = _one(ddl, text)
    expected = Decimal(value) if isinstance(value, str) and ddl.startswith("DECIMAL") else value
    if isinstance(got, list) and got and isinstance(got[0], tuple):  # an Arrow map: a list of pairs
        got = dict(got)
    assert got == expected
    if isinstance(expected, Decimal):
        assert str(got) == str(expected)  # every digit, the scale's


def test_a_json_number_for_a_decimal_keeps_every_digit_of_its_text():
    text = '{"v": 12345678901234567890.123456789012345678}'
    assert float(_json(text)["v"]) == 1.2345678901234567e19  # what the float alone holds
    assert str(_one("DECIMAL(38,18)", text)) == "12345678901234567890.123456789012345678"
    assert str(_one("DECIMAL(38,18)", '{"v": 0.1}')) == "0.100000000000000000"  # not 0.1000000000000000055...


@pytest.mark.parametrize(
    ("ddl", "text", "why"),
    [
        ("BINARY", '{"v": "not base64!"}', "is not base64"),
        ("BINARY", '{"v": "aGVsbG8"}', "is not base64"),  # unpadded
        ("BINARY", '{"v": 5}', "expected binary"),
        ("DECIMAL(10,2)", '{"v": "1,5"}', "is no JSON number"),
        ("DECIMAL(10,2)", '{"v": " 1.5"}', "is no JSON number"),
        ("DECIMAL(10,2)", '{"v": "NaN"}', "is no JSON number"),
        ("DECIMAL(10,2)", '{"v": true}', "expected decimal128(10, 2)"),
        ("DECIMAL(10,2)", '{"v": 123456789012.5}', "expected decimal128(10, 2)"),  # too wide
        ("ARRAY<BINARY>", '{"v": ["AA==", "?"]}', "is not base64"),
    ],
)
def test_a_json_value_from_json_makes_null_is_a_malformed_element_naming_its_field(ddl, text, why):
    with pytest.raises(MalformedElementError, match="field 'v'") as e:
        _one(ddl, text)
    assert why in str(e.value)


def test_elements_that_did_not_cross_as_json_keep_pyspark_s_rules():
    with pytest.raises(MalformedElementError, match="field 'v'"):
        _one("BINARY", '{"v": "aGVsbG8="}', from_json=False)  # a str for BINARY: pyspark refuses it
    with pytest.raises(MalformedElementError, match="field 'v'"):
        _one("DECIMAL(10,2)", '{"v": 1}', from_json=False)  # an int for DECIMAL: pyspark refuses it


def test_types_without_decimal_or_binary_are_not_read_at_all():
    for ddl in ("INT", "DOUBLE", "STRING", "TIMESTAMP", "ARRAY<STRING>", "MAP<STRING, INT>", "STRUCT<x: INT>"):
        assert json_reader(TYPES[ddl]) is None, ddl
