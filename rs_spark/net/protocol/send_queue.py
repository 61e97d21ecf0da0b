"""What an outbound stream holds between its publisher and the peer's credit.

Elements are numbered by row (a record batch counts its rows) from the stream's start; they wait
in a :class:`SendQueue` until credit lets them go, and a record batch is cut to the credit. The
queue is bounded in rows and bytes: at either bound the stream asks its publisher for nothing more.
A plain queue forgets an element once it is sent; one made with ``keep_sent`` keeps it until
:meth:`SendQueue.release_until` and can send it again (:meth:`SendQueue.rewind`): the zero-loss
room's :class:`~rs_spark.net.zero_loss.retention.RetainedLog` is built on one, and writes each
element to disk first through ``on_append``.
Not thread-safe: its stream serialises access under its own lock.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from typing import Any

MAX_RECORDS = 4_000_000  # the most rows one stream holds (Retention's default bound too)
MAX_BYTES = 256 * 1024 * 1024  # the most bytes one stream holds (Retention's default bound too)


class Entry:
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


def split_batch(batch: Any, rows: int) -> tuple[Any, Any]:
    """A record batch's first ``rows`` rows and the rest (the :data:`Splitter` of Arrow streams)."""
    return batch.slice(0, rows), batch.slice(rows)


class SendQueue:
    """Rows by position, oldest first: appended as they arrive, read from a cursor as credit
    allows, forgotten once sent (``keep_sent``: once released).

    ``on_append(position, rows, item)`` runs before an element is held; ``on_clear()`` before the
    queue forgets everything (a queue kept on disk too writes and removes its files there)."""

    def __init__(
        self,
        split: Splitter | None = None,
        start: int = 0,
        max_records: int = MAX_RECORDS,
        max_bytes: int = MAX_BYTES,
        *,
        keep_sent: bool = False,
        on_append: Callable[[int, int, Any], None] | None = None,
        on_clear: Callable[[], None] | None = None,
    ) -> None:
        self.keeps = keep_sent  # sent rows stay until released
        self._on_append = on_append
        self._on_clear = on_clear
        self._split = split
        self._max_records = max_records
        self._max_bytes = max_bytes
        self._entries: deque[Entry] = deque()
        self._first = start  # position of the oldest row held
        self._end = start  # position after the newest row
        self._cursor = start  # position of the next row to send
        self._sent_entries = 0  # entries before the cursor (the cursor is at an entry boundary)
        self.records = 0
        self.bytes = 0

    # -- positions ------------------------------------------------------------------------
    @property
    def first(self) -> int:
        """Position of the oldest row still held (== ``end`` when empty)."""
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
        way already: 0 once the rows or the bytes held reach their bound."""
        if self.bytes >= self._max_bytes:
            return 0
        return max(0, self._max_records - self.records - rows_asked)

    # -- writing ----------------------------------------------------------------------------
    def append(self, item: Any, rows: int, nbytes: int) -> int:
        """Hold ``item`` (``rows`` rows, about ``nbytes`` bytes); returns its first position."""
        pos = self._end
        if self._on_append is not None:
            self._on_append(pos, rows, item)
        self._entries.append(Entry(pos, rows, item, nbytes))
        self._end = pos + rows
        self.records += rows
        self.bytes += nbytes
        return pos

    def pass_through(self, rows: int) -> None:
        """Count ``rows`` appended and sent at once, without holding them (a queue that keeps
        nothing sends straight through when nothing waits)."""
        assert not self.keeps and self._cursor == self._end, "only an empty queue that keeps nothing"
        self._end += rows
        self._cursor = self._first = self._end

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
        if not self.keeps:
            self._drop_sent()
        return e.item, e.rows

    def _cut(self, i: int, rows: int) -> None:
        """Split entry ``i`` after its first ``rows`` rows (both halves stay in the queue)."""
        e = self._entries[i]
        if self._split is None:
            raise ValueError(f"an element of {e.rows} rows cannot be cut: this stream's elements are indivisible")
        head, rest = self._split(e.item, rows)
        hb = e.nbytes * rows // e.rows
        self._entries.insert(i + 1, Entry(e.pos + rows, e.rows - rows, rest, e.nbytes - hb))
        e.rows, e.item, e.nbytes = rows, head, hb

    def _drop_sent(self) -> None:
        while self._sent_entries:
            self._pop_first()
        self._first = self._cursor

    def clear(self) -> int:
        """Forget everything held (the stream ended or was cancelled); returns the rows dropped."""
        if self._on_clear is not None:
            self._on_clear()
        n = self.records
        self._entries.clear()
        self._sent_entries = 0
        self.records = self.bytes = 0
        self._first = self._cursor = self._end
        return n

    # -- a queue that keeps what it sent (keep_sent) -----------------------------------------
    def release_until(self, position: int) -> int:
        """Forget the rows before ``position`` (``first`` <= it <= ``cursor``); returns how many."""
        assert self._first <= position <= self._cursor, "only rows sent and kept"
        freed = 0
        entries = self._entries
        while entries and entries[0].end <= position:
            freed += self._pop_first()
        if entries and entries[0].pos < position:  # released inside a record batch
            freed += self._drop_head(position - entries[0].pos)
        self._first = position
        return freed

    def _drop_head(self, rows: int) -> int:
        """Forget the first ``rows`` rows of the first entry, a sent one; returns ``rows``."""
        self._cut(0, rows)
        self._sent_entries += 1  # both halves are sent
        return self._pop_first()

    def _pop_first(self) -> int:
        """Forget the first entry, a sent one; returns its rows."""
        e = self._entries.popleft()
        self._sent_entries -= 1
        self.records -= e.rows
        self.bytes -= e.nbytes
        return e.rows

    def rewind(self, position: int) -> int:
        """Send again from ``position`` (``first`` <= it <= ``cursor``); returns the rows that will
        be sent again. Rows before it stay until released."""
        assert self._first <= position <= self._cursor, "only rows sent and kept"
        resend = self._cursor - position
        i, entries = 0, self._entries
        while i < len(entries) and entries[i].end <= position:
            i += 1
        if i < len(entries) and entries[i].pos < position:  # from inside a record batch
            self._cut(i, position - entries[i].pos)
            i += 1
        self._sent_entries = i
        self._cursor = position
        return resend

    def items(self, lo: int, hi: int) -> list[Any]:
        """The items holding rows ``[lo, hi)`` of those sent (``first`` <= lo <= hi <= ``cursor``),
        record batches cut to the range; the queue is unchanged."""
        assert self._first <= lo <= hi <= self._cursor, "only rows sent and kept"
        if self._split is None:  # one row per entry: the range is a run of entries
            return [e.item for e in itertools.islice(self._entries, lo - self._first, hi - self._first)]
        out: list[Any] = []
        for e in self._entries:
            if e.end <= lo:
                continue
            if e.pos >= hi:
                break
            a, b = max(lo, e.pos) - e.pos, min(hi, e.end) - e.pos
            out.append(e.item if (a, b) == (0, e.rows) else self._split(self._split(e.item, a)[1], b - a)[0])
        return out

    def load(self, entries: list[tuple[int, int, Any, int]], start: int) -> None:
        """Hold rows as sent (position, rows, item, bytes), from ``start``; only an empty queue.
        An entry that begins before ``start`` is cut there."""
        assert not self._entries, "only an empty queue"
        self._first = self._end = self._cursor = start
        for pos, rows, item, nbytes in entries:
            self._entries.append(Entry(pos, rows, item, nbytes))
            self.records += rows
            self.bytes += nbytes
            self._end = self._cursor = pos + rows
        self._sent_entries = len(self._entries)
        if self._entries and self._entries[0].pos < start:
            self._drop_head(start - self._entries[0].pos)


__all__ = ["SendQueue", "Entry", "Splitter", "split_batch", "MAX_RECORDS", "MAX_BYTES"]
