"""Publisher factories for the fault tests (they run in Spark's driver-side reader process)."""

from __future__ import annotations

import os

from rs_spark import streams as rs


def _append(path: str | None, line: str) -> None:
    if not path:
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, line.encode() + b"\n")  # one write of one line: lines never interleave
    finally:
        os.close(fd)


class ReplayableIds:
    """Rows {"id": n, "name", "price"} for n from 0: a Replayable publisher (subscribe_at starts at
    any position) that notes each subscription's position in ``publisher.marker`` and each
    on_commit in ``publisher.commits`` (files, one line each), so a test sees both from outside."""

    def __init__(self, options: dict) -> None:
        self._marker = options.get("marker")
        self._commits = options.get("commits")

    def subscribe(self, subscriber) -> None:
        self.subscribe_at(subscriber, 0)

    def subscribe_at(self, subscriber, position: int) -> None:
        _append(self._marker, str(position))
        rows = rs.from_iterable(range(position, 10**12)).pipe(rs.map(lambda i: {"id": i, "name": "r", "price": 1.0}))
        rows.subscribe(subscriber)

    def on_commit(self, position: int) -> None:
        _append(self._commits, str(position))


def replayable_ids(options: dict) -> ReplayableIds:
    return ReplayableIds(options)


def lines(path) -> list[int]:
    """The numbers a factory above wrote to ``path`` (none yet: empty)."""
    try:
        with open(path) as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []
