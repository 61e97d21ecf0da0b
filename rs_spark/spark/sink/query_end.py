"""Query end -> the Subscriber's ``on_complete`` / ``on_error``.

A stream writer has no ``stop()`` hook (Spark runs its commit in short-lived workers), so the end of a query is
observed in the process that started it, by a ``StreamingQueryListener``. One listener per
SparkSession, holding the callbacks of the queries this process started with
:func:`rs_spark.write_stream`; it lives and acts in this process only.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

Callback = Callable[[str | None], None]


class QueryEndListener(StreamingQueryListener):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: dict[str, Callback] = {}

    def watch(self, query_id: str, callback: Callback) -> None:
        with self._lock:
            self._callbacks[query_id] = callback

    def fire(self, query_id: str, exception: str | None) -> None:
        with self._lock:
            cb = self._callbacks.pop(query_id, None)
        if cb is not None:
            cb(exception)

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        pass

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        self.fire(str(event.id), event.exception)


_attach_lock = threading.Lock()
_listeners: weakref.WeakKeyDictionary[Any, QueryEndListener] = weakref.WeakKeyDictionary()  # per SparkSession


def on_query_end(spark: Any, query: Any, callback: Callback) -> None:
    """Call ``callback(None)`` when ``query`` stops, ``callback(error_text)`` when it fails."""
    with _attach_lock:
        listener = _listeners.get(spark)
        if listener is None:
            listener = QueryEndListener()
            spark.streams.addListener(listener)
            _listeners[spark] = listener
    qid = str(query.id)
    listener.watch(qid, callback)
    if not query.isActive:  # ended before the callback was registered
        exc = query.exception()
        listener.fire(qid, None if exc is None else str(exc))
    elif _is_connect(spark):
        # Spark Connect delivers listener events over a gRPC stream; with pyspark 4.3.0 we saw a
        # client miss a QueryTerminatedEvent the server's log says it sent (a session that had
        # run a query before; not reproducible at will). So also wait for the end here;
        # whichever comes first fires, once.
        threading.Thread(
            target=_await_end, args=(query, listener, qid), name=f"rs-spark-query-end {qid}", daemon=True
        ).start()


def _await_end(query: Any, listener: QueryEndListener, qid: str) -> None:
    try:
        query.awaitTermination()
        exc = query.exception()
        text = None if exc is None else str(exc)
    except Exception as e:  # a failed query raises here; its text is what the listener would carry
        text = str(e) or type(e).__name__
    listener.fire(qid, text)


def _is_connect(spark: Any) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


__all__ = ["on_query_end", "QueryEndListener"]
