"""One server's outbound memory, bounded across its connections.

Each connection bounds its own queue of frames waiting to be written (``Limits.max_backlog_bytes``),
but peers that never read, as many as ``Limits.max_connections`` allows, would multiply that bound.
A :class:`OutboundBudget` is shared by all the connections of a server: a connection charges it for
every frame it queues and credits it back when the frame is written or dropped. A frame that does not
fit closes the connection holding the most of the budget (usually a peer that stopped reading), then
the frame is charged again; if it still does not fit, its own connection is closed.
"""

from __future__ import annotations

import threading
from typing import Any

FRAME_OVERHEAD = 160
"""Bytes charged per queued frame on top of its length: the queue entry and the buffers' Python
objects (a small ERROR frame costs more memory than its length)."""


class OutboundBudget:
    """Bytes queued for sending by a server's connections, together at most ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._used = 0
        self._peak = 0
        self._by_conn: dict[Any, int] = {}

    @property
    def used(self) -> int:
        """Bytes charged now."""
        return self._used

    @property
    def peak(self) -> int:
        """The most bytes ever charged at once."""
        return self._peak

    def take(self, conn: Any, n: int, force: bool = False) -> bool:
        """Charge ``conn`` ``n`` bytes if they fit (or ``force``); False if they do not fit."""
        with self._lock:
            if not force and self._used + n > self.limit:
                return False
            self._used += n
            self._peak = max(self._peak, self._used)
            self._by_conn[conn] = self._by_conn.get(conn, 0) + n
            return True

    def give(self, conn: Any, n: int) -> None:
        """Credit ``conn``'s ``n`` bytes back (written or dropped)."""
        if n <= 0:
            return
        with self._lock:
            self._used -= n
            left = self._by_conn.get(conn, 0) - n
            if left > 0:
                self._by_conn[conn] = left
            else:
                self._by_conn.pop(conn, None)

    def largest(self) -> tuple[Any, int]:
        """The connection charged the most bytes, and how many (``(None, 0)`` if none)."""
        with self._lock:
            if not self._by_conn:
                return None, 0
            conn = max(self._by_conn, key=self._by_conn.__getitem__)
            return conn, self._by_conn[conn]


__all__ = ["OutboundBudget", "FRAME_OVERHEAD"]
