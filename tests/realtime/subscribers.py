"""A Subscriber that records what the real-time sink delivers, with events to wait on."""

from __future__ import annotations

import threading
from typing import Any


class Collect:
    """Requests everything; keeps the rows' ``field`` values (``ids``), and how the stream ended.
    ``shared``: another Collect whose ``ids`` list this one appends to (a query restarted with a new
    Subscriber continues the same record)."""

    def __init__(self, field: str = "id", shared: Collect | None = None) -> None:
        self.field = field
        self.ids: list[Any] = shared.ids if shared is not None else []
        self.error: BaseException | None = None
        self.completed = threading.Event()
        self.failed = threading.Event()

    def on_subscribe(self, s: Any) -> None:
        s.request(2**63 - 1)

    def on_next(self, row: Any) -> None:
        self.ids.append(row[self.field])

    def on_error(self, e: BaseException) -> None:
        self.error = e
        self.failed.set()

    def on_complete(self) -> None:
        self.completed.set()
