"""Subscriber factories for tests/connect (imported by the Connect server's Python workers)."""

from __future__ import annotations

import os
import uuid
from typing import Any


class _ToFile:
    def __init__(self, path: str) -> None:
        self.path = path
        self.seqs: list = []

    def on_subscribe(self, s: Any) -> None:
        s.request(2**63 - 1)

    def on_next(self, row: Any) -> None:
        self.seqs.append(row["seq"])

    def on_error(self, e: BaseException) -> None:
        pass

    def on_complete(self) -> None:
        with open(self.path, "w") as f:
            f.write(" ".join(map(str, self.seqs)))


def to_file(options: dict[str, Any]) -> _ToFile:
    """One Subscriber per task, writing its rows' seq values to a file of its own at on_complete."""
    d = options["dir"]
    return _ToFile(os.path.join(d, f"{uuid.uuid4().hex}.txt"))
