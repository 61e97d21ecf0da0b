"""``spark.read.format("reactive")``: a finite publisher read to completion on one executor."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ...streams.subscribers import BlockingIterator
from .executor_rows import RUN, arrow_schema, converted, converter_for
from .options import SourceOptions
from .resolve import make_publisher


class SubscribePartition(InputPartition):
    """The one partition of a batch read: the executor subscribes to the publisher itself."""


class ReactiveBatchReader(DataSourceReader):
    """Reads a finite publisher to completion, requesting at most ``maxBufferedRecords`` ahead."""

    def __init__(self, opts: SourceOptions, schema: StructType) -> None:
        self._opts = opts
        self._schema_json = schema.json()

    def partitions(self) -> list[InputPartition]:
        return [SubscribePartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        run = min(self._opts.max_buffered, RUN)
        it = BlockingIterator(prefetch=run)
        make_publisher(self._opts, arrow_schema(self._schema_json)).subscribe(it)
        with it:
            yield from converted(converter_for(self._opts, self._schema_json), it, 0, run)


__all__ = ["ReactiveBatchReader", "SubscribePartition"]
