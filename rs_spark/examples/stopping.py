"""Stopping a streaming query between micro-batches, so Spark has nothing to abort.

``query.stop()`` interrupts whatever the query runs. Stopped while a micro-batch's tasks run,
Spark cancels the job and aborts the write, and logs it at ERROR level, for any sink (its own
``noop`` too): ``Data source write support MicroBatchWrite[...] is aborting`` / ``aborted``,
``Aborting task`` with a ``TaskKilledException``, ``Aborting commit for partition``. Nothing is
lost (the aborted batch runs again after a restart; the ``reactive`` sink delivers no batch twice),
but a normal stop should not read like a failure.

Two ways to stop at a boundary instead:

- :class:`Brake` and :func:`stop_at_batch_end`, for a query writing into a Subscriber with
  :func:`rs_spark.write_stream`. The commit that delivers a micro-batch is the last step of that
  batch, and Spark does not interrupt it: ``stop()`` waits for it. So the brake holds the next
  ``on_next`` (a commit with rows is then in progress and waits), the query is stopped from another
  thread, and once Spark has marked it stopped (``isActive`` is false: no batch starts after this
  one) the brake lets the commit finish. The batch is delivered and committed, then the query ends.
- :func:`stop_when_idle`, for any query whose batches are shorter than its processing-time
  trigger: it stops right after a batch ended, while the query waits for its next trigger.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..streams.types import Subscriber, Subscription


class Brake:
    """A Subscriber in front of ``inner`` whose ``on_next`` can be held (see :func:`stop_at_batch_end`)."""

    def __init__(self, inner: Subscriber[Any]) -> None:
        self.inner = inner
        self._open = threading.Event()
        self._open.set()
        self.holding = threading.Event()  # set while an on_next waits at the brake

    def hold(self) -> None:
        """From now on, ``on_next`` waits (in the delivering thread) until :meth:`release`."""
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    def on_subscribe(self, subscription: Subscription) -> None:
        self.inner.on_subscribe(subscription)

    def on_next(self, item: Any) -> None:
        if not self._open.is_set():
            self.holding.set()
            self._open.wait()
            self.holding.clear()
        self.inner.on_next(item)

    def on_error(self, error: BaseException) -> None:
        self.release()
        self.inner.on_error(error)

    def on_complete(self) -> None:
        self.release()
        self.inner.on_complete()


def stop_at_batch_end(query: Any, brake: Brake, timeout: float = 60.0) -> bool:
    """Stop ``query`` (writing into ``brake``) at the end of its next micro-batch that delivers rows.

    Returns True once the query ended at a batch boundary. If no batch delivers rows within
    ``timeout`` seconds, it falls back to :func:`stop_when_idle` (same ``timeout``) and returns
    what that returns.
    """
    brake.hold()
    deadline = time.monotonic() + timeout
    while not brake.holding.wait(0.05):
        if not query.isActive:  # ended by itself (or failed) meanwhile
            brake.release()
            return True
        if time.monotonic() >= deadline:
            brake.release()
            return stop_when_idle(query, timeout)
    failure: list[BaseException] = []

    def stop() -> None:
        try:
            query.stop()  # returns when the query thread ended, after the held commit
        except Exception as exc:  # re-raised in the caller's thread below
            failure.append(exc)

    stopper = threading.Thread(target=stop, name="rs-spark-stop", daemon=True)
    stopper.start()
    # stop() marks the query terminated before it interrupts the query thread: from then on no
    # batch starts, so the held commit may finish (and stop() waits for it).
    while query.isActive and stopper.is_alive():
        time.sleep(0.01)
    brake.release()
    stopper.join()
    if failure:
        raise failure[0]
    return True


def stop_when_idle(query: Any, timeout: float = 60.0, poll: float = 0.02) -> bool:
    """Stop ``query`` right after a micro-batch ended, while it waits for its next trigger.

    Returns True if it stopped while idle, False if it was still busy after ``timeout`` seconds
    (stopped anyway). With batches as long as the trigger interval there is no idle moment.
    """
    deadline = time.monotonic() + timeout
    last = _batch_id(query)
    while query.isActive:
        now = _batch_id(query)
        if now != last and not query.status["isTriggerActive"]:
            query.stop()  # a batch just ended: the next trigger is most of an interval away
            return True
        last = now
        if time.monotonic() >= deadline:
            query.stop()
            return False
        time.sleep(poll)
    return True


def _batch_id(query: Any) -> int:
    p = query.lastProgress
    return -1 if p is None else int(p["batchId"])


__all__ = ["Brake", "stop_at_batch_end", "stop_when_idle"]
