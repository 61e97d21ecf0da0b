"""Hand-written Python streaming sources and publisher factories for benchmarks/source.py.

The baselines are what a Spark user writes by hand today: a minimal DataSourceStreamReader
yielding RecordBatches (the ceiling for a Python source) or tuples.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from rs_spark import streams as rs

SCHEMA = "id LONG, price DOUBLE, name STRING"


def make_batch(b: int, rows: int) -> pa.RecordBatch:
    base = b * rows
    return pa.RecordBatch.from_arrays(
        [
            pa.array(range(base, base + rows), pa.int64()),
            pa.array([0.5] * rows, pa.float64()),
            pa.array(["x"] * rows, pa.string()),
        ],
        names=["id", "price", "name"],
    )


def make_rows(b: int, rows: int):
    base = b * rows
    return [(base + i, 0.5, "x") for i in range(rows)]


class _Reader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, batches: int, rows: int, arrow: bool) -> None:
        self.batches, self.rows, self.arrow = batches, rows, arrow

    def initialOffset(self) -> dict:
        return {"b": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        pass  # the data is fixed: `batches` batches

    def latestOffset(self, start: dict, limit) -> dict:  # one batch per trigger
        return {"b": min(start["b"] + 1, self.batches)}

    def partitions(self, start: dict, end: dict):
        return [InputPartition(b) for b in range(start["b"], end["b"])]

    def read(self, partition):
        if self.arrow:
            yield make_batch(partition.value, self.rows)
        else:
            yield from make_rows(partition.value, self.rows)


class HandArrowSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "hand_arrow"

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema):
        return _Reader(int(self.options["batches"]), int(self.options["rows"]), True)


class HandTupleSource(HandArrowSource):
    @classmethod
    def name(cls) -> str:
        return "hand_tuples"

    def streamReader(self, schema):
        return _Reader(int(self.options["batches"]), int(self.options["rows"]), False)


def batch_publisher(options):
    n, rows = int(options["batches"]), int(options["rows"])
    return rs.range_(n).pipe(rs.map(lambda b: make_batch(b, rows)))


def dict_publisher(options):
    n, rows = int(options["batches"]), int(options["rows"])

    def gen():
        for i in range(n * rows):
            yield {"id": i, "price": 0.5, "name": "x"}

    return rs.defer(gen)
