"""A serial executor: one daemon thread running submitted callables in order.

Each connection has one, so calls into user code (``request``/``cancel`` on a local
Subscription, ``on_next`` on a local Subscriber) never run on the thread that reads the socket:
a slow subscriber cannot stop keepalives from being read, and calls stay serial (rule 2.7).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from ...streams.errors import report_dropped, throw_if_fatal

_STOP = None


class SerialExecutor:
    """Runs submitted callables one at a time, in order, on a daemon thread of its own."""

    def __init__(self, name: str) -> None:
        self._q: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._stopped = False
        self._name = name
        self._thread = self._start()

    def submit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the executor thread; once stopped, run it on the caller's thread."""
        if self._stopped:
            self._call(fn)
            return
        self._q.put(fn)

    def stop(self) -> None:
        """Run what is queued, then end the thread."""
        self._q.put(_STOP)

    def _start(self) -> threading.Thread:
        t = threading.Thread(target=self._run, name=self._name, daemon=True)
        t.start()
        return t

    def _run(self) -> None:
        try:
            self._work()
        except BaseException:
            # A task raised a fatal error (SystemExit, KeyboardInterrupt...; _call lets only those
            # through). It ends this thread as it would any thread, and is not reported as the
            # task's failure. A new thread takes over the queue, so the connection's streams are
            # not left waiting for the tasks queued behind it.
            if not self._stopped:
                self._thread = self._start()
            raise

    def _work(self) -> None:
        get = self._q.get
        while True:
            fn = get()
            if fn is _STOP:
                self._stopped = True
                self._run_rest()
                return
            self._call(fn)

    def _run_rest(self) -> None:
        """Anything that raced in after the stop marker still runs."""
        while True:
            try:
                fn = self._q.get_nowait()
            except queue.Empty:
                return
            if fn is not _STOP:
                self._call(fn)

    @staticmethod
    def _call(fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as exc:  # user code failing must not kill the connection's thread
            throw_if_fatal(exc)  # ... unless it asks the thread to stop: see _run
            report_dropped(exc, "rs_spark.net: a task on a connection's signal thread raised")

    def join(self, timeout: float | None = None) -> None:
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)


def in_background(target: Callable[[], None], name: str) -> None:
    """Run ``target`` on a daemon thread named ``name``."""
    # Opening a connection blocks; subscribe()/on_subscribe() must not (rules 1.9, 2.2).
    threading.Thread(target=target, name=name, daemon=True).start()


__all__ = ["SerialExecutor", "in_background"]
