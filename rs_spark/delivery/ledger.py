"""The hub's ledger: what reached the Subscriber, so a replayed micro-batch is never delivered twice.

It records the last micro-batch started, how many of its rows reached ``on_next`` and how many it
has. With a path it is kept in a file, written to a private temporary file and renamed into place
(a crash leaves the old or the new ledger, never half), and checked when read back.
"""

from __future__ import annotations

import json
import os
import tempfile

from .errors import SinkError


def _read_ledger(path: str) -> tuple[int, int, int]:
    """(batch_id, rows, total) from a ledger file, checked: it decides what is never delivered again."""
    try:
        with open(path, encoding="utf-8") as f:
            d = json.loads(f.read(64 * 1024))
        values = (d["batch_id"], d["rows"], d["total"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SinkError(
            f"the sink ledger {path} cannot be read ({type(exc).__name__}: {exc}); restore it or remove "
            "it (then every micro-batch the query replays is delivered again)"
        ) from exc
    if not all(type(v) is int for v in values) or values[0] < -1 or not 0 <= values[1] <= values[2]:
        raise SinkError(
            f"the sink ledger {path} holds {d!r}, not batch_id >= -1 and 0 <= rows <= total: it was "
            "not written by rs_spark; restore it or remove it"
        )
    return values


class Ledger:
    """What reached the Subscriber: the last batch started, its rows delivered and expected."""

    __slots__ = ("batch_id", "rows", "total", "path", "_saved")

    def __init__(self, path: str | None = None) -> None:
        self.batch_id = -1
        self.rows = 0
        self.total = 0
        self.path = path
        if path and os.path.exists(path):
            self.batch_id, self.rows, self.total = _read_ledger(path)
        self._saved = (self.batch_id, self.rows, self.total)  # what the file holds from this ledger

    @property
    def complete(self) -> bool:
        """Whether every row of the last batch started reached ``on_next``."""
        return self.rows >= self.total

    def save(self) -> None:
        """Write the ledger to its file, atomically and synced (nothing without a path, nor when nothing
        changed since it was read or last written: the hub of a stopped run, ending after a restarted run's
        hub took over the same file, must not write its older ledger over the newer one)."""
        state = (self.batch_id, self.rows, self.total)
        if not self.path or state == self._saved:
            return
        d = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=".ledger-", dir=d)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"batch_id": self.batch_id, "rows": self.rows, "total": self.total}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)  # atomic: a crash leaves the old or the new ledger, never half
        self._saved = state

    def as_dict(self) -> dict[str, int]:
        """``{"batch_id", "rows", "total"}``: what the ledger file holds."""
        return {"batch_id": self.batch_id, "rows": self.rows, "total": self.total}


__all__ = ["Ledger"]
