"""rs_spark: Reactive Streams for PySpark Structured Streaming.

``rs_spark.streams`` is the pure-Python Reactive Streams core; ``rs_spark.tck`` checks any
Publisher, Subscriber or Processor against the spec rule by rule.
"""
from typing import Any

__version__ = "0.1.0"


def read_stream(spark: Any, publisher: Any, schema: Any = None, **options: Any) -> Any:
    """A streaming DataFrame over ``publisher`` from this process (see rs_spark.spark.notebook)."""
    from .spark.notebook import read_stream as _read_stream

    return _read_stream(spark, publisher, schema, **options)
