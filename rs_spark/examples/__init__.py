"""Examples: the demo's sensor feed, a ``format("reactive")`` factory (``rs_spark.examples.sensors:readings``,
replayable); stopping a query between micro-batches (:mod:`.stopping`); Spark's log level from its
start (:mod:`.spark_log`); the spark-submit job (``pipeline.py``) and a declarative pipeline (``pipelines/``)."""
