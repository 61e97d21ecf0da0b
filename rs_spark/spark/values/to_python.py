"""Arrow -> Python as ``df.collect()`` gives it (``pyspark.sql.conversion.ArrowTableToRowsConversion``).

What a Subscriber receives per the sink's ``elements``: ``rows`` are the Rows ``collect()`` makes of
the same batch (TIMESTAMP as a naive datetime in this process's local time, MAP as a dict, STRUCT as a
Row, VARIANT as a VariantVal); ``dicts`` are ``Row.asDict(recursive=True)`` of them; ``tuples`` are
``tuple(row)``. A batch whose columns need none of pyspark's conversions but the top-level TIMESTAMPs'
(no VARIANT, user-defined type or nested TIMESTAMP) takes Arrow's own ``to_pylist``, which gives the
same values, with its TIMESTAMP columns shifted to local time an hour at a time (:mod:`.local_time`).
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
    _create_row,
)

from .local_time import utc_to_local
from .schema import spark_schema


def batch_rows(batch: pa.RecordBatch) -> list[Any]:
    """The rows of ``batch`` as pyspark Rows, as ``collect()`` gives them."""
    if not batch.num_columns:
        return _empty_rows(batch.num_rows, tuples=False)
    local = _local(batch, structs=True)
    if local is not None:  # pyspark's own Row maker over Arrow's values (the same values, see batch_tuples)
        names = batch.schema.names
        cols = [_pylist(c) for c in local.columns]
        return [_create_row(names, values) for values in zip(*cols, strict=True)]
    return ArrowTableToRowsConversion.convert(pa.Table.from_batches([batch]), _schema(batch.schema))


def batch_tuples(batch: pa.RecordBatch) -> list[Any]:
    """The rows of ``batch`` as tuples (``tuple(row)`` of :func:`batch_rows`)."""
    if not batch.num_columns:
        return _empty_rows(batch.num_rows, tuples=True)
    local = _local(batch, structs=True)
    if local is not None:
        cols = [_pylist(c) for c in local.columns]
        return list(zip(*cols, strict=True))
    table = pa.Table.from_batches([batch])
    return ArrowTableToRowsConversion.convert(table, _schema(batch.schema), return_as_tuples=True)


def batch_dicts(batch: pa.RecordBatch) -> list[Any]:
    """The rows of ``batch`` as dicts (``Row.asDict(recursive=True)`` of :func:`batch_rows`)."""
    if not batch.num_columns:
        return [{} for _ in range(batch.num_rows)]
    local = _local(batch, structs=False)
    if local is not None:
        return local.to_pylist(maps_as_pydicts="strict") if _has_map(local.schema) else local.to_pylist()
    return [r.asDict(recursive=True) for r in batch_rows(batch)]


def _empty_rows(n: int, tuples: bool) -> list[Any]:
    from pyspark.sql import Row

    return [() if tuples else Row() for _ in range(n)]


@lru_cache(maxsize=64)
def _schema(schema: pa.Schema) -> StructType:
    return spark_schema(schema)


def _pylist(column: pa.Array) -> list[Any]:
    """``column``'s values, a MAP's as dicts (collect()'s); Arrow's ``maps_as_pydicts`` costs 3x
    per value on any column (53 against 16 µs for 100 rows of (long, double), pyarrow 26), so it is
    asked for only where a map is."""
    return column.to_pylist(maps_as_pydicts="strict") if _type_has_map(column.type) else column.to_pylist()


@lru_cache(maxsize=128)
def _has_map(schema: pa.Schema) -> bool:
    return any(_type_has_map(f.type) for f in schema)


@lru_cache(maxsize=256)
def _type_has_map(t: pa.DataType) -> bool:
    if pa.types.is_map(t):
        return True
    return any(_type_has_map(t.field(i).type) for i in range(t.num_fields))


def _local(batch: pa.RecordBatch, structs: bool) -> pa.RecordBatch | None:
    """``batch`` with its TIMESTAMP columns as naive local wall clocks, when Arrow's own values of the
    result are then collect()'s (``structs``: a struct needs pyspark, which makes it a Row); else None."""
    zoned = _shortcut(batch.schema, structs)
    if zoned is None:
        return None
    columns = list(batch.columns)
    for i in zoned:
        local = utc_to_local(columns[i])
        if local is None:
            return None  # an hour with a change of offset: pyspark's per-value path
        columns[i] = local
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names) if zoned else batch


@lru_cache(maxsize=128)
def _shortcut(schema: pa.Schema, structs: bool) -> tuple[int, ...] | None:
    """The top-level TIMESTAMP columns of ``schema`` if every other column's Arrow values are collect()'s
    (no TIMESTAMP, VARIANT or user-defined type below the top, no struct when ``structs``); else None."""
    fields = _schema(schema).fields
    zoned = tuple(i for i, f in enumerate(fields) if isinstance(f.dataType, TimestampType))
    others = (f.dataType for i, f in enumerate(fields) if i not in zoned)
    return None if any(_needs_pyspark(t, structs) for t in others) else zoned


def _needs_pyspark(t: DataType, structs: bool) -> bool:
    if isinstance(t, (TimestampType, VariantType, UserDefinedType)):
        return True
    if isinstance(t, ArrayType):
        return _needs_pyspark(t.elementType, structs)
    if isinstance(t, MapType):  # a struct key: Arrow's dict cannot hold a dict as a key, pyspark's Row can
        return _needs_pyspark(t.keyType, True) or _needs_pyspark(t.valueType, structs)
    if isinstance(t, StructType):
        return structs or any(_needs_pyspark(f.dataType, structs) for f in t.fields)
    return False


__all__ = ["batch_dicts", "batch_rows", "batch_tuples"]
