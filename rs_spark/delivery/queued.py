"""What the delivery hub holds of the commits in flight: its record batches queued for the Subscriber,
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

    __slots__ = ("batch", "batch_id", "partition", "start", "rows", "pos", "dropped")

    def __init__(self, batch: pa.RecordBatch, batch_id: int, start: int, elements: str, partition: int = 0) -> None:
        self.batch = batch
        self.batch_id = batch_id
        self.partition = partition
        self.start = start
        self.pos = 0
        self.dropped = False
        self.rows: list[Any] | None = None if elements == "batches" else batch_elements(batch, elements)

    @property
    def done(self) -> bool:
        return self.pos >= self.batch.num_rows

    def skip_to(self, row: int) -> None:
        """Start delivery at ``row`` (rows before it reached the Subscriber from an older commit)."""
        n = row - self.start
        if self.rows is not None:
            self.pos = min(max(self.pos, n), len(self.rows))
        elif n >= self.batch.num_rows:
            self.pos = self.batch.num_rows
        elif n > 0:
            self.batch, self.start = self.batch.slice(n), row

    @property
    def left(self) -> int:
        """Elements not yet delivered (one for a ``batches`` element)."""
        return 1 if self.rows is None else len(self.rows) - self.pos


class Pending:
    """The record batches of the commits in flight not yet fully delivered, in the order they arrived
    (so in order within each partition), oldest first (under the hub's lock)."""

    __slots__ = ("_q",)

    def __init__(self) -> None:
        self._q: deque[QueuedBatch] = deque()

    def head(self) -> QueuedBatch | None:
        return self._q[0] if self._q else None

    def __bool__(self) -> bool:
        return bool(self._q)

    def append(self, cur: QueuedBatch) -> None:
        self._q.append(cur)

    def queued_to(self, partition: int) -> int | None:
        """The first row of ``partition``'s micro-batch not yet queued (None when nothing of it is)."""
        for cur in reversed(self._q):
            if cur.partition == partition:
                return cur.start + cur.batch.num_rows
        return None

    def has(self, partition: int) -> bool:
        return any(cur.partition == partition for cur in self._q)

    def drop(self, partition: int) -> None:
        """Let go of ``partition``'s record batches (its commit failed or was superseded)."""
        keep: deque[QueuedBatch] = deque()
        for cur in self._q:
            if cur.partition == partition:
                cur.dropped = True
            else:
                keep.append(cur)
        self._q = keep

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
