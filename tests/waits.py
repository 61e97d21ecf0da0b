"""The one way tests wait for something another thread or process does: poll a condition until it
holds, failing with what was awaited (never a bare sleep used as synchronisation)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any


def wait_until(
    cond: Callable[[], Any], what: str | Callable[[], str], timeout: float = 30.0, interval: float = 0.01
) -> Any:
    """Return ``cond()``'s first truthy value; fail the test naming ``what`` after ``timeout`` seconds.

    ``what`` may be a callable: it is asked only at the timeout, so the failure can show the state
    reached (``lambda: f"no connection left; {server.connection_count} open"``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {what() if callable(what) else what}")
        time.sleep(interval)


def listening(port: int, proc: subprocess.Popen, what: str, log: str | os.PathLike | None = None) -> bool:
    """A condition for ``wait_until``: whether ``what`` (started as ``proc``) accepts connections on
    127.0.0.1:``port``; fails at once, with the tail of its ``log``, if the process exited."""
    if proc.poll() is not None:
        tail = ""
        if log is not None:
            with open(log, errors="replace") as f:
                tail = ": " + f.read()[-3000:]
        raise AssertionError(f"{what} exited with {proc.returncode} before listening on port {port}{tail}")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
