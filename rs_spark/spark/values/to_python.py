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
from typing import Any, NamedTuple

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
    cols = _local_columns(batch, structs=True)
    if cols is not None:  # pyspark's own Row maker over Arrow's values (the same values, see batch_tuples)
        names = batch.schema.names
        return [_create_row(names, values) for values in zip(*cols, strict=True)]
    return ArrowTableToRowsConversion.convert(pa.Table.from_batches([batch]), _schema(batch.schema))


def batch_tuples(batch: pa.RecordBatch) -> list[Any]:
    """The rows of ``batch`` as tuples (``tuple(row)`` of :func:`batch_rows`)."""
    if not batch.num_columns:
        return _empty_rows(batch.num_rows, tuples=True)
    cols = _local_columns(batch, structs=True)
    if cols is not None:
        return list(zip(*cols, strict=True))
    table = pa.Table.from_batches([batch])
    return ArrowTableToRowsConversion.convert(table, _schema(batch.schema), return_as_tuples=True)


def batch_dicts(batch: pa.RecordBatch) -> list[Any]:
    """The rows of ``batch`` as dicts (``Row.asDict(recursive=True)`` of :func:`batch_rows`)."""
    if not batch.num_columns:
        return [{} for _ in range(batch.num_rows)]
    plan = _plan_of(batch.schema, False)
    local = None if plan is None else _shifted(batch, plan)
    if plan is None or local is None:
        return [r.asDict(recursive=True) for r in batch_rows(batch)]
    return local.to_pylist(maps_as_pydicts="strict") if any(plan.maps) else local.to_pylist()


def _empty_rows(n: int, tuples: bool) -> list[Any]:
    from pyspark.sql import Row

    return [() if tuples else Row() for _ in range(n)]


@lru_cache(maxsize=64)
def _schema(schema: pa.Schema) -> StructType:
    return spark_schema(schema)


class _Plan(NamedTuple):
    """How a schema's batches become Python values by Arrow's own ``to_pylist``."""

    zoned: tuple[int, ...]
    """The top-level TIMESTAMP columns: shifted to local wall clocks first."""
    maps: tuple[bool, ...]
    """Per column, whether it holds a MAP: only those ask Arrow for dicts (``maps_as_pydicts``
    costs 3x per value on any column: 53 against 16 µs for 100 rows of (long, double), pyarrow 26)."""


_last_plans: dict[bool, tuple[pa.Schema, _Plan | None]] = {}
"""The last schema seen and its plan, per ``structs``: a stream's batches share their schema, and
comparing it (0.04 µs) costs less than hashing it for the cache (1.5 µs of a 19 µs 100-row batch)."""


def _plan_of(schema: pa.Schema, structs: bool) -> _Plan | None:
    last = _last_plans.get(structs)
    if last is not None and last[0].equals(schema, check_metadata=True):
        return last[1]
    plan = _plan(schema, structs)
    _last_plans[structs] = (schema, plan)  # one assignment: another thread sees the old pair or this one
    return plan


@lru_cache(maxsize=128)
def _plan(schema: pa.Schema, structs: bool) -> _Plan | None:
    """The plan for ``schema`` if every column's Arrow values, its top-level TIMESTAMPs shifted, are
    collect()'s (no TIMESTAMP, VARIANT or user-defined type below the top, no struct when ``structs``);
    else None (pyspark's converter)."""
    fields = _schema(schema).fields
    zoned = tuple(i for i, f in enumerate(fields) if isinstance(f.dataType, TimestampType))
    if any(_needs_pyspark(f.dataType, structs) for i, f in enumerate(fields) if i not in zoned):
        return None
    return _Plan(zoned, tuple(_has_map(f.dataType) for f in fields))


def _local_columns(batch: pa.RecordBatch, structs: bool) -> list[list[Any]] | None:
    """``batch``'s columns as lists of collect()'s values by Arrow's own ``to_pylist``, or None."""
    plan = _plan_of(batch.schema, structs)
    local = None if plan is None else _shifted(batch, plan)
    if plan is None or local is None:
        return None
    return [
        c.to_pylist(maps_as_pydicts="strict") if m else c.to_pylist()
        for c, m in zip(local.columns, plan.maps, strict=True)
    ]


def _shifted(batch: pa.RecordBatch, plan: _Plan) -> pa.RecordBatch | None:
    """``batch`` with its TIMESTAMP columns as naive local wall clocks, or None for an hour with a change
    of offset (pyspark's per-value path)."""
    if not plan.zoned:
        return batch
    columns = list(batch.columns)
    for i in plan.zoned:
        local = utc_to_local(columns[i])
        if local is None:
            return None
        columns[i] = local
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _has_map(t: DataType) -> bool:
    if isinstance(t, MapType):
        return True
    if isinstance(t, ArrayType):
        return _has_map(t.elementType)
    return isinstance(t, StructType) and any(_has_map(f.dataType) for f in t.fields)


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
