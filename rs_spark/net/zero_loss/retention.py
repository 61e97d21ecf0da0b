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
import itertools
from collections.abc import Callable
from typing import Any

from ..protocol.errors import NetError
from ..protocol.send_queue import MAX_BYTES, MAX_RECORDS, Entry, SendQueue, Splitter
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


class RetainedLog(SendQueue):
    """A :class:`SendQueue` that keeps what it sent: rows are freed from the front by
    acknowledgements, and a resumed reader is sent them again from any kept position.

    With ``spill`` each row is also written to disk before it can be sent.
    Not thread-safe: its stream serialises access under its own lock.
    """

    keeps = True

    def __init__(
        self,
        retention: Retention,
        split: Splitter | None = None,
        start: int = 0,
        spill: Spill | None = None,
        to_bytes: Callable[[Any], bytes] | None = None,
    ) -> None:
        super().__init__(split, start, retention.max_records, retention.max_bytes)
        self.retention = retention
        self._spill = spill  # rows also written to disk before they are sent (Retention.spill)
        self._to_bytes = to_bytes  # an item as the bytes of its payload, for the spill

    def append(self, item: Any, rows: int, nbytes: int) -> int:
        """Keep ``item`` (``rows`` rows, about ``nbytes`` bytes), on disk first with a spill;
        returns its first position."""
        if self._spill is not None and self._to_bytes is not None:
            self._spill.append(self._end, rows, self._to_bytes(item))
        return super().append(item, rows, nbytes)

    def range(self, lo: int, hi: int) -> list[Any]:
        """The items holding rows ``[lo, hi)`` of those sent (or made available), record batches cut
        to the range; the log is unchanged. Raises ResumeError when they are not all kept."""
        if lo < self._first or hi > self._cursor or lo > hi:
            kept = f"[{self._first}, {self._cursor})"
            why = " (earlier rows were acknowledged and freed)" if lo < self._first else ""
            raise ResumeError(f"rows [{lo}, {hi}) are not all kept: the rows kept are {kept}{why}")
        out: list[Any] = []
        if self._split is None:  # one row per entry: the range is a run of entries
            return [e.item for e in itertools.islice(self._entries, lo - self._first, hi - self._first)]
        for e in self._entries:
            if e.end <= lo:
                continue
            if e.pos >= hi:
                break
            a, b = max(lo, e.pos) - e.pos, min(hi, e.end) - e.pos
            item = e.item if (a, b) == (0, e.rows) else self._split(self._split(e.item, a)[1], b - a)[0]
            out.append(item)
        return out

    # -- acknowledgements and resumption ----------------------------------------------------
    def free_until(self, position: int) -> int:
        """Forget rows before ``position`` (acknowledged, never needed again); returns how many."""
        if position <= self._first:
            return 0
        if position > self._cursor:
            raise ResumeError(
                f"acknowledged position {position} is beyond the {self._cursor} rows this stream sent; "
                "the reader acknowledges only what it received"
            )
        freed = 0
        entries = self._entries
        while entries and entries[0].end <= position:
            e = entries.popleft()
            self._sent_entries -= 1
            freed += e.rows
            self.records -= e.rows
            self.bytes -= e.nbytes
        if entries and entries[0].pos < position:  # an acknowledgement inside a record batch
            self._cut(0, position - entries[0].pos)
            e = entries.popleft()
            freed += e.rows
            self.records -= e.rows
            self.bytes -= e.nbytes
        self._first = position
        if self._spill is not None:
            self._spill.acknowledge(position)
        return freed

    def preload(self, entries: list[tuple[int, int, Any, int]], start: int) -> None:
        """Rows read back from a spill after a restart (position, rows, item, bytes) from the
        acknowledged position ``start``, as sent: a resuming reader says where to continue."""
        assert not self._entries, "only an empty log"
        self._first = self._end = self._cursor = start
        for pos, rows, item, nbytes in entries:
            self._entries.append(Entry(pos, rows, item, nbytes))
            self.records += rows
            self.bytes += nbytes
            self._end = self._cursor = pos + rows
        if self._entries and self._entries[0].pos < start:  # the first entry began before the acknowledgement
            first = self._entries[0]
            self._cut(0, start - first.pos)
            dropped = self._entries.popleft()
            self.records -= dropped.rows
            self.bytes -= dropped.nbytes
        self._sent_entries = len(self._entries)

    def rewind(self, position: int) -> int:
        """Send again from ``position`` (where a resumed reader continues); returns the rows that
        will be sent again. Rows before it stay kept until acknowledged: a reader that resumed
        after a network drop may still die before it commits them."""
        if position < self._first or position > self._cursor:
            kept = f"[{self._first}, {self._cursor})" if self._cursor > self._first else "none"
            why = " (earlier rows were acknowledged and freed)" if position < self._first else ""
            raise ResumeError(f"cannot resume at position {position}: the rows sent and kept are {kept}{why}")
        resend = self._cursor - position
        i, entries = 0, self._entries
        while i < len(entries) and entries[i].end <= position:
            i += 1
        if i < len(entries) and entries[i].pos < position:  # resuming inside a record batch
            self._cut(i, position - entries[i].pos)
            i += 1
        self._sent_entries = i
        self._cursor = position
        return resend

    def close_spill(self) -> None:
        """Stop writing the spill and keep its files (the server stops; a restart reads them back)."""
        if self._spill is not None:
            self._spill.close()
            self._spill = None

    def clear(self) -> int:
        """Forget everything kept (the stream ended or was cancelled), its spill too; returns the rows dropped."""
        if self._spill is not None:
            self._spill.remove()
            self._spill = None
        return super().clear()


__all__ = ["Retention", "RetainedLog", "ResumeError"]
