"""Elements to Arrow on an executor: the declared schema, and a stream of elements converted in
bounded runs (``spark.read`` and the partitions executors fetch from endpoints)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.types import StructType

from ...arrow.convert import ElementConverter
from ..values import arrow_schema_of_json, element_converter
from .options import SourceOptions

RUN = 65_536
"""Plain elements converted at once (bounds an executor's memory for a run of dicts)."""


def arrow_schema(schema_json: str) -> pa.Schema:
    """The Arrow schema of a Spark schema kept as JSON (readers are pickled with it)."""
    return arrow_schema_of_json(schema_json)


def converter_for(opts: SourceOptions, schema_json: str, pid: str | None = None) -> ElementConverter:
    """The converter executors use for endpoint ``pid`` (the only one by default): pyspark's value
    rules (JSON's stand-ins read first when its elements are JSON), the source's mode, no corrupt-record
    column added."""
    struct = StructType.fromJson(json.loads(schema_json))
    return element_converter(struct, opts.mode, opts.corrupt_column, from_json=opts.json_elements(pid))


def converted(
    converter: ElementConverter, items: Iterable[Any], first_offset: int, run: int = RUN
) -> Iterator[pa.RecordBatch]:
    """``items`` (plain elements or record batches) as non-empty record batches, in order; plain
    elements in runs of at most ``run``; offsets (for errors naming a record) from ``first_offset``."""
    offset = first_offset
    pending: list[Any] = []
    for item in items:
        if isinstance(item, (pa.RecordBatch, pa.Table)):
            yield from _run(converter, pending, offset - len(pending))
            pending = []
            yield from _run(converter, [item], offset)
            offset += item.num_rows
            continue
        pending.append(item)
        offset += 1
        if len(pending) >= run:
            yield from _run(converter, pending, offset - len(pending))
            pending = []
    yield from _run(converter, pending, offset - len(pending))


def _run(converter: ElementConverter, elements: list[Any], offset: int) -> Iterator[pa.RecordBatch]:
    if elements:
        batch = converter.convert(elements, offset).batch
        if batch.num_rows:
            yield batch


__all__ = ["RUN", "arrow_schema", "converted", "converter_for"]
