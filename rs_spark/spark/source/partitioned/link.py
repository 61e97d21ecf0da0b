"""The partitioned reader's side of one partition: a positions-only resumable stream.

The endpoint keeps rows without sending them; the link asks it to keep rows available
(``REQUEST_N``), learns how far they go (``METADATA_PUSH endPosition``) and acknowledges what Spark
committed. Executors fetch the rows themselves (:mod:`.fetch`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ....net import connect
from ....net.protocol.errors import ResumeRejected
from ....streams.types import Subscription
from ..options import SourceOptions
from ..planner import Part, Stream


class PartitionLink:
    """One partition's positions-only stream, opened at ``position`` of stream ``key``
    (``new``: this process named the key, the endpoint has not seen it)."""

    def __init__(
        self, pid: str, opts: SourceOptions, key: str, position: int, changed: Callable[[], None], new: bool = False
    ) -> None:
        self.pid = pid
        self._changed = changed  # rows made available, or the stream ended: wakes the reader's wait
        self.publisher = connect(opts.endpoints[pid], **opts.client_options()).resumable(
            key, window=opts.resume_window, positions=True, new=new, backoff=opts.link.backoff
        )
        self.start = position  # where this reader process took the stream up
        self.subscription: Any = None
        self.error: BaseException | None = None
        self.completed = False
        self.requested = position  # the position up to which rows were asked for
        self._ack = threading.Lock()
        self._acked = -1  # the last position the endpoint was told
        self._to_ack = -1  # the last position Spark committed: told once the stream can take it
        self.publisher.subscribe_at(self, position)

    @property
    def key(self) -> str:
        return str(self.publisher.key)

    # -- Subscriber (positions only: no on_next) -----------------------------------------------
    def on_subscribe(self, s: Subscription) -> None:
        self.subscription = s
        on_available = getattr(s, "on_available", None)
        if callable(on_available):
            on_available(self._on_available)
        self._on_available()

    def on_next(self, item: Any) -> None:  # pragma: no cover - a positions-only stream sends no rows
        raise TypeError("a positions-only stream sent a row")

    def on_error(self, error: BaseException) -> None:
        self.error = error
        self._changed()

    def on_complete(self) -> None:
        self.completed = True
        self._changed()

    def _on_available(self) -> None:
        self._tell_acknowledged()  # one committed beyond what the stream had reached can go now
        self._changed()

    # -- the reader's calls ----------------------------------------------------------------------
    @property
    def available(self) -> int:
        s = self.subscription
        return self.start if s is None else int(s.position)

    @property
    def stream(self) -> Stream:
        """The stream's state, as the planner takes it."""
        if isinstance(self.error, ResumeRejected):
            return Stream.GONE
        if self.error is not None:
            return Stream.FAILED
        if self.completed:
            return Stream.COMPLETED
        return Stream.OPENING if self.subscription is None else Stream.OPEN

    def part(self, start: int, committed: int, target: int | None) -> Part:
        """This partition as the planner sees it, for a micro-batch starting at ``start``."""
        available = max(self.available, start)
        short = self.available < self.requested  # rows asked for that did not come (yet)
        return Part(start, available, max(committed, 0), self.stream, target, short)

    def demand_up_to(self, position: int) -> None:
        """Ask the endpoint to keep rows available up to ``position``."""
        s = self.subscription
        if s is None or self.error is not None or self.completed or position <= self.requested:
            return
        s.request(position - self.requested)
        self.requested = position

    def acknowledge(self, position: int) -> None:
        """Spark committed every row before ``position``: the endpoint hears it as soon as the stream
        can take it (subscribed, and the rows made available)."""
        with self._ack:
            self._to_ack = max(self._to_ack, position)
        self._tell_acknowledged()

    def _tell_acknowledged(self) -> None:
        s = self.subscription
        with self._ack:
            position = self._to_ack
            if s is None or position <= self._acked or position > self.available:
                return
            self._acked = position
        s.on_commit(position)

    @property
    def payload_bytes(self) -> int:
        """Row bytes this link received (a positions-only stream receives none: they go to executors)."""
        s = self.subscription
        return 0 if s is None else int(s.payload_bytes)

    def retention(self) -> dict[str, int]:
        s = self.subscription  # a dict: the server's message, shown as is in the source's progress JSON
        return {} if s is None else dict(s.retention)

    def detach(self) -> None:
        s = self.subscription
        if s is not None:
            s.detach()


__all__ = ["PartitionLink"]
