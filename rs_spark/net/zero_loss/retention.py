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
from collections import deque
from collections.abc import Callable
from typing import Any

from ..protocol.errors import NetError
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
    max_records: int = 4_000_000
    max_bytes: int = 256 * 1024 * 1024
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


class _Entry:
    """Rows ``[pos, pos + rows)``: one element (encoded payload) or a slice of a record batch."""

    __slots__ = ("pos", "rows", "item", "nbytes")

    def __init__(self, pos: int, rows: int, item: Any, nbytes: int) -> None:
        self.pos = pos
        self.rows = rows
        self.item = item
        self.nbytes = nbytes

    @property
    def end(self) -> int:
        return self.pos + self.rows


Splitter = Callable[[Any, int], tuple[Any, Any]]
"""``split(item, rows)`` -> (its first ``rows`` rows, the rest): cuts a record batch. The bytes
counted for the two parts are the whole's, shared in proportion to their rows (a slice of a record
batch shares the whole's buffers, so its own size would count them twice)."""


class RetainedLog:
    """Rows by position, oldest first: appended as they arrive, read from a cursor as credit
    allows, freed from the front by acknowledgements.

    ``retain=False`` makes it a plain send queue: an entry is freed as soon as it was read.
    Not thread-safe: its stream serialises access under its own lock.
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
        self.retain = retention.enabled
        self._split = split
        self._spill = spill  # rows also written to disk before they are sent (Retention.spill)
        self._to_bytes = to_bytes  # an item as the bytes of its payload, for the spill
        self._entries: deque[_Entry] = deque()
        self._first = start  # position of the oldest row kept
        self._end = start  # position after the newest row
        self._cursor = start  # position of the next row to send
        self._sent_entries = 0  # entries before the cursor (the cursor is at an entry boundary)
        self.records = 0
        self.bytes = 0

    # -- positions ------------------------------------------------------------------------
    @property
    def first(self) -> int:
        """Position of the oldest row still kept (== ``end`` when empty)."""
        return self._first

    @property
    def end(self) -> int:
        """Position after the newest row appended."""
        return self._end

    @property
    def cursor(self) -> int:
        """Position of the next row to send."""
        return self._cursor

    @property
    def unsent(self) -> int:
        """Rows appended and not yet sent."""
        return self._end - self._cursor

    def room(self, rows_asked: int = 0) -> int:
        """How many more rows the stream may ask its publisher for, ``rows_asked`` being on their
        way already: 0 once the rows or the bytes kept reach their bound."""
        r = self.retention
        if self.bytes >= r.max_bytes:
            return 0
        return max(0, r.max_records - self.records - rows_asked)

    # -- writing ----------------------------------------------------------------------------
    def append(self, item: Any, rows: int, nbytes: int) -> int:
        """Keep ``item`` (``rows`` rows, about ``nbytes`` bytes); returns its first position."""
        pos = self._end
        if self._spill is not None and self._to_bytes is not None:
            self._spill.append(pos, rows, self._to_bytes(item))
        self._entries.append(_Entry(pos, rows, item, nbytes))
        self._end = pos + rows
        self.records += rows
        self.bytes += nbytes
        return pos

    def pass_through(self, rows: int) -> None:
        """Count ``rows`` appended and sent at once, without keeping them (a stream that retains
        nothing sends straight through when nothing waits)."""
        assert not self.retain and self._cursor == self._end, "only an empty log that keeps nothing"
        self._end += rows
        self._cursor = self._first = self._end

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

    # -- sending ----------------------------------------------------------------------------
    def peek(self) -> Any:
        """The item at the cursor (None when nothing is unsent)."""
        if self._cursor >= self._end:
            return None
        return self._entries[self._sent_entries].item

    def next_to_send(self, max_rows: int) -> tuple[Any, int] | None:
        """The entry at the cursor, cut to at most ``max_rows`` rows (record batches only),
        and its rows; the cursor moves past it. None when nothing is unsent or ``max_rows`` < 1."""
        if max_rows < 1 or self._cursor >= self._end:
            return None
        i = self._sent_entries
        e = self._entries[i]
        if e.rows > max_rows:
            self._cut(i, max_rows)
        self._sent_entries = i + 1
        self._cursor = e.end
        if not self.retain:
            self._drop_sent()
        return e.item, e.rows

    def _cut(self, i: int, rows: int) -> None:
        """Split entry ``i`` after its first ``rows`` rows (both halves stay in the log)."""
        e = self._entries[i]
        if self._split is None:
            raise ValueError(f"an element of {e.rows} rows cannot be cut: this stream's elements are indivisible")
        head, rest = self._split(e.item, rows)
        hb = e.nbytes * rows // e.rows
        self._entries.insert(i + 1, _Entry(e.pos + rows, e.rows - rows, rest, e.nbytes - hb))
        e.rows, e.item, e.nbytes = rows, head, hb

    def _drop_sent(self) -> None:
        while self._sent_entries:
            e = self._entries.popleft()
            self._sent_entries -= 1
            self.records -= e.rows
            self.bytes -= e.nbytes
        self._first = self._cursor

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
            self._entries.append(_Entry(pos, rows, item, nbytes))
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
        """Forget everything kept (the stream ended or was cancelled); returns the rows dropped."""
        n = self.records
        if self._spill is not None:
            self._spill.remove()
            self._spill = None
        self._entries.clear()
        self._sent_entries = 0
        self.records = self.bytes = 0
        self._first = self._cursor = self._end
        return n

    def stats(self) -> dict[str, int]:
        return {
            "retainedRecords": self.records,
            "retainedBytes": self.bytes,
            "firstPosition": self._first,
            "sentPosition": self._cursor,
            "endPosition": self._end,
        }


__all__ = ["Retention", "RetainedLog", "ResumeError"]
