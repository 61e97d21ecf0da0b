"""Plain ``writeStream.format("reactive").outputMode("update")``: refused at ``start()`` with rs_spark's message, or
Spark's refusal and what to use instead.

Spark refuses output mode ``update`` for every Python data source sink: ``StreamExecution.createWrite``, in the
query's thread as it plans the first micro-batch (after ``start()`` returned), requires the sink's
``WriteBuilder`` to be a ``SupportsStreamingUpdateAsAppend``, and Spark's ``PythonWriteBuilder`` is only a
``SupportsTruncate``. No code of the data source runs in between (``PythonTable.newWriteBuilder`` calls no Python;
the DataSource's ``streamWriter`` would come after), and none of it is told the output mode: at ``start()`` Spark
creates the DataSource in a Python worker with the writer's options alone. So that exception's text is Spark's
(``requirement failed: reactive does not support Update mode``, the format as typed).

Two places can say more:

- The shim's session extension (:data:`rs_spark.spark.jvm.EXTENSIONS`, set by ``local_session``): an analyzer
  check rule sees the ``WriteToStream`` plan's output mode and sink while ``start()`` analyses it, and throws
  ``IllegalArgumentException`` naming the query and :data:`ADVICE`; ``start()`` raises it, nothing starts.
  ``spark.sql.extensions`` is static: it must be set when the session is built, with the shim jar on
  ``spark.jars``.
- For a classic session without it, :func:`watch` (called by :func:`rs_spark.spark.register`, so by
  ``read_stream`` and ``write_stream`` too) adds a listener that, when a query ends with Spark's refusal, logs at
  ERROR level what to use instead (:data:`ADVICE`). Not on Spark Connect: its listener bus calls a client's
  listeners over gRPC, and one left registered outlives the query.
"""

from __future__ import annotations

import atexit
import logging
import re
import threading
import weakref
from typing import Any

from .query_end import EndOnlyListener

log = logging.getLogger("rs_spark.sink")

REFUSAL = "reactive does not support Update mode"
"""What Spark's exception says when a query writes ``format("reactive")`` in update mode (in the case the format
was typed in: compared without case)."""
_REFUSED = re.compile(r"(?<![\w.-])" + re.escape(REFUSAL), re.IGNORECASE)

ADVICE = (  # the shim's rsspark.spark.ReactiveExtensions says the same (tests/spark/test_sink_update.py compares)
    "writeStream.format('reactive') cannot write output mode update: Spark refuses it for every Python data source "
    "sink. Use rs_spark.write_stream(df, subscriber, output_mode='update') (a Subscriber in this process, or the "
    "address of one served with rs_spark.serve_sink), or, for a served Subscriber, "
    "df.writeStream.foreachBatch(rs_spark.spark.sink.each_batch.deliver_each_batch(ep.address)).outputMode('update'): "
    "both deliver each micro-batch through the same hub and ledger, exactly once; or use output mode append or "
    "complete with format('reactive')"
)


def explain(exception: str | None) -> str | None:
    """What to use instead, when a query's failure text is Spark's refusal of update mode for the sink; else None."""
    return ADVICE if exception and _REFUSED.search(exception) else None


class ModeRefusalListener(EndOnlyListener):
    """Logs :data:`ADVICE` for each query of the session that ends with Spark's refusal of update mode."""

    def onQueryTerminated(self, event: Any) -> None:
        advice = explain(event.exception)
        if advice is not None:
            log.error("query %s (run %s) failed at its start: %s", event.id, event.runId, advice)


_lock = threading.Lock()
_watched: weakref.WeakKeyDictionary[Any, ModeRefusalListener] = weakref.WeakKeyDictionary()


def watch(spark: Any) -> None:
    """Add the :class:`ModeRefusalListener` to ``spark`` (once; classic sessions only), removed at exit."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return
    with _lock:
        if spark in _watched:
            return
        first = not _watched
        listener = _watched[spark] = ModeRefusalListener()
    spark.streams.addListener(listener)
    if first:
        # Registered after the session's own exit hooks: atexit runs it before them, with the JVM still there.
        atexit.register(_remove_all)


def _remove_all() -> None:
    with _lock:
        watched = list(_watched.items())
        _watched.clear()
    for spark, listener in watched:
        try:
            spark.streams.removeListener(listener)
        except Exception as exc:  # the session is stopping: no event reaches it any more
            log.debug("mode refusal: could not remove the listener: %s", exc)


__all__ = ["ADVICE", "REFUSAL", "ModeRefusalListener", "explain", "watch"]
