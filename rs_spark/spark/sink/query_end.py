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

The callbacks do network I/O (an ``end`` message to a remote hub) and remove folders: they run on one daemon
thread of this module (:class:`EndWorker`, fed through a bounded queue), never on Spark's listener-bus thread,
which every query of the driver shares. ``flush()`` waits until the work handed over so far is done.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

from ..internals import end_only_listener, wait_listener_bus

Callback = Callable[[str | None], None]

log = logging.getLogger("rs_spark.sink")

EXIT_WAIT = 30.0
"""Longest the interpreter's exit waits for query-end callbacks under way (seconds)."""
QUEUE_SIZE = 1024
"""Most query ends waiting for the worker; beyond it the listener bus waits (memory stays bounded)."""


class EndWorker:
    """One daemon thread running query-end work in the order it was handed over, off the listener bus."""

    def __init__(self, size: int = QUEUE_SIZE) -> None:
        self._queue: queue.Queue[Callable[[], None]] = queue.Queue(size)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending = 0  # handed over, not yet done
        self._thread: threading.Thread | None = None

    def submit(self, task: Callable[[], None]) -> None:
        """Run ``task`` on the worker (blocks while the queue is full)."""
        with self._lock:
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rs-spark-query-end", daemon=True)
                self._thread.start()
        self._queue.put(task)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every task handed over so far is done; False on ``timeout`` (seconds), or when
        called from the worker itself (it would wait for itself)."""
        if threading.current_thread() is self._thread:
            return False
        with self._lock:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def _run(self) -> None:
        while True:
            task = self._queue.get()
            try:
                task()
            except Exception:  # one callback's failure must not stop the ends of other queries
                log.exception("query end: a callback failed")
            finally:
                with self._lock:
                    self._pending -= 1
                    self._idle.notify_all()


worker = EndWorker()
"""The process's query-end worker (tests call ``worker.flush()`` to wait for the callbacks)."""


class EndOnlyListener(StreamingQueryListener):
    """A listener that reads the ``QueryTerminatedEvent`` only (subclasses define ``onQueryTerminated``)."""

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        pass

    def onQueryIdle(self, event: Any) -> None:
        pass

    @property
    def _jlistener(self) -> Any:
        # pyspark's own wrapper converts every progress event field by field over py4j (about 100 ms
        # of both processes' CPU per micro-batch, profiled in benchmarks/sink.py) before calling
        # onQueryProgress, which ignores it: this one converts the terminated events only.
        obj = getattr(self, "_jlistener_end_only", None)
        if obj is None:
            obj = end_only_listener(_EndOnly(self))
            if obj is None:  # Spark changed its wrapper: pyspark's own one (slower, as correct)
                obj = super()._jlistener
            self._jlistener_end_only = obj
        return obj


class QueryEndListener(EndOnlyListener):
    """Hands each ``QueryTerminatedEvent`` to the session's watched runs."""

    def __init__(self, runs: WatchedRuns) -> None:
        self._runs = runs

    def onQueryTerminated(self, event: Any) -> None:
        # On Spark's listener-bus thread: read the event, hand the work on.
        run, exception = str(event.runId), event.exception
        worker.submit(lambda: self._runs.fire(run, exception))


class _EndOnly:
    """The listener as the JVM calls it (py4j): terminated events converted and passed on, others dropped."""

    def __init__(self, listener: EndOnlyListener) -> None:
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
                self.detach()  # never on the bus thread: fire runs on the worker or the caller's thread

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
        worker.flush(EXIT_WAIT)
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
        if spark is not None and not self._connect:
            wait_listener_bus(spark, int(EXIT_WAIT * 1000))


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


__all__ = ["on_query_end", "watched", "worker", "EndWorker", "EndOnlyListener", "QueryEndListener", "WatchedRuns"]
