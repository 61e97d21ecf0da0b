"""What a Subscriber receives for a record batch: the sink's ``elements`` option in one place.

Used by the delivery hub (endpoint mode) and by tasks delivering in factory mode, so both give a
Subscriber the same elements, including for batches without columns (one empty element per row).
pyspark is imported only for ``rows``: the hub may run in a process without Spark.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa


def batch_elements(batch: pa.RecordBatch, elements: str) -> list[Any]:
    """The rows of ``batch`` as ``dicts``, ``tuples`` or ``rows`` (pyspark Rows), in order."""
    if elements == "dicts":
        return batch.to_pylist() if batch.num_columns else [{} for _ in range(batch.num_rows)]
    if elements == "tuples":
        cols = [c.to_pylist() for c in batch.columns]
        return list(zip(*cols, strict=True)) if cols else [() for _ in range(batch.num_rows)]
    if elements == "rows":
        from pyspark.sql import Row

        return [Row(**d) for d in batch_elements(batch, "dicts")]
    raise ValueError(f"elements={elements!r}: one of dicts, tuples, rows (batches are delivered as they are)")


__all__ = ["batch_elements"]
