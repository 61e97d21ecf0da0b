"""Examples: the demo's sensor feed, a ``format("reactive")`` factory (``rs_spark.examples.sensors:readings``,
replayable); stopping a query between micro-batches (:mod:`.stopping`); Spark's log level from its
start (:mod:`.spark_log`); the spark-submit job (``pipeline.py``) and a declarative pipeline (``pipelines/``)."""

from typing import TYPE_CHECKING

if not TYPE_CHECKING:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from .._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
