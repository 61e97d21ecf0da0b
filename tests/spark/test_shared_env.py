"""The Spark race around the registered data source's shared environment map (rs_spark/spark/shared_env.py).

Spark's streaming source runner puts into the ``envVars`` map of the data source's one
``PythonFunction``, from each query's thread; rs_spark makes that map a ``ConcurrentHashMap`` when it
registers the source. tests/reliability/test_many_queries.py runs many queries in one driver.
"""

from __future__ import annotations

from rs_spark.spark import register
from rs_spark.spark.shared_env import guard_shared_env

from .publishers import SCHEMA


def _env(spark):
    source = spark._jsparkSession.sessionState().dataSourceManager().lookupDataSource("reactive")
    return source.dataSourceCls().envVars()


def test_the_reactive_source_shares_a_thread_safe_environment_map_with_its_queries(spark, tmp_path):
    register(spark)  # what read_stream, write_stream and local_session do
    assert _env(spark).getClass().getName() == "java.util.concurrent.ConcurrentHashMap"
    q = (
        spark.readStream.format("reactive")
        .schema(SCHEMA)
        .option("publisher", "tests.spark.publishers:counter")
        .option("publisher.count", "5")
        .load()
        .writeStream.format("memory")
        .queryName("shared_env")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        q.awaitTermination(120)
        assert q.exception() is None
    finally:
        q.stop()
    # Spark's driver-side source runner wrote into the map rs_spark swapped in: the very object queries share
    env = _env(spark)
    assert env.getClass().getName() == "java.util.concurrent.ConcurrentHashMap"
    assert env.containsKey("SPARK_PYTHON_RUNTIME") and env.containsKey("PYTHONPATH")


def test_guarding_twice_keeps_the_same_map(spark):
    before = _env(spark)
    assert guard_shared_env(spark) and guard_shared_env(spark)
    assert spark._jvm.System.identityHashCode(_env(spark)) == spark._jvm.System.identityHashCode(before)


def test_a_session_without_a_driver_jvm_is_left_alone():
    class ConnectLike:  # Spark Connect's session has no _jsparkSession: the server's JVM is out of reach
        pass

    assert guard_shared_env(ConnectLike()) is False
