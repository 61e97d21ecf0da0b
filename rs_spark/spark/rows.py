"""The sink's elements as ``df.collect()`` gives them, made here because only this package imports pyspark.

Importing :mod:`rs_spark.spark` registers ``rows``, ``dicts`` and ``tuples`` with the delivery layer
(:func:`rs_spark.delivery.elements.register_elements`), replacing its pyspark-free defaults: every
process that delivers to a Subscriber (the user's, a task's) imports it. The values follow
:mod:`rs_spark.spark.values.to_python`.
"""

from __future__ import annotations

from ..delivery.elements import register_elements
from .values.to_python import batch_dicts, batch_rows, batch_tuples

register_elements("rows", batch_rows)
register_elements("dicts", batch_dicts)
register_elements("tuples", batch_tuples)

__all__ = ["batch_rows", "batch_dicts", "batch_tuples"]
