"""End a streaming query after the micro-batch it runs now, without interrupting anything.

``StreamingQuery.stop()`` marks the query terminated, cancels its jobs and interrupts its thread.
Whatever that thread does then is cut short: a micro-batch's tasks are killed, or the sink's
commit, which a Python sink runs in a Python process reached over an interruptible channel,
fails (and with it pyspark's accumulator channel, which the same thread was using: the driver's
accumulator server then prints an ``EOFError`` traceback). Spark aborts the write and logs
``MicroBatchWrite[...] is aborting`` / ``failed to abort`` at ERROR level. Spark plans the next
micro-batch as soon as one ends, so no moment chosen from outside is safely "between batches".

Spark's micro-batch loop (``MicroBatchExecution.executeOneBatch``, Spark 3.5 to 4.x) reads the
query's state before each trigger and after each batch, and ``runBatch`` interrupts its own
thread if the query is no longer active when a batch starts its write. So marking the query
terminated *while its thread is inside a batch's write or commit* (for the ``reactive`` sink:
while :class:`~rs_spark.examples.stopping.Brake` holds a delivery) lets that batch end normally,
its commit and commit-log entry included, and starts no other: the thread then leaves the loop by
itself and the query ends as a stopped one. :func:`mark_terminated` does that marking. It uses
the classic driver's JVM objects (``StreamExecution.state``: :mod:`rs_spark.spark.internals`), so it
returns False on Spark Connect, or on a Spark whose internals differ; callers fall back to ``stop()``.
"""

from __future__ import annotations

from typing import Any

from . import internals


def mark_terminated(query: Any) -> bool:
    """Mark ``query`` terminated without interrupting its thread; True if this call marked it.

    Call it only while the query's thread is past the start of a batch's write (e.g. a commit held
    at a :class:`~rs_spark.examples.stopping.Brake`) or waits for its next trigger: marked while a
    trigger plans its batch, Spark's ``runBatch`` interrupts that batch itself. Then wait for the
    query to end (``awaitTermination``). A compare-and-set from ACTIVE, as Spark's own end does:
    a query that ended meanwhile, or is not yet active, is left as it is (False).
    """
    return internals.mark_terminated(query)


__all__ = ["mark_terminated"]
