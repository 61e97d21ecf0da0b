"""Each reach into Spark's internals (rs_spark/spark/internals.py) against the installed Spark.

These fail when Spark renames, moves or re-types what a reach relies on: the class, the member and its
signature are checked by reflection on a real local session, and each reach is made once. .ci/spark42
runs this file on pyspark 4.2 too; the suite runs it on the newest pyspark in .venv.
"""

from __future__ import annotations

import inspect

import pyspark
import pytest
from pyspark.sql.streaming import StreamingQueryListener, StreamingQueryManager
from pyspark.sql.streaming.query import StreamingQuery

from rs_spark.jvm.gateway import jar_path
from rs_spark.spark import internals, register
from rs_spark.spark.sink.query_end import QueryEndListener, watched
from tests.waits import wait_until


def _class(spark, name):
    loader = spark._jvm.Thread.currentThread().getContextClassLoader()
    return spark._jvm.Class.forName(name, True, loader)


def _method(cls, name, *params):
    """``cls``'s public method ``name`` taking ``params`` (class names), or an AssertionError."""
    for m in cls.getMethods():
        if m.getName() == name and [p.getName() for p in m.getParameterTypes()] == list(params):
            return m
    raise AssertionError(f"{cls.getName()} has no public method {name}({', '.join(params)})")


@pytest.fixture
def idle_query(spark, tmp_path):
    """A running query that has ended its first batch and waits for its next trigger (1 s away)."""
    q = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", "1")
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(processingTime="1 second")
        .start()
    )
    wait_until(lambda: q.lastProgress is not None, "the first batch")
    yield q
    q.stop()


def test_every_reach_is_a_function_here_checked_on_this_spark_with_a_stated_fallback():
    names = [r.name for r in internals.REACHES]
    assert len(names) == len(set(names))
    for r in internals.REACHES:
        assert callable(getattr(internals, r.name)), r.name
        assert r.relies_on and r.used_by and r.when_missing, r
    # A new Spark minor is checked (and added to CHECKED) before rs_spark claims it works there.
    minor = ".".join(pyspark.__version__.split(".")[:2])
    assert any(v.startswith(minor + ".") for v in internals.CHECKED), (pyspark.__version__, internals.CHECKED)


def test_mark_terminated_moves_an_active_query_to_terminated_once_and_it_ends_without_an_error(idle_query):
    jstate = idle_query._jsq.streamingQuery().state()
    assert jstate.getClass().getName() == "java.util.concurrent.atomic.AtomicReference"
    assert jstate.get().getClass().getSimpleName() == "ACTIVE$"
    assert internals.mark_terminated(idle_query) is True
    assert jstate.get().getClass().getSimpleName() == "TERMINATED$"
    assert internals.mark_terminated(idle_query) is False  # compare-and-set: not ACTIVE any more
    assert idle_query.awaitTermination(60)
    assert idle_query.exception() is None


def test_an_idle_query_s_thread_waits_in_the_trigger_clock_and_its_progress_lock_is_free(spark, tmp_path):
    q = (
        spark.readStream.format("rate")
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(processingTime="10 seconds")  # room for the looks below before the next trigger
        .start()
    )
    try:
        wait_until(lambda: q.lastProgress is not None, "the first batch")
        execution = q._jsq.streamingQuery()
        lock = execution.awaitProgressLock()
        assert lock.getClass().getName() == "java.util.concurrent.locks.ReentrantLock"
        assert not lock.isLocked()
        thread = execution.queryExecutionThread()
        assert internals._waits_for_trigger(spark._jvm, thread)
        batches = execution.lastExecution().currentBatchId()
        assert internals.mark_terminated_if_idle(q) is True
        # The mark alone makes isActive false; the query ends when its thread, woken by the next
        # trigger, reads it and returns without starting a batch.
        wait_until(lambda: not thread.isAlive(), "the query's thread to end at its next trigger", 60)
        assert execution.lastExecution().currentBatchId() == batches, "a batch started after the mark"
        assert q.exception() is None
    finally:
        q.stop()


def test_mark_terminated_without_a_driver_jvm_changes_nothing():
    class ConnectLike:  # Spark Connect's query has no _jsq
        name = "q"

    assert internals.mark_terminated(ConnectLike()) is False


def test_the_data_source_env_map_is_a_field_reflection_can_replace(spark):
    register(spark)
    assert internals.data_source_exists(spark, "reactive") is True
    assert internals.data_source_exists(spark, "no-such-source") is False
    function = spark._jsparkSession.sessionState().dataSourceManager().lookupDataSource("reactive").dataSourceCls()
    field = function.getClass().getDeclaredField("envVars")
    assert field.getType().getName() == "java.util.Map"
    assert internals.make_env_thread_safe(spark, "reactive") is True
    assert function.envVars().getClass().getName() == "java.util.concurrent.ConcurrentHashMap"


def test_pyspark_reads_the_listeners_jlistener_and_the_jvm_wrapper_takes_a_python_listener(spark):
    assert isinstance(vars(StreamingQueryListener)["_jlistener"], property)
    assert "_jlistener" in inspect.getsource(StreamingQueryManager.addListener)
    wrapper = _class(spark, "org.apache.spark.sql.streaming." + internals.LISTENER_WRAPPER)
    ctors = [[p.getName() for p in c.getParameterTypes()] for c in wrapper.getConstructors()]
    assert ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"] in ctors, ctors
    listener = _class(spark, "org.apache.spark.sql.streaming.PythonStreamingQueryListener")
    events = {m.getName() for m in listener.getMethods()}
    assert {"onQueryStarted", "onQueryProgress", "onQueryIdle", "onQueryTerminated"} <= events


class _Hearing(QueryEndListener):
    """The query-end listener, noting which events reach its Python side."""

    def __init__(self, runs) -> None:
        super().__init__(runs)
        self.heard: list[str] = []

    def onQueryProgress(self, event) -> None:
        self.heard.append("progress")

    def onQueryTerminated(self, event) -> None:
        self.heard.append("terminated")


def test_the_query_end_listener_uses_the_end_only_wrapper_and_hears_no_progress_event(spark, idle_query):
    """pyspark's own wrapper converts every progress event over py4j; the end-only one passes the
    terminated events only. With it in use, the listener hears the query end and none of its batches."""
    listener = _Hearing(watched(spark))
    spark.streams.addListener(listener)  # reads listener._jlistener
    try:
        jlistener = listener._jlistener
        assert jlistener.getClass().getName() == "org.apache.spark.sql.streaming." + internals.LISTENER_WRAPPER
        assert not hasattr(listener, "_jlistenerobj"), "pyspark's own wrapper was made: end_only_listener fell back"
        batch = idle_query.lastProgress["batchId"]
        wait_until(lambda: idle_query.lastProgress["batchId"] > batch, "a micro-batch while the listener listens")
        idle_query.stop()
        assert internals.wait_listener_bus(spark, 60_000)
        assert listener.heard == ["terminated"]
    finally:
        spark.streams.removeListener(listener)


def test_the_listener_bus_can_be_waited_for(spark):
    bus = _method(_class(spark, "org.apache.spark.SparkContext"), "listenerBus").getReturnType()
    assert bus.getName() == "org.apache.spark.scheduler.LiveListenerBus"
    _method(bus, "waitUntilEmpty", "long")
    assert internals.wait_listener_bus(spark, 10_000) is True


def test_a_running_jvm_query_is_found_and_an_ended_one_wrapped_by_pyspark_s_constructor(idle_query, spark):
    assert list(inspect.signature(StreamingQuery.__init__).parameters) == ["self", "jsq"]
    running = internals.wrap_query(spark, idle_query._jsq)
    assert type(running) is StreamingQuery and running.id == idle_query.id and running.isActive
    idle_query.stop()
    ended = internals.wrap_query(spark, idle_query._jsq)
    assert type(ended) is StreamingQuery and ended.id == idle_query.id and not ended.isActive


def test_the_driver_class_loader_takes_jars(spark):
    loader = spark._jvm.Thread.currentThread().getContextClassLoader()
    assert loader.getClass().getName() == internals.MUTABLE_LOADER
    _method(loader.getClass(), "addURL", "java.net.URL")
    _method(_class(spark, "org.apache.spark.api.java.JavaSparkContext"), "addJar", "java.lang.String")
    internals.add_to_driver_classpath(spark, [jar_path()])  # twice is harmless: the loader keeps one URL
    assert _class(spark, "rsspark.jvm.Sources").getName() == "rsspark.jvm.Sources"
