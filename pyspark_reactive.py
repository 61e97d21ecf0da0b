"""Spark discovers Python data sources in top-level modules named ``pyspark_*`` that define
``DefaultSource``; this one makes ``format("reactive")`` work right after installing rs_spark."""

from rs_spark.spark.datasource import ReactiveDataSource as DefaultSource

__all__ = ["DefaultSource"]
