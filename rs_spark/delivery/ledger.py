"""The hub's ledger: what reached the Subscriber, so a replayed micro-batch is never delivered twice.

It records the last micro-batch started, how many of its rows reached ``on_next`` and how many it
has; for the real-time sink's several partitions, that per partition (each partition's epochs
replay on their own). The file keeps partition 0 at its top level, as before partitions, and the
others under ``"partitions"``. With a path it is kept in a file, written to a private temporary
file and renamed into place (a crash leaves the old or the new ledger, never half), and checked when read back.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from .errors import SinkError


def _read_ledger(path: str) -> tuple[tuple[int, int, int], dict[int, tuple[int, int, int]]]:
    """((batch_id, rows, total), {partition: (batch_id, rows, total)}) from a ledger file, checked: it
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
        if not all(type(x) is int for x in v) or v[0] < -1 or not 0 <= v[1] <= v[2]:
            raise SinkError(
                f"the sink ledger {path} holds {d!r}, not batch_id >= -1 and 0 <= rows <= total: it was "
                "not written by rs_spark; restore it or remove it"
            )
    return values, others


def _entry(d: dict[str, Any]) -> tuple[int, int, int]:
    return d["batch_id"], d["rows"], d["total"]


class Entry:
    """One partition's line of the ledger: its last batch started, rows delivered and expected."""

    __slots__ = ("batch_id", "rows", "total")

    def __init__(self, batch_id: int = -1, rows: int = 0, total: int = 0) -> None:
        self.batch_id, self.rows, self.total = batch_id, rows, total

    @property
    def complete(self) -> bool:
        """Whether every row of the last batch started reached ``on_next``."""
        return self.rows >= self.total

    def as_dict(self) -> dict[str, int]:
        return {"batch_id": self.batch_id, "rows": self.rows, "total": self.total}


class Ledger(Entry):
    """What reached the Subscriber: partition 0's line (its own attributes, as before partitions) and
    the other partitions' (:meth:`partition`)."""

    __slots__ = ("path", "_others", "_saved")

    def __init__(self, path: str | None = None) -> None:
        super().__init__()
        self.path = path
        self._others: dict[int, Entry] = {}
        if path and os.path.exists(path):
            (self.batch_id, self.rows, self.total), others = _read_ledger(path)
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
            tuple((p, e.batch_id, e.rows, e.total) for p, e in sorted(self._others.items())),
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
        """``{"batch_id", "rows", "total"}`` (partition 0) and, with other partitions, ``"partitions"``:
        what the ledger file holds."""
        d: dict[str, Any] = super().as_dict()
        if self._others:
            d["partitions"] = {str(p): e.as_dict() for p, e in sorted(self._others.items())}
        return d


__all__ = ["Ledger", "Entry"]
