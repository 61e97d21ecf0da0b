"""The shim's schema text (``"id:int64,name:string"``) <-> ``pyarrow.Schema``."""

from __future__ import annotations

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
}


def parse_spec(spec: str) -> pa.Schema:
    """The ``pyarrow.Schema`` of the shim's schema text ``"id:int64,name:string"`` (types: bool,
    int8-64, float32/64, string, binary, timestamp, and Spark's names for them such as long or
    double); ValueError names a field that is not ``name:type``."""
    fields = []
    for part in spec.split(","):
        name, sep, t = part.strip().rpartition(":")
        t = _ALIASES.get(t.strip().lower(), t.strip().lower())
        if not sep or not name or t not in _TO_ARROW:
            raise ValueError(
                f"schema field {part.strip()!r} of {spec!r} is not name:type with a type among {' '.join(_TO_ARROW)}"
            )
        fields.append(pa.field(name.strip(), _TO_ARROW[t]))
    return pa.schema(fields)


def to_spec(schema: pa.Schema) -> str:
    """The shim's schema text of ``schema``; ValueError names a field whose type the shim does not carry."""
    out = []
    for f in schema:
        t = f.type
        if pa.types.is_boolean(t):
            name = "bool"
        elif pa.types.is_integer(t) and pa.types.is_signed_integer(t):
            name = f"int{t.bit_width}"
        elif pa.types.is_float32(t):
            name = "float32"
        elif pa.types.is_float64(t):
            name = "float64"
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            name = "string"
        elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
            name = "binary"
        elif pa.types.is_timestamp(t):
            name = "timestamp"
        else:
            raise ValueError(
                f"field {f.name!r} has Arrow type {t}, which the JVM shim does not carry; "
                f"use one of {' '.join(_TO_ARROW)}"
            )
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


__all__ = ["parse_spec", "to_spec", "normalize"]
