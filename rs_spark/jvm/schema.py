"""The shim's schema text (``"id:int64,name:string"``) <-> ``pyarrow.Schema``.

Types (Spark's in brackets): bool, int8-64, float32/64, string, binary, timestamp (an instant:
``timestamp[us, tz=UTC]``, TIMESTAMP; Java ``Instant``), timestamp_ntz (a wall clock:
``timestamp[us]`` without a zone, TIMESTAMP_NTZ; Java ``LocalDateTime``), date (``date32``, DATE;
``LocalDate``) and decimal(p,s) (``decimal128(p, s)``, DECIMAL(p,s); ``BigDecimal``).
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa

_TO_ARROW = {
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "date": pa.date32(),
}
_ALIASES = {
    "boolean": "bool",
    "byte": "int8",
    "short": "int16",
    "int": "int32",
    "integer": "int32",
    "long": "int64",
    "bigint": "int64",
    "float": "float32",
    "double": "float64",
    "utf8": "string",
    "bytes": "binary",
    "date32": "date",
}
_DECIMAL = re.compile(r"decimal\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)")
TYPES = " ".join([*_TO_ARROW, "decimal(p,s)"])
"""The types the shim carries, as its schema text names them."""


class UnsupportedColumn(ValueError):
    """A column whose type the JVM shim does not carry; ``column`` and ``arrow_type`` say which."""

    def __init__(self, column: str, arrow_type: pa.DataType | None, type_text: str | None = None) -> None:
        self.column = column
        self.arrow_type = arrow_type
        arrow = f"Arrow {arrow_type}" if arrow_type is not None else "no Arrow type"
        shown = f"type {type_text} ({arrow})" if type_text else f"Arrow type {arrow_type}"
        super().__init__(
            f"column {column!r} has {shown}, which the JVM shim does not carry: it carries "
            f"BOOLEAN, TINYINT-BIGINT, FLOAT, DOUBLE, STRING, BINARY, TIMESTAMP, TIMESTAMP_NTZ, DATE and "
            f"DECIMAL(p,s) (shim types {TYPES}); ARRAY, MAP, STRUCT, intervals and other types are not "
            "carried yet. Leave the column out, or encode it as a STRING (e.g. JSON) or BINARY in the JVM"
        )


def _split(spec: str) -> list[str]:
    """``spec`` split at the commas outside parentheses (``decimal(10,2)`` holds one)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(spec):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(spec[start:i])
            start = i + 1
    parts.append(spec[start:])
    return parts


def _type(t: str, part: str, spec: str) -> pa.DataType:
    if t.startswith("decimal"):
        m = _DECIMAL.fullmatch(t)
        p, s = (int(m.group(1)), int(m.group(2) or 0)) if m else (0, 0)
        if not m or not 1 <= p <= 38 or not 0 <= s <= p:
            raise ValueError(
                f"schema field {part.strip()!r} of {spec!r}: a decimal is decimal(p,s) with precision p from 1 to "
                "38 and scale s from 0 to p (Spark DECIMAL(p,s)), e.g. decimal(10,2)"
            )
        return pa.decimal128(p, s)
    return _TO_ARROW[t]


def parse_spec(spec: str) -> pa.Schema:
    """The ``pyarrow.Schema`` of the shim's schema text ``"id:int64,name:string"`` (types: see the
    module, and Spark's names for them such as long or double); ValueError names a field that is not
    ``name:type``."""
    fields = []
    for part in _split(spec):
        name, sep, t = part.strip().rpartition(":")
        t = _ALIASES.get(t.strip().lower(), t.strip().lower())
        if not sep or not name or (t not in _TO_ARROW and not t.startswith("decimal")):
            raise ValueError(f"schema field {part.strip()!r} of {spec!r} is not name:type with a type among {TYPES}")
        fields.append(pa.field(name.strip(), _type(t, part, spec)))
    return pa.schema(fields)


def spec_type(t: pa.DataType) -> str | None:
    """The shim's name of Arrow type ``t``, or None when the shim does not carry it."""
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t) and pa.types.is_signed_integer(t):
        return f"int{t.bit_width}"
    if pa.types.is_float32(t):
        return "float32"
    if pa.types.is_float64(t):
        return "float64"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_timestamp(t):
        # a zone names an instant (carried as UTC: the same instant); no zone is a wall clock
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_decimal128(t) and 1 <= t.precision <= 38 and 0 <= t.scale <= t.precision:
        return f"decimal({t.precision},{t.scale})"
    return None


def to_spec(schema: pa.Schema) -> str:
    """The shim's schema text of ``schema``; :class:`UnsupportedColumn` (a ValueError) names the first
    field whose type the shim does not carry."""
    out = []
    for f in schema:
        name = spec_type(f.type)
        if name is None:
            raise UnsupportedColumn(f.name, f.type)
        out.append(f"{f.name}:{name}")
    return ",".join(out)


def normalize(schema: Any) -> pa.Schema | None:
    """None, a spec string or a ``pyarrow.Schema`` -> ``pyarrow.Schema`` (or None)."""
    if schema is None:
        return None
    if isinstance(schema, pa.Schema):
        to_spec(schema)  # reject types the JVM side cannot carry, now
        return schema
    if isinstance(schema, str):
        return parse_spec(schema)
    raise TypeError(
        f"schema must be a pyarrow.Schema or text like 'id:int64,name:string', got {schema!r}"
        " (a Spark StructType or DDL: use rs_spark.spark.jvm)"
    )


__all__ = ["parse_spec", "to_spec", "spec_type", "normalize", "UnsupportedColumn", "TYPES"]
