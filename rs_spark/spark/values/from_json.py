"""What a JSON value stands for, as Spark's ``from_json`` reads it, before pyspark's rules apply.

Elements from an endpoint with codec ``json`` (a foreign RSocket peer, or ``read_stream(codec="json")``)
are JSON values, and JSON has no decimal or bytes type: pyspark's converter refuses an ``int`` or a
``float`` for DECIMAL and a ``str`` for BINARY, so such a peer could send neither. For those
elements only, a value is first read as Spark's ``from_json`` reads it (``JacksonParser``):

- DECIMAL: a JSON number, exactly, from its text (``12345678901234567890.123456789012345678`` loses no
  digit; codec ``json`` keeps the text, :class:`rs_spark.net.protocol.codecs.JsonNumber`), or a text
  holding one (``"1.5"``);
- BINARY: a text in base64 (RFC 4648, standard alphabet, padded: what Spark's ``to_json`` writes);

inside arrays, maps and structs too. Then pyspark's converter takes the ``Decimal`` or ``bytes`` as
for any Publisher (DECIMAL rounds half-even to the scale, a value too wide is malformed). Any other
value is left as it is, for pyspark's converter to take or refuse. Columns without a DECIMAL or
BINARY anywhere in their type are not touched.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import re
from collections.abc import Callable
from typing import Any

from pyspark.sql.types import ArrayType, BinaryType, DataType, DecimalType, MapType, StructType

from ...net.protocol.codecs import JsonNumber

Read = Callable[[Any], Any]

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
"""A JSON number (RFC 8259): what a text for a DECIMAL column must hold."""


def json_reader(data_type: DataType) -> Read | None:
    """How a JSON value of a column of ``data_type`` becomes the Python value pyspark's converter
    takes; None when the type holds no DECIMAL or BINARY (the value is taken as it is)."""
    if isinstance(data_type, DecimalType):
        return _decimal
    if isinstance(data_type, BinaryType):
        return _binary
    if isinstance(data_type, ArrayType):
        element = json_reader(data_type.elementType)
        return None if element is None else _array(element)
    if isinstance(data_type, MapType):
        key, value = json_reader(data_type.keyType), json_reader(data_type.valueType)
        return None if key is None and value is None else _map(key or _same, value or _same)
    if isinstance(data_type, StructType):
        fields = [(f.name, json_reader(f.dataType) or _same) for f in data_type.fields]
        if all(r is _same for _, r in fields):
            return None
        return _struct(fields)
    return None


def _same(value: Any) -> Any:
    return value


def _decimal(value: Any) -> Any:
    if isinstance(value, JsonNumber):
        return decimal.Decimal(value.text)
    if isinstance(value, int) and not isinstance(value, bool):
        return decimal.Decimal(value)
    if isinstance(value, str):
        if not _NUMBER.fullmatch(value):
            raise ValueError(f"the text {value[:40]!r} is no JSON number, as a DECIMAL from JSON must be")
        return decimal.Decimal(value)
    return value  # pyspark's converter takes a Decimal, refuses the rest (a bool, a float NaN)


def _binary(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(
            f"the text {value[:40]!r} is not base64 (RFC 4648, padded), as BINARY from JSON must be (Spark's "
            "to_json writes it so)"
        ) from None


def _array(element: Read) -> Read:
    def read(value: Any) -> Any:
        return [element(v) for v in value] if isinstance(value, list) else value

    return read


def _map(key: Read, value: Read) -> Read:
    def read(m: Any) -> Any:
        return {key(k): value(v) for k, v in m.items()} if isinstance(m, dict) else m

    return read


def _struct(fields: list[tuple[str, Read]]) -> Read:
    def read(value: Any) -> Any:
        if not isinstance(value, dict):  # a JSON array is no struct (pyspark refuses a list, from_json too)
            return value
        out = dict(value)  # a JSON object, by field name (a missing key stays missing)
        for name, r in fields:
            if name in out:
                out[name] = r(out[name])
        return out

    return read


__all__ = ["json_reader"]
