"""Arrow -> Python as ``df.collect()`` gives it (``pyspark.sql.conversion.ArrowTableToRowsConversion``).

What a Subscriber receives per the sink's ``elements``: ``rows`` are the Rows ``collect()`` makes of
the same batch (TIMESTAMP as a naive datetime in this process's local time, MAP as a dict, STRUCT as a
Row, VARIANT as a VariantVal); ``dicts`` are ``Row.asDict(recursive=True)`` of them; ``tuples`` are
``tuple(row)``. A batch whose columns need none of pyspark's conversions (no TIMESTAMP, MAP, VARIANT
or user-defined type, at any depth) takes Arrow's own ``to_pylist``, which gives the same values.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import pyarrow as pa
from pyspark.sql.conversion import ArrowTableToRowsConversion
from pyspark.sql.types import (
    ArrayType,
    DataType,
    MapType,
    StructType,
    TimestampType,
    UserDefinedType,
    VariantType,
)

from .schema import spark_schema


def batch_rows(batch: pa.RecordBatch) -> list[Any]:
    """The rows of ``batch`` as pyspark Rows, as ``collect()`` gives them."""
    if not batch.num_columns:
        return _empty_rows(batch.num_rows, tuples=False)
    return ArrowTableToRowsConversion.convert(pa.Table.from_batches([batch]), _schema(batch.schema))


def batch_tuples(batch: pa.RecordBatch) -> list[Any]:
    """The rows of ``batch`` as tuples (``tuple(row)`` of :func:`batch_rows`)."""
    if not batch.num_columns:
        return _empty_rows(batch.num_rows, tuples=True)
    if _plain(batch.schema, structs=True):
        cols = [c.to_pylist(maps_as_pydicts="strict") for c in batch.columns]
        return list(zip(*cols, strict=True))
    table = pa.Table.from_batches([batch])
    return ArrowTableToRowsConversion.convert(table, _schema(batch.schema), return_as_tuples=True)


def batch_dicts(batch: pa.RecordBatch) -> list[Any]:
    """The rows of ``batch`` as dicts (``Row.asDict(recursive=True)`` of :func:`batch_rows`)."""
    if not batch.num_columns:
        return [{} for _ in range(batch.num_rows)]
    if _plain(batch.schema, structs=False):
        return batch.to_pylist(maps_as_pydicts="strict")
    return [r.asDict(recursive=True) for r in batch_rows(batch)]


def _empty_rows(n: int, tuples: bool) -> list[Any]:
    from pyspark.sql import Row

    return [() if tuples else Row() for _ in range(n)]


@lru_cache(maxsize=64)
def _schema(schema: pa.Schema) -> StructType:
    return spark_schema(schema)


@lru_cache(maxsize=128)
def _plain(schema: pa.Schema, structs: bool) -> bool:
    """Whether Arrow's own values are collect()'s for every column; ``structs``: a struct counts as
    needing pyspark (collect() makes it a Row; Arrow a dict, which is what ``asDict(recursive=True)`` gives)."""
    return not any(_needs_pyspark(f.dataType, structs) for f in _schema(schema).fields)


def _needs_pyspark(t: DataType, structs: bool) -> bool:
    if isinstance(t, (TimestampType, VariantType, UserDefinedType)):
        return True
    if isinstance(t, ArrayType):
        return _needs_pyspark(t.elementType, structs)
    if isinstance(t, MapType):
        return _needs_pyspark(t.keyType, structs) or _needs_pyspark(t.valueType, structs)
    if isinstance(t, StructType):
        return structs or any(_needs_pyspark(f.dataType, structs) for f in t.fields)
    return False


__all__ = ["batch_dicts", "batch_rows", "batch_tuples"]
