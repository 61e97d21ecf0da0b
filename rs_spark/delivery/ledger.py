"""The hub's ledger: what reached the Subscriber, so a replayed micro-batch is never delivered twice.

It records the last micro-batch started, how many of its rows reached ``on_next`` and how many it
has; for the real-time sink's several partitions, that per partition (each partition's epochs
replay on their own). A real-time epoch has no fixed size: run again after a restart it may end
sooner than the run that delivered part of it, and the rows delivered beyond its new end are the
first rows of the partition's next epoch (``carry``); and when that run was cut off mid-epoch and
the epoch ran again without rows of the partition, all rows it delivered are carried over
(``ended``: false until an attempt of the epoch ends). Both are kept in the file only when they say
something. The file keeps partition 0 at its top level, as before partitions, and the others under
``"partitions"``. With a path it is kept in a file, written to a private temporary file and renamed into place (a
crash leaves the old or the new ledger, never half), and checked when read back.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from .errors import SinkError


def _read_ledger(path: str) -> tuple[_Line, dict[int, _Line]]:
    """((batch_id, rows, total, carry, ended), {partition: (...)}) from a ledger file, checked: it
    decides what is never delivered again."""
    try:
        with open(path, encoding="utf-8") as f:
            d = json.loads(f.read(64 * 1024))
        values = _entry(d)
        others = {int(p): _entry(e) for p, e in d.get("partitions", {}).items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SinkError(
            f"the sink ledger {path} cannot be read ({type(exc).__name__}: {exc}); restore it or remove "
            "it (then every micro-batch the query replays is delivered again)"
        ) from exc
    for v in (values, *others.values()):
        numbers, ended = v[:4], v[4]
        if not all(type(x) is int for x in numbers) or type(ended) is not bool or not _valid(*numbers):
            raise SinkError(
                f"the sink ledger {path} holds {d!r}, not batch_id >= -1, 0 <= rows <= total, carry >= 0 "
                "and ended true or false: it was not written by rs_spark; restore it or remove it"
            )
    return values, others


_Line = tuple[int, int, int, int, bool]


def _valid(batch_id: int, rows: int, total: int, carry: int) -> bool:
    return batch_id >= -1 and 0 <= rows <= total and carry >= 0


def _entry(d: dict[str, Any]) -> _Line:
    return d["batch_id"], d["rows"], d["total"], d.get("carry", 0), d.get("ended", True)


class Entry:
    """One partition's line of the ledger: its last batch started, rows delivered and expected;
    for a real-time epoch also whether this run's attempt of it ended (``ended``) and the rows of
    the next epoch delivered already (``carry``), see the module's docstring."""

    __slots__ = ("batch_id", "rows", "total", "carry", "ended")

    def __init__(self, batch_id: int = -1, rows: int = 0, total: int = 0, carry: int = 0, ended: bool = True) -> None:
        self.batch_id, self.rows, self.total, self.carry, self.ended = batch_id, rows, total, carry, ended

    @property
    def complete(self) -> bool:
        """Whether every row of the last batch started reached ``on_next``."""
        return self.rows >= self.total

    @property
    def carried(self) -> int:
        """The rows of the next epoch that reached the Subscriber already: those an earlier run
        delivered beyond where this run's attempt of the epoch ended; all of them when no attempt of
        it ended since that run was cut off (Spark ran it again without rows of this partition)."""
        return self.carry if self.ended else self.rows

    def copy(self) -> Entry:
        """This line as it stands, apart from the ledger (to decide against without changing it)."""
        return Entry(self.batch_id, self.rows, self.total, self.carry, self.ended)

    def begin(self, batch_id: int, total: int, open_ended: bool) -> None:
        """Batch ``batch_id`` (``total`` rows, or so far for an open-ended epoch) starts; an open-ended
        epoch starts with the rows carried over (:attr:`carried`)."""
        carry = self.carried if open_ended else 0
        self.batch_id, self.rows, self.total = batch_id, carry, max(total, carry)
        self.carry, self.ended = 0, not open_ended

    def reopen(self, total: int) -> None:
        """A record batch of the open-ended epoch under way, ending at row ``total``. After an attempt of
        it ended (:meth:`settle`) this is a new attempt: Spark runs the epoch again, from its start,
        to an end decided afresh, so the rows carried over count as delivered rows of it again."""
        if self.ended:
            self.rows, self.carry, self.ended = self.rows + self.carry, 0, False
        self.total = max(self.total, self.rows, total)

    def settle(self, end: int) -> None:
        """This run's attempt of the open-ended epoch under way ended after ``end`` rows: rows an earlier,
        longer attempt delivered beyond them are carried over to the partition's next epoch."""
        delivered = self.rows
        self.rows, self.total = min(delivered, end), end
        self.carry, self.ended = max(delivered - end, 0), True

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"batch_id": self.batch_id, "rows": self.rows, "total": self.total}
        if self.carry:
            d["carry"] = self.carry
        if not self.ended:
            d["ended"] = False
        return d


class Ledger(Entry):
    """What reached the Subscriber: partition 0's line (its own attributes, as before partitions) and
    the other partitions' (:meth:`partition`)."""

    __slots__ = ("path", "_others", "_saved")

    def __init__(self, path: str | None = None) -> None:
        super().__init__()
        self.path = path
        self._others: dict[int, Entry] = {}
        if path and os.path.exists(path):
            (self.batch_id, self.rows, self.total, self.carry, self.ended), others = _read_ledger(path)
            self._others = {p: Entry(*v) for p, v in others.items()}
        self._saved = self._state()  # what the file holds from this ledger

    def partition(self, p: int) -> Entry:
        """Partition ``p``'s line (this ledger itself for partition 0; a new line starts empty)."""
        if p == 0:
            return self
        e = self._others.get(p)
        if e is None:
            e = self._others[p] = Entry()
        return e

    def _state(self) -> Any:
        return (
            self.batch_id,
            self.rows,
            self.total,
            self.carry,
            self.ended,
            tuple((p, e.batch_id, e.rows, e.total, e.carry, e.ended) for p, e in sorted(self._others.items())),
        )

    def save(self) -> None:
        """Write the ledger to its file, atomically and synced (nothing without a path, nor when nothing
        changed since it was read or last written: the hub of a stopped run, ending after a restarted run's
        hub took over the same file, must not write its older ledger over the newer one)."""
        state = self._state()
        if not self.path or state == self._saved:
            return
        d = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=".ledger-", dir=d)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(self.as_dict(), f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)  # atomic: a crash leaves the old or the new ledger, never half
        self._saved = state

    def as_dict(self) -> dict[str, Any]:
        """``{"batch_id", "rows", "total"}`` (partition 0; ``"carry"`` and ``"ended"`` when they say
        something) and, with other partitions, ``"partitions"``: what the ledger file holds."""
        d: dict[str, Any] = super().as_dict()
        if self._others:
            d["partitions"] = {str(p): e.as_dict() for p, e in sorted(self._others.items())}
        return d


__all__ = ["Ledger", "Entry"]
