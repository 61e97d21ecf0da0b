"""Publishers shared by tests of the net layer and of the source."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from rs_spark import streams as rs


class Counting:
    """The ints 0..n-1 (or ``as_row(i)`` of each), counting the demand it received, whether it was
    cancelled, and the positions it was told were committed (on_commit)."""

    def __init__(self, n: int, as_row: Callable[[int], Any] | None = None) -> None:
        self.n = n
        self._as_row = as_row
        self.requested = 0
        self.cancelled = threading.Event()
        self.commits: list[int] = []

    def subscribe(self, subscriber) -> None:
        outer = self

        class Watch:
            def on_subscribe(self, s):
                class S:
                    def request(self, k):
                        outer.requested += k
                        s.request(k)

                    def cancel(self):
                        outer.cancelled.set()
                        s.cancel()

                subscriber.on_subscribe(S())

            def on_next(self, x):
                subscriber.on_next(x)

            def on_error(self, e):
                subscriber.on_error(e)

            def on_complete(self):
                subscriber.on_complete()

        source = rs.range_(self.n)
        (source if self._as_row is None else source.pipe(rs.map(self._as_row))).subscribe(Watch())

    def on_commit(self, position: int) -> None:
        self.commits.append(position)
