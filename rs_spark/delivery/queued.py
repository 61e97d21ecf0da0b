"""What the delivery hub holds of the current commit: its record batches queued for the Subscriber,
each with its rows converted once (under the hub's lock)."""

from __future__ import annotations

from collections import deque
from typing import Any

import pyarrow as pa

from .elements import batch_elements


class QueuedBatch:
    """A record batch queued for delivery, with its rows converted once. ``pos``: its rows (or, for
    ``batches``, the batch) already delivered; ``dropped``: the hub let it go (the query ended, the
    commit failed or a newer commit superseded it), so delivery stops at the next row."""

    __slots__ = ("batch", "batch_id", "start", "rows", "pos", "dropped")

    def __init__(self, batch: pa.RecordBatch, batch_id: int, start: int, elements: str) -> None:
        self.batch = batch
        self.batch_id = batch_id
        self.start = start
        self.pos = 0
        self.dropped = False
        self.rows: list[Any] | None = None if elements == "batches" else batch_elements(batch, elements)

    @property
    def done(self) -> bool:
        return self.pos >= self.batch.num_rows

    @property
    def left(self) -> int:
        """Elements not yet delivered (one for a ``batches`` element)."""
        return 1 if self.rows is None else len(self.rows) - self.pos


class Pending:
    """The current commit's record batches not yet fully delivered, oldest first (under the hub's lock)."""

    __slots__ = ("_q",)

    def __init__(self) -> None:
        self._q: deque[QueuedBatch] = deque()

    def head(self) -> QueuedBatch | None:
        return self._q[0] if self._q else None

    def __bool__(self) -> bool:
        return bool(self._q)

    def append(self, cur: QueuedBatch) -> None:
        self._q.append(cur)

    def next_row(self, delivered: int) -> int:
        """The first row of the micro-batch not yet queued (``delivered`` when nothing is)."""
        q = self._q
        return q[-1].start + q[-1].batch.num_rows if q else delivered

    def remove_done(self, cur: QueuedBatch) -> None:
        if cur.done and self._q and self._q[0] is cur:
            self._q.popleft()

    def drop_all(self) -> None:
        for cur in self._q:
            cur.dropped = True
        self._q.clear()

    @property
    def elements(self) -> int:
        return sum(cur.left for cur in self._q)


__all__ = ["QueuedBatch", "Pending"]
