"""Spark schema <-> Arrow schema, as pyspark maps them.

TIMESTAMP is an instant: Arrow ``timestamp[us, tz=UTC]`` (any zone names the same instant; UTC keeps
batches comparable). TIMESTAMP_NTZ is a wall clock: Arrow ``timestamp[us]`` without a zone.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType, _parse_datatype_string


def arrow_schema(schema: StructType | str) -> pa.Schema:
    """The Arrow schema of ``schema`` (a StructType, or DDL: parsing DDL needs an active SparkSession)."""
    struct = _parse_datatype_string(schema) if isinstance(schema, str) else schema
    if not isinstance(struct, StructType):
        raise TypeError(f"a schema must be a StructType or a DDL string of columns, got {schema!r}")
    return to_arrow_schema(struct, timezone="UTC")


def arrow_schema_of_json(schema_json: str) -> pa.Schema:
    """The Arrow schema of a Spark schema kept as JSON (readers are pickled with it)."""
    return arrow_schema(StructType.fromJson(json.loads(schema_json)))


def spark_schema(schema: Any) -> StructType:
    """The Spark schema of an Arrow schema (naive timestamps as TIMESTAMP_NTZ, zoned as TIMESTAMP)."""
    if isinstance(schema, StructType):
        return schema
    return from_arrow_schema(schema, prefer_timestamp_ntz=True)


__all__ = ["arrow_schema", "arrow_schema_of_json", "spark_schema"]
