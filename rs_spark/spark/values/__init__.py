"""What a value becomes, in one place: Python value <-> Arrow <-> Spark type, with pyspark's own rules.

- :mod:`.schema`: the Arrow schema of a Spark schema (TIMESTAMP as UTC instants, TIMESTAMP_NTZ naive).
- :mod:`.to_arrow`: Python elements -> Arrow as pyspark's ``LocalDataToArrowConversion`` makes them
  (what Spark's Python data sources and Spark Connect's ``createDataFrame`` do): every source path.
- :mod:`.from_json`: JSON's stand-ins for DECIMAL and BINARY read as Spark's ``from_json`` reads them,
  before pyspark's rules (the elements of an endpoint with codec ``json``).
- :mod:`.served`: a Publisher of this process as record batches, converted here (``read_stream``).
- :mod:`.to_python`: Arrow -> Python as ``df.collect()`` gives it (``ArrowTableToRowsConversion``):
  every sink path.

docs/types.md has the table of every type, and the time-zone rule.
"""

from __future__ import annotations

from .schema import arrow_schema, arrow_schema_of_json, spark_schema
from .served import served_batches
from .to_arrow import SparkValues, element_converter
from .to_python import batch_dicts, batch_rows, batch_tuples

__all__ = [
    "arrow_schema",
    "arrow_schema_of_json",
    "spark_schema",
    "SparkValues",
    "element_converter",
    "served_batches",
    "batch_dicts",
    "batch_rows",
    "batch_tuples",
]
