"""rs_spark: Reactive Streams for PySpark Structured Streaming.

``rs_spark.streams`` is the pure-Python Reactive Streams core; ``rs_spark.tck`` checks any
Publisher, Subscriber or Processor against the spec rule by rule.
"""
__version__ = "0.1.0"
