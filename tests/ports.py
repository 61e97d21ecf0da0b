"""Servers the tests start in other processes (Spark's master and workers, a Connect server): a
free port to give them, and a condition for ``tests.waits.wait_until`` saying they listen."""

from __future__ import annotations

import os
import socket
import subprocess


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a server told its port up front)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int, proc: subprocess.Popen, what: str, log: str | os.PathLike | None = None) -> bool:
    """Whether ``what`` (started as ``proc``) accepts connections on 127.0.0.1:``port``; fails at
    once, with the tail of its ``log``, if the process exited."""
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
