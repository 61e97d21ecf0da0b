"""The endpoints this process serves for its own queries' sources, in one registry.

:func:`rs_spark.read_stream` and ``rs_spark.spark.realtime.read_stream`` serve a Publisher of this process on
a loopback endpoint for Spark's reader to reach; each server is recorded here until :func:`stop_served`.
"""

from __future__ import annotations

import threading
from typing import Any

_servers: list[Any] = []  # rs_spark.net Servers started for read_stream / realtime.read_stream, oldest first
_lock = threading.Lock()


def keep(server: Any) -> None:
    """Record ``server`` (started for a source in this process) for :func:`stop_served`."""
    with _lock:
        _servers.append(server)


def served() -> list[Any]:
    """The servers started for sources in this process and not stopped yet, oldest first (their
    ``stats()`` show what each endpoint keeps for its reader)."""
    with _lock:
        return list(_servers)


def stop_served() -> int:
    """Stop every endpoint ``read_stream`` or ``realtime.read_stream`` started in this process; return how many."""
    with _lock:
        servers, _servers[:] = list(_servers), []
    for s in servers:
        s.stop()
    return len(servers)


__all__ = ["keep", "served", "stop_served"]
