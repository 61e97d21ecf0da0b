"""A workaround for a Spark race: the registered data source's environment map, shared by every query.

Spark keeps one ``PythonFunction`` per registered Python data source, and every query of that
source copies the reference to its ``envVars`` map. The driver-side runner of a Python streaming
source (``PythonStreamingSourceRunner.init``, run when a query plans its first micro-batch) puts
``SPARK_LOCAL_DIRS``, ``SPARK_AUTH_SOCKET_TIMEOUT``, ``SPARK_BUFFER_SIZE`` and
``SPARK_PYTHON_RUNTIME`` into that shared map instead of a copy. For a data source Spark discovers
(a ``pyspark_*`` module, as ``reactive`` is once rs_spark is installed) the map is a Scala
``mutable.HashMap``: two queries starting together put into it from two threads, and its size can
end one higher than its entries (a lost insert). From then on every micro-batch whose job closure
holds the data source fails to serialize: ``Task not serializable ... IllegalStateException:
Illegal size 5 of collection, expected 6``. See docs/guarantees.md.

rs_spark swaps that map for a ``ConcurrentHashMap`` with the same entries before its queries
start, so concurrent puts and serialization are safe (the reflection: :mod:`rs_spark.spark.internals`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from .internals import make_env_thread_safe

log = logging.getLogger("rs_spark.spark")

_lock = threading.Lock()


def guard_shared_env(spark: Any, name: str = "reactive") -> bool:
    """Make the registered data source ``name``'s shared ``envVars`` map thread-safe in the driver JVM.

    Call it before the source's queries start (``register`` and ``local_session`` do). True when the
    map is (now) a ``ConcurrentHashMap``; False where there is no driver JVM here (Spark Connect) or
    Spark's classes differ (then a warning says so).
    """
    with _lock:
        try:
            return make_env_thread_safe(spark, name)
        except Exception as exc:  # another Spark version's classes: keep working, say what is at risk
            log.warning(
                "could not make data source %r's shared environment map thread-safe (%s): several queries "
                "starting at once in this driver may fail with 'Task not serializable ... Illegal size N of "
                "collection'; start one query and wait for its first progress before starting the others (see "
                "docs/guarantees.md)",
                name,
                exc,
            )
            return False


__all__ = ["guard_shared_env"]
