"""Every reach into Spark's internals, in one place: what each relies on, where it was checked, what
happens when it is missing.

rs_spark uses public pyspark API everywhere else. Where no public API does the job, the reach is a
function here, and :data:`REACHES` names, per reach, the Spark class and member it relies on, the
Spark versions it was checked on, and its fallback. tests/spark/test_internals.py checks each one on a
real local session (run on pyspark 4.3 and, by ``.ci/spark42``, on 4.2): when Spark changes one of
them, that test fails naming it. All of them need the classic driver's JVM; on Spark Connect each
one takes its fallback.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("rs_spark.spark")

CHECKED = ("4.2.1", "4.3.0")
"""The pyspark versions every reach below was checked on (CI: .venv and .ci/spark42)."""


@dataclass(frozen=True)
class Reach:
    """One reach into Spark's internals."""

    name: str
    """The function of this module that makes it."""
    relies_on: str
    """The Spark (or pyspark) class and member it uses."""
    used_by: str
    """The rs_spark module that calls it, and why no public API does."""
    when_missing: str
    """What rs_spark does when Spark no longer has it."""
    checked: tuple[str, ...] = CHECKED
    """The pyspark versions it was checked on."""


REACHES = (
    Reach(
        "mark_terminated",
        "org.apache.spark.sql.execution.streaming[.runtime].StreamExecution.state() (an AtomicReference) and the "
        "State objects ACTIVE$ / TERMINATED$; compareAndSet(ACTIVE, TERMINATED), as Spark's own end does",
        "spark/batch_end.py: end a query after its batch without the interrupt stop() sends",
        "returns False; the caller stops the query with stop() (the batch under way is interrupted)",
    ),
    Reach(
        "mark_terminated_if_idle",
        "StreamExecution.queryExecutionThread() (its stack, from the JDK's ThreadMXBean: Clock.waitTillTime "
        "called by ProcessingTimeExecutor.execute), StreamExecution.awaitProgressLock() (a ReentrantLock that "
        "MicroBatchExecution.constructNextBatch takes) and the state of mark_terminated",
        "examples/stopping.py stop_when_idle: stop between batches, never inside one",
        "returns None; stop_when_idle stops the query right after a batch ended (a trigger in between is interrupted)",
    ),
    Reach(
        "make_env_thread_safe",
        "the registered data source's PythonFunction (dataSourceManager().lookupDataSource(name).dataSourceCls()): "
        "its final field envVars, replaced by reflection",
        "spark/shared_env.py: Spark's source runner puts into that shared map from each query's thread",
        "returns False; shared_env logs a warning naming the risk and the way round it (start queries one by one)",
    ),
    Reach(
        "end_only_listener",
        "pyspark's StreamingQueryListener._jlistener (read by StreamingQueryManager.addListener) and the JVM "
        "class org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper(PythonStreamingQueryListener)",
        "spark/sink/query_end.py: pyspark's own wrapper converts every progress event over py4j (~100 ms/batch)",
        "returns None; the listener keeps pyspark's own wrapper (correct, only slower)",
    ),
    Reach(
        "wait_listener_bus",
        "SparkContext.listenerBus() (private[spark] in Scala, public in bytecode) and "
        "LiveListenerBus.waitUntilEmpty(long)",
        "spark/sink/query_end.py at exit: hand queued query-end events on while this process still answers",
        "returns False; Spark may log an ERROR for an event it cannot deliver to the exited process",
    ),
    Reach(
        "wrap_query",
        "pyspark.sql.streaming.query.StreamingQuery(jsq): the constructor taking the JVM query (only for a query "
        "that ended before spark.streams.get could find it)",
        "spark/realtime/queries.py: the query is started through the JVM DataStreamWriter (foreach(ForeachWriter))",
        "a RuntimeError saying the query ended at once and pointing at the driver's log",
    ),
    Reach(
        "add_to_driver_classpath",
        "the driver thread's context class loader, org.apache.spark.util.MutableURLClassLoader.addURL(URL), and "
        "JavaSparkContext.addJar(String)",
        "spark/jvm.py: the shim jar joins a session that was started without it on spark.jars",
        "raises ShimNotFound naming the loader found and the fix: configure(SparkSession.builder) or --jars",
    ),
)


# -- StreamExecution.state ------------------------------------------------------------------------


def mark_terminated(query: Any) -> bool:
    """Move ``query``'s state from ACTIVE to TERMINATED without interrupting its thread.

    True if this call moved it; False if the query was not ACTIVE (ended, or still initialising) or
    has no driver JVM here (Spark Connect) or Spark's classes differ: then nothing was changed.
    """
    try:
        state = query._jsq.streamingQuery().state()
        active, terminated = _states(state.get())
    except Exception as exc:  # Spark Connect (no _jsq), or another Spark's internals
        log.debug("rs_spark: cannot mark query %s terminated (%s)", _name(query), exc)
        return False
    return bool(state.compareAndSet(active, terminated))


def _states(current: Any) -> tuple[Any, Any]:
    """Spark's (ACTIVE, TERMINATED) State singletons, found beside ``current``'s class (the package
    moved to ``...streaming.runtime`` in Spark 4.1)."""
    cls = current.getClass()
    package = cls.getName().rsplit(".", 1)[0]
    loader = cls.getClassLoader()

    def module(name: str) -> Any:
        return loader.loadClass(f"{package}.{name}$").getField("MODULE$").get(None)

    return module("ACTIVE"), module("TERMINATED")


def mark_terminated_if_idle(query: Any) -> bool | None:
    """Mark ``query`` terminated only while its thread waits for its next processing-time trigger.

    True if marked so: that trigger reads TERMINATED and ends the query before any batch starts.
    False, the state left ACTIVE, while a batch runs or when the trigger fires between the look and
    the mark. None without a driver JVM (Spark Connect) or with other Spark internals. It holds the
    query's ``awaitProgressLock`` throughout: a trigger that fires meanwhile cannot construct its
    batch (``constructNextBatch`` takes that lock) before the mark is withdrawn, so it runs unharmed.
    """
    from py4j.clientserver import ClientServer
    from pyspark import SparkContext

    if not isinstance(SparkContext._gateway, ClientServer):
        return None  # py4j not pinning threads: the lock could be taken and released on two JVM threads
    try:
        execution = query._jsq.streamingQuery()
        thread, lock = execution.queryExecutionThread(), execution.awaitProgressLock()
        jvm = SparkContext._jvm
    except Exception as exc:  # Spark Connect (no _jsq), or another Spark's internals
        log.debug("rs_spark: cannot see whether query %s is idle (%s)", _name(query), exc)
        return None
    if not lock.tryLock():  # the thread constructs or ends a batch now: not idle
        return False
    try:
        try:
            idle = _waits_for_trigger(jvm, thread)
        except Exception as exc:  # the JDK's thread view differs: cannot tell
            log.debug("rs_spark: cannot read query %s's thread (%s)", _name(query), exc)
            return None
        if not idle or not mark_terminated(query):
            return False
        if _still_waits(jvm, thread):  # still waiting after the mark: its trigger reads it
            return True
        # It woke in between and may have read ACTIVE: withdraw the mark. (Had it read TERMINATED,
        # it ends anyway: the end of its run sets TERMINATED again.)
        active, terminated = _states(execution.state().get())
        execution.state().compareAndSet(terminated, active)
        return False
    finally:
        lock.unlock()


def _still_waits(jvm: Any, thread: Any) -> bool:
    """The look after the mark: any doubt counts as awake (the mark is then withdrawn)."""
    try:
        return _waits_for_trigger(jvm, thread)
    except Exception:  # worked a moment ago: treat as awake
        return False


def _waits_for_trigger(jvm: Any, thread: Any) -> bool:
    """Whether ``thread`` is in ``Clock.waitTillTime`` called by ``ProcessingTimeExecutor.execute``:
    past one batch's end and before the next trigger reads the query's state. (ThreadInfo's text
    holds the top 8 frames; the wait is 2 or 3 deep.)"""
    info = jvm.java.lang.management.ManagementFactory.getThreadMXBean().getThreadInfo(thread.getId(), 8)
    frames = [ln.strip() for ln in str(info).splitlines() if ln.strip().startswith("at ")] if info else []
    for i, frame in enumerate(frames[:-1]):
        if ".waitTillTime(" in frame:
            return "ProcessingTimeExecutor.execute(" in frames[i + 1]
    return False


def _name(query: Any) -> str:
    try:
        return str(query.name or query.id)
    except Exception:
        return "?"


# -- the data source's envVars ------------------------------------------------------------------------

_CONCURRENT = "java.util.concurrent.ConcurrentHashMap"


def make_env_thread_safe(spark: Any, name: str) -> bool:
    """Swap data source ``name``'s shared ``envVars`` map for a ``ConcurrentHashMap`` with its entries.

    True when it is one (now); False without a driver JVM (Spark Connect). Raises what py4j raises
    when Spark's classes differ (the caller says what is at risk)."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:  # Spark Connect: the server's JVM is out of reach
        return False
    function = jsession.sessionState().dataSourceManager().lookupDataSource(name).dataSourceCls()
    env = function.envVars()
    if env.getClass().getName() == _CONCURRENT:
        return True
    field = function.getClass().getDeclaredField("envVars")
    field.setAccessible(True)  # a final field of a case class: no setter exists
    field.set(function, spark._jvm.java.util.concurrent.ConcurrentHashMap(env))
    return True


def data_source_exists(spark: Any, name: str) -> bool | None:
    """Whether ``name`` is a registered data source; None when that cannot be asked (Spark Connect)."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return None
    try:
        return bool(jsession.sessionState().dataSourceManager().dataSourceExists(name))
    except Exception as exc:  # another Spark's internals: the caller registers anyway
        log.debug("rs_spark: cannot ask whether data source %r exists (%s)", name, exc)
        return None


# -- the streaming query listener -------------------------------------------------------------------

LISTENER_WRAPPER = "PythonStreamingQueryListenerWrapper"


def end_only_listener(python_listener: Any) -> Any | None:
    """The JVM listener over ``python_listener`` (a py4j callback implementing
    ``org.apache.spark.sql.streaming.PythonStreamingQueryListener``); None when it cannot be made
    (the caller then lets pyspark wrap its listener)."""
    from pyspark import SparkContext

    jvm = SparkContext._jvm
    if jvm is None:
        return None
    try:
        return getattr(jvm, LISTENER_WRAPPER)(python_listener)
    except Exception as exc:  # the wrapper moved or changed: pyspark's own wrapper still works
        log.debug("rs_spark: %s unavailable (%s); pyspark's listener wrapper is used", LISTENER_WRAPPER, exc)
        return None


def wait_listener_bus(spark: Any, timeout_ms: int) -> bool:
    """Wait until the driver's listener bus has handed on the events queued so far; False if it could
    not be asked or did not empty in time."""
    try:
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(int(timeout_ms))
        return True
    except Exception as exc:  # the session is stopping, the bus did not empty, or Spark changed
        log.debug("rs_spark: the listener bus did not empty: %s", exc)
        return False


# -- a StreamingQuery over a JVM query --------------------------------------------------------------


def wrap_query(spark: Any, jquery: Any) -> Any:
    """The pyspark ``StreamingQuery`` over ``jquery`` (started through the JVM's DataStreamWriter)."""
    query = spark.streams.get(str(jquery.id().toString()))  # public, for the queries still active
    if query is not None:
        return query
    try:  # it ended already (failed at once): only pyspark's private constructor wraps it now
        from pyspark.sql.streaming.query import StreamingQuery

        return StreamingQuery(jquery)
    except Exception as exc:
        raise RuntimeError(
            f"query {jquery.id().toString()} started in the JVM and ended at once, and this pyspark cannot wrap an "
            f"ended query (StreamingQuery(jsq): {exc}); see the driver's log for why it ended"
        ) from exc


# -- the driver's class loader ------------------------------------------------------------------------

MUTABLE_LOADER = "org.apache.spark.util.MutableURLClassLoader"


def add_to_driver_classpath(spark: Any, paths: list[str]) -> None:
    """Add the jars at ``paths`` to the driver's class loader, and with ``addJar`` for executors."""
    from ..jvm.gateway import ShimNotFound

    j: Any = spark._jvm
    loader = j.Thread.currentThread().getContextClassLoader()
    if loader.getClass().getName() != MUTABLE_LOADER:
        raise ShimNotFound(
            f"cannot add {paths} to this driver's class loader ({loader.getClass().getName()}, not {MUTABLE_LOADER}); "
            "start the session with rs_spark.spark.jvm.configure(SparkSession.builder) or --jars instead"
        )
    for p in paths:
        loader.addURL(j.java.io.File(os.path.abspath(p)).toURI().toURL())
        spark.sparkContext._jsc.addJar(p)


__all__ = [
    "CHECKED",
    "Reach",
    "REACHES",
    "mark_terminated",
    "mark_terminated_if_idle",
    "make_env_thread_safe",
    "data_source_exists",
    "end_only_listener",
    "wait_listener_bus",
    "wrap_query",
    "add_to_driver_classpath",
]
