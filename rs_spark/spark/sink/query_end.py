"""Query end -> the Subscriber's ``on_complete`` / ``on_error``.

A stream writer has no ``stop()`` hook (Spark runs its commit in short-lived workers), so the end of a query is
observed in the process that started it, by a ``StreamingQueryListener``: one per SparkSession, holding the
callbacks of the runs this process started with :func:`rs_spark.write_stream`; it lives and acts in this process
only.

Callbacks are keyed by the run (``runId``), not the query (``id``): a query stopped and started again from its
checkpoint keeps its id, and the listener bus may deliver the stopped run's ``QueryTerminatedEvent`` after the
restarted run is watched. The listener is registered while a run is watched, and removed when none is left
(classic sessions) and at interpreter exit (after the callbacks under way have returned), so no event reaches a
Python process that is gone.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

Callback = Callable[[str | None], None]

log = logging.getLogger("rs_spark.sink")

EXIT_WAIT = 30.0
"""Longest the interpreter's exit waits for query-end callbacks under way (seconds)."""


class QueryEndListener(StreamingQueryListener):
    """Hands each ``QueryTerminatedEvent`` to the session's watched runs."""

    def __init__(self, runs: WatchedRuns) -> None:
        self._runs = runs

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        pass

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        self._runs.fire(str(event.runId), event.exception)

    @property
    def _jlistener(self) -> Any:
        # pyspark's own wrapper converts every progress event field by field over py4j (about 100 ms
        # of both processes' CPU per micro-batch, profiled in benchmarks/sink.py) before calling
        # onQueryProgress, which ignores it: this one converts the terminated events only.
        from pyspark import SparkContext

        obj = getattr(self, "_jlistener_end_only", None)
        if obj is None:
            jvm = SparkContext._jvm
            assert jvm is not None  # addListener is called on a classic session: its JVM is up
            obj = self._jlistener_end_only = jvm.PythonStreamingQueryListenerWrapper(_EndOnly(self))
        return obj


class _EndOnly:
    """The listener as the JVM calls it (py4j): terminated events converted and passed on, others dropped."""

    def __init__(self, listener: QueryEndListener) -> None:
        self._listener = listener

    def onQueryStarted(self, jevent: Any) -> None:
        pass

    def onQueryProgress(self, jevent: Any) -> None:
        pass

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        from pyspark.sql.streaming.listener import QueryTerminatedEvent

        self._listener.onQueryTerminated(QueryTerminatedEvent.fromJObject(jevent))

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]


class _Watched:
    __slots__ = ("callback", "query")

    def __init__(self, callback: Callback, query: Any) -> None:
        self.callback = callback
        self.query = query


class WatchedRuns:
    """The runs of one SparkSession whose end is awaited, and the listener (registered while any is).

    ``_lock`` guards the runs and is all a listener callback takes; ``_attach`` serialises adding and
    removing the listener (Spark Connect's listener bus holds its own lock while it calls a listener,
    and removing a listener takes that lock: so removal never happens on a callback's thread)."""

    def __init__(self, spark: Any) -> None:
        self._spark = weakref.ref(spark)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._attach = threading.Lock()
        self._runs: dict[str, _Watched] = {}
        self._listener: QueryEndListener | None = None
        self._busy = 0  # callbacks under way
        # Spark Connect's bus calls listeners holding the lock its remove() takes: a callback that starts
        # a query (watch, waiting for a removal under way) could then never return. There the listener
        # stays until exit.
        self._connect = _is_connect(spark)

    @property
    def attached(self) -> bool:
        """Whether the session's listener is registered."""
        return self._listener is not None

    def watch(self, run_id: str, query: Any, callback: Callback) -> None:
        """Call ``callback`` once when run ``run_id`` ends (registering the listener if none is)."""
        with self._attach:
            with self._lock:
                self._runs[run_id] = _Watched(callback, query)
                if self._listener is not None:
                    return
            spark = self._spark()
            if spark is None:
                return
            listener = QueryEndListener(self)
            spark.streams.addListener(listener)
            with self._lock:
                self._listener = listener

    def fire(self, run_id: str, exception: str | None) -> None:
        """Run ``run_id`` ended (``exception``: its failure text): its callback runs, once."""
        with self._lock:
            w = self._runs.pop(run_id, None)
            if w is None:
                return
            self._busy += 1
        try:
            w.callback(exception)
        finally:
            with self._lock:
                self._busy -= 1
                self._idle.notify_all()
                left = bool(self._runs)
            if not left and not self._connect and not _exiting.is_set():
                threading.Thread(target=self.detach, name="rs-spark-query-end-detach", daemon=True).start()

    def detach(self, force: bool = False) -> None:
        """Remove the listener when no run is watched (``force``: in any case)."""
        if not self._attach.acquire(timeout=EXIT_WAIT):
            return
        try:
            with self._lock:
                if (self._runs and not force) or self._listener is None:
                    return
                listener, self._listener = self._listener, None
            spark = self._spark()
            if spark is not None:
                spark.streams.removeListener(listener)
        except Exception as exc:  # the session is stopping: nothing is delivered to it any more
            log.debug("query end: could not remove the listener: %s", exc)
        finally:
            self._attach.release()

    def at_exit(self) -> None:
        """The interpreter exits: end the runs whose query has ended, let the callbacks under way
        return, then remove the listener (a listener left registered makes Spark log a Py4J error
        for the next event it cannot deliver)."""
        with self._lock:
            watched = list(self._runs.items())
        for run, w in watched:
            end = _ended(w.query)
            if end is not None:
                self.fire(run, end[0])
        with self._lock:
            self._idle.wait_for(lambda: self._busy == 0, EXIT_WAIT)
        self.detach(force=True)
        self._drain()

    def _drain(self) -> None:
        """Wait until Spark's listener bus has handed on the events queued so far: a run's
        ``QueryTerminatedEvent`` may still be queued when the run was seen ending by its query (and the
        listener removed). Delivered now, to a process that still answers, rather than after it is gone,
        which Spark logs as an ERROR (seen on pyspark 4.2.1 in 2 of 7 runs of the README's snippets)."""
        spark = self._spark()
        if spark is None or self._connect:
            return
        try:
            spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(int(EXIT_WAIT * 1000))
        except Exception as exc:  # the session is stopping, or the bus did not empty in time
            log.debug("query end: the listener bus did not empty: %s", exc)


def _ended(query: Any) -> tuple[str | None] | None:
    """``(failure text or None,)`` once ``query`` ended, None while it runs. A query whose session was
    stopped (nothing can be asked any more) was stopped with it: no failure."""
    try:
        if query.isActive:
            return None
    except Exception:
        return (None,)
    return (_failure(query),)


def _failure(query: Any) -> str | None:
    try:
        exc = query.exception()
    except Exception as e:
        return str(e) or type(e).__name__
    return None if exc is None else str(exc)


_lock = threading.Lock()
_sessions: weakref.WeakKeyDictionary[Any, WatchedRuns] = weakref.WeakKeyDictionary()  # per SparkSession
_exiting = threading.Event()
_exit_hook = False


def watched(spark: Any) -> WatchedRuns:
    """The session's watched runs (created on first use)."""
    global _exit_hook
    with _lock:
        runs = _sessions.get(spark)
        if runs is None:
            runs = _sessions[spark] = WatchedRuns(spark)
        if not _exit_hook:
            # Registered once a session exists, so it runs before pyspark's own exit hooks (atexit
            # runs them last registered, first): the JVM or Connect client is still there.
            atexit.register(_at_exit)
            _exit_hook = True
    return runs


def _at_exit() -> None:
    _exiting.set()
    with _lock:
        sessions = list(_sessions.values())
    for runs in sessions:
        runs.at_exit()


def on_query_end(spark: Any, query: Any, callback: Callback) -> None:
    """Call ``callback(None)`` when this run of ``query`` stops, ``callback(error_text)`` when it fails."""
    runs = watched(spark)
    run = str(query.runId)
    runs.watch(run, query, callback)
    if not query.isActive:  # ended before the callback was registered
        runs.fire(run, _failure(query))
    elif _is_connect(spark):
        # Spark Connect delivers listener events over a gRPC stream; with pyspark 4.3.0 we saw a
        # client miss a QueryTerminatedEvent the server's log says it sent (a session that had
        # run a query before; not reproducible at will). So also wait for the end here;
        # whichever comes first fires, once.
        threading.Thread(
            target=_await_end, args=(query, runs, run), name=f"rs-spark-query-end {run}", daemon=True
        ).start()


def _await_end(query: Any, runs: WatchedRuns, run: str) -> None:
    try:
        query.awaitTermination()
        text = _failure(query)
    except Exception as e:  # a failed query raises here; its text is what the listener would carry
        text = str(e) or type(e).__name__
    runs.fire(run, text)


def _is_connect(spark: Any) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


__all__ = ["on_query_end", "watched", "QueryEndListener", "WatchedRuns"]
