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
  batch. The brake holds the next ``on_next``: a commit with rows is then in progress, and the
  query's thread waits in it, past the point where Spark checks that the query is still active
  before a batch writes. The query is then marked terminated *without* the interrupt that
  ``stop()`` sends (:func:`rs_spark.spark.batch_end.mark_terminated`), and the brake lets the
  commit finish: the batch is delivered and committed, Spark starts no other, and the query's
  thread ends by itself; ``stop()`` then finds nothing to interrupt. On Spark Connect (no driver
  JVM to mark) it falls back to ``stop()`` from another thread while the commit is held.
- :func:`stop_when_idle`, for any query whose batches are shorter than its processing-time
  trigger: it marks the query terminated while its thread waits for the next trigger (seen in
  the thread's stack, the mark withdrawn if the trigger fired meanwhile), so that trigger ends it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..spark.batch_end import mark_terminated
from ..spark.internals import mark_terminated_if_idle
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
    what that returns; if the held batch does not end within ``timeout`` seconds once released,
    the query is stopped (interrupted) and it returns False.
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
    # The query's thread waits in this batch's commit: no batch starts after it once it is marked.
    try:
        marked = mark_terminated(query)
    except BaseException:  # Ctrl-C: never leave the commit held
        brake.release()
        raise
    if not marked:
        return _stop_while_held(query, brake)
    brake.release()
    ended = _await_end(query, timeout)
    query.stop()  # the thread has ended: nothing left to interrupt (else: it is interrupted now)
    return ended


def _await_end(query: Any, timeout: float) -> bool:
    """Wait for ``query``'s thread to end; True if it did (a failure too: ``query.exception()``)."""
    try:
        return bool(query.awaitTermination(timeout))
    except Exception:  # it failed; the caller reads query.exception()
        return True


def _stop_while_held(query: Any, brake: Brake) -> bool:
    """Spark Connect: ``stop()`` from another thread while the commit is held, released once the
    query is marked stopped. Spark's interrupt may still reach the commit (an abort is logged)."""
    failure: list[BaseException] = []

    def stop() -> None:
        try:
            query.stop()
        except Exception as exc:  # re-raised in the caller's thread below
            failure.append(exc)

    stopper = threading.Thread(target=stop, name="rs-spark-stop", daemon=True)
    stopper.start()
    while query.isActive and stopper.is_alive():
        time.sleep(0.01)
    brake.release()
    stopper.join()
    if failure:
        raise failure[0]
    return True


def stop_when_idle(query: Any, timeout: float = 60.0, poll: float = 0.02) -> bool:
    """Stop ``query`` while it waits for its next processing-time trigger: no batch is cut short.

    Returns True if it ended so (or by itself), False if no idle moment came within ``timeout``
    seconds (then it is stopped anyway, interrupted). The query is marked terminated only while its
    thread is seen waiting for its trigger, and the mark is withdrawn when that trigger fired
    meanwhile (:func:`rs_spark.spark.internals.mark_terminated_if_idle`), so the batch it starts is
    never the one interrupted. With batches as long as the trigger interval there is no idle moment.
    """
    deadline = time.monotonic() + timeout
    while query.isActive:
        marked = mark_terminated_if_idle(query)
        if marked is None:  # Spark Connect: no thread to look at
            return _stop_after_a_batch(query, deadline, poll)
        if marked:  # the thread leaves at its next trigger, by itself
            _await_end(query, timeout)
            query.stop()
            return True
        if time.monotonic() >= deadline:
            query.stop()
            return False
        time.sleep(poll)
    return True


def _stop_after_a_batch(query: Any, deadline: float, poll: float) -> bool:
    """Spark Connect: ``stop()`` right after a batch ended, while the query waits for its trigger (a
    trigger that fires between that look and the stop is interrupted: no thread to hold here)."""
    last = _batch_id(query)
    while query.isActive:
        now = _batch_id(query)
        if now != last and not query.status["isTriggerActive"]:
            query.stop()
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
