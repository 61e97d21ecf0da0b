"""Cancel the subscription when Spark ends the reader process with SIGTERM, re-entrancy safe.

Spark destroys the reader process with SIGTERM, often twice (its worker factory's stopWorker and
stopDaemon both call ``Process.destroy``). A Python signal handler runs on the main thread between
two bytecodes, so a second signal re-enters the handler wherever the first one is, possibly inside
a lock (an ``Event.set``) that the same thread already holds: a deadlock that left reader processes
alive after their query. So the handler takes no lock and calls nothing of ours: it writes one byte
to a pipe. A normal thread waits on that pipe, runs ``stop`` once and ends the process the way
SIGTERM's default action would have (the main thread is blocked reading from the JVM).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

log = logging.getLogger("rs_spark.source")

EXIT_STATUS = 128 + signal.SIGTERM
"""The status a shell reports for a process that SIGTERM ended."""


class SigtermStop:
    """On SIGTERM, run ``stop`` on a normal thread, then exit with :data:`EXIT_STATUS`."""

    def __init__(self, stop: Callable[[], None], exit_process: Callable[[int], object] = os._exit) -> None:
        self._stop = stop
        self._exit = exit_process
        self._read_fd, self._write_fd = os.pipe()  # not inherited by child processes (PEP 446)
        os.set_blocking(self._write_fd, False)

    def install(self) -> bool:
        """Install the handler; False where this thread cannot (only the main thread may)."""
        if threading.current_thread() is not threading.main_thread():
            return False
        try:
            signal.signal(signal.SIGTERM, self._on_signal)
        except ValueError:  # not the interpreter's main thread after all
            return False
        threading.Thread(target=self._stop_then_exit, name="rs-reactive-sigterm", daemon=True).start()
        return True

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Re-entrant by construction: one write to a non-blocking pipe, no lock, nothing else.
        # A full pipe (many signals) already holds the byte the stopping thread needs.
        try:
            os.write(self._write_fd, b"\0")
        except OSError:
            pass

    def _stop_then_exit(self) -> None:
        os.read(self._read_fd, 1)
        try:
            self._stop()
        except Exception as exc:  # the process ends either way; say that the publisher may not know
            log.warning(
                "format('reactive'): stopping on SIGTERM failed (%s: %s); the publisher may not have "
                "been told to cancel",
                type(exc).__name__,
                exc,
            )
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            self._exit(EXIT_STATUS)


__all__ = ["EXIT_STATUS", "SigtermStop"]
