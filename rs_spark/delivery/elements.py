"""What a Subscriber receives for a record batch: the sink's ``elements`` option in one place.

Used by the delivery hub (endpoint mode) and by tasks delivering in factory mode, so both give a
Subscriber the same elements, including for batches without columns (one empty element per row).
``dicts`` and ``tuples`` are made here; ``rows`` (pyspark Rows) by :mod:`rs_spark.spark`, which
registers them when imported, so that this package never imports pyspark and runs in any process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

Maker = Callable[[pa.RecordBatch], list[Any]]


def _dicts(batch: pa.RecordBatch) -> list[Any]:
    return batch.to_pylist() if batch.num_columns else [{} for _ in range(batch.num_rows)]


def _tuples(batch: pa.RecordBatch) -> list[Any]:
    cols = [c.to_pylist() for c in batch.columns]
    return list(zip(*cols, strict=True)) if cols else [() for _ in range(batch.num_rows)]


_MAKERS: dict[str, Maker] = {"dicts": _dicts, "tuples": _tuples}
_MADE_ABOVE = {"rows": "pyspark Rows are made by rs_spark.spark: import rs_spark.spark in this process first"}


def register_elements(name: str, maker: Maker) -> None:
    """Let an upper layer add a kind of element (``rs_spark.spark`` adds ``rows``)."""
    _MAKERS[name] = maker


def check_elements(elements: str) -> None:
    """Raise ValueError naming the fix unless ``elements`` can be made in this process."""
    if elements == "batches" or elements in _MAKERS:
        return
    if elements in _MADE_ABOVE:
        raise ValueError(f"elements={elements!r}: {_MADE_ABOVE[elements]}")
    raise ValueError(f"elements={elements!r}: one of dicts, tuples, rows (batches are delivered as they are)")


def batch_elements(batch: pa.RecordBatch, elements: str) -> list[Any]:
    """The rows of ``batch`` as ``dicts``, ``tuples`` or ``rows`` (pyspark Rows), in order."""
    check_elements(elements)
    return _MAKERS[elements](batch)


def dict_elements(batch: pa.RecordBatch) -> list[Any]:
    """The rows of ``batch`` as dicts (what other kinds of element are built from)."""
    return _dicts(batch)


__all__ = ["batch_elements", "check_elements", "dict_elements", "register_elements"]
