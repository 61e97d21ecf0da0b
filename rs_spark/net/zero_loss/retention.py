"""Retention: a served stream keeps what it sent until the reader acknowledges it.

A Reactive Streams Publisher owes nothing after ``on_next``, so whatever a reader received but
had not made durable is lost when the reader dies. A resumable stream therefore numbers its
rows (positions count the stream's rows since its subscription began, as Kafka offsets count a
partition's records) and keeps each one in a :class:`RetainedLog` until the reader
acknowledges a position at or after it (the ``reactive`` source does when Spark commits). A
reader that reconnects resumes at any retained position and the rows from there are sent again.

The log is bounded in rows and bytes (:class:`Retention`); when it is full the stream stops
asking its publisher for more, so backpressure reaches the source of the data and nothing is
ever dropped to make room (rsocket-java's frame store drops the oldest frames instead).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..protocol.errors import NetError
from ..protocol.send_queue import MAX_BYTES, MAX_RECORDS, SendQueue, Splitter
from .spill import Spill


@dataclasses.dataclass(frozen=True)
class Retention:
    """How served streams keep rows until they are acknowledged (``serve(..., retention=...)``).

    ``max_records`` / ``max_bytes``: the most rows and bytes one stream keeps; at either bound it
    asks its publisher for nothing more until acknowledgements free room. ``window``: seconds a
    stream whose connection dropped waits for its reader to resume before it is cancelled (its
    retained rows then count as lost). ``spill``: a local folder where retained rows are also
    written before they are sent, so they survive a restart of the serving process.
    ``enabled=False`` turns retention off: streams end with their connection, as plain RSocket.
    """

    enabled: bool = True
    max_records: int = MAX_RECORDS
    max_bytes: int = MAX_BYTES
    window: float = 600.0
    spill: str | None = None

    def __post_init__(self) -> None:
        for name in ("max_records", "max_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Retention.{name} must be an int >= 1, got {v!r}")
        if not self.window > 0:
            raise ValueError(f"Retention.window must be > 0 seconds, got {self.window!r}")

    @classmethod
    def off(cls) -> Retention:
        """No retention: readers cannot resume, streams end with their connection (plain RSocket)."""
        return cls(enabled=False)


class ResumeError(NetError):
    """A stream cannot be resumed at the position asked for."""


class RetainedLog:
    """The rows a retaining stream keeps: its ``queue`` (a :class:`SendQueue` that keeps what it
    sent, bounded by ``retention``, the queue the stream sends from), freed from the front by
    acknowledgements, and sent again to a resumed reader from any kept position.

    With ``spill`` each row is also written to disk before it can be sent (``to_bytes``: an item as
    the bytes of its payload). Not thread-safe: its stream serialises access under its own lock.
    """

    def __init__(
        self,
        retention: Retention,
        split: Splitter | None = None,
        start: int = 0,
        spill: Spill | None = None,
        to_bytes: Callable[[Any], bytes] | None = None,
    ) -> None:
        self.retention = retention
        self._spill = spill  # rows also written to disk before they are sent (Retention.spill)
        self._to_bytes = to_bytes
        self.queue = SendQueue(
            split,
            start,
            retention.max_records,
            retention.max_bytes,
            keep_sent=True,
            on_append=self._write_spill,
            on_clear=self._remove_spill,
        )

    def _write_spill(self, position: int, rows: int, item: Any) -> None:
        if self._spill is not None and self._to_bytes is not None:
            self._spill.append(position, rows, self._to_bytes(item))

    def _remove_spill(self) -> None:
        """The stream ended: its kept rows are never needed again, on disk neither."""
        if self._spill is not None:
            self._spill.remove()
            self._spill = None

    def range(self, lo: int, hi: int) -> list[Any]:
        """The items holding rows ``[lo, hi)`` of those sent (or made available), record batches cut
        to the range; the log is unchanged. Raises ResumeError when they are not all kept."""
        q = self.queue
        if lo < q.first or hi > q.cursor or lo > hi:
            why = " (earlier rows were acknowledged and freed)" if lo < q.first else ""
            raise ResumeError(f"rows [{lo}, {hi}) are not all kept: the rows kept are [{q.first}, {q.cursor}){why}")
        return q.items(lo, hi)

    # -- acknowledgements and resumption ----------------------------------------------------
    def free_until(self, position: int) -> int:
        """Forget rows before ``position`` (acknowledged, never needed again); returns how many."""
        q = self.queue
        if position <= q.first:
            return 0
        if position > q.cursor:
            raise ResumeError(
                f"acknowledged position {position} is beyond the {q.cursor} rows this stream sent; "
                "the reader acknowledges only what it received"
            )
        freed = q.release_until(position)
        if self._spill is not None:
            self._spill.acknowledge(position)
        return freed

    def preload(self, entries: list[tuple[int, int, Any, int]], start: int) -> None:
        """Rows read back from a spill after a restart (position, rows, item, bytes) from the
        acknowledged position ``start``, as sent: a resuming reader says where to continue."""
        self.queue.load(entries, start)

    def rewind(self, position: int) -> int:
        """Send again from ``position`` (where a resumed reader continues); returns the rows that
        will be sent again. Rows before it stay kept until acknowledged: a reader that resumed
        after a network drop may still die before it commits them."""
        q = self.queue
        if position < q.first or position > q.cursor:
            kept = f"[{q.first}, {q.cursor})" if q.cursor > q.first else "none"
            why = " (earlier rows were acknowledged and freed)" if position < q.first else ""
            raise ResumeError(f"cannot resume at position {position}: the rows sent and kept are {kept}{why}")
        return q.rewind(position)

    def close_spill(self) -> None:
        """Stop writing the spill and keep its files (the server stops; a restart reads them back)."""
        if self._spill is not None:
            self._spill.close()
            self._spill = None


__all__ = ["Retention", "RetainedLog", "ResumeError"]
