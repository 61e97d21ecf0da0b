"""The sink's ``rows`` elements: pyspark Rows, made here because only this package imports pyspark.

Importing :mod:`rs_spark.spark` registers them with the delivery layer
(:func:`rs_spark.delivery.elements.register_elements`).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import Row

from ..delivery.elements import dict_elements, register_elements


def batch_rows(batch: pa.RecordBatch) -> list[Any]:
    """The rows of ``batch`` as pyspark Rows, in order."""
    return [Row(**d) for d in dict_elements(batch)]


register_elements("rows", batch_rows)

__all__ = ["batch_rows"]
