"""Where the source's rows come from, and how the source gets back there after a restart.

A Reactive Streams Publisher owes nothing after ``on_next``; two kinds can give rows again:

* a :class:`~rs_spark.streams.types.Replayable` publisher (factory mode: ``from_iterable`` over a
  list or range, the demo's sensor feed, your own with ``subscribe_at(subscriber, position)``):
  it starts wherever it is asked;
* an rs_spark.net endpoint read as a resumable stream (endpoint mode, option ``resumable``, on by
  default): the serving side keeps what it sent until the source acknowledges it
  (:mod:`rs_spark.net.zero_loss.resume`), and a restarted reader resumes the same stream.

For those, offsets carry the position (:class:`~.offsets.StreamOffset`, with ``stream`` for an
endpoint), so a restarted reader knows where to ask again: Spark's checkpoint is the only
state needed, and the replay log becomes optional. Once Spark's commit log holds the micro-batch
ending at an offset (Spark calls the reader's ``commit``), its position is acknowledged upstream
(``on_commit``, :class:`Committable`): on the Subscription when it takes it (an endpoint's), else
on the Publisher (a broker reader acking its upstream), positions increasing, once each.
"""

from __future__ import annotations

import logging
from typing import Any

from ....net.zero_loss.resume import new_key
from ....streams.types import Subscription
from ..offsets import StreamOffset
from ..options import SourceOptions
from ..resolve import make_publisher
from .intake import Intake

log = logging.getLogger("rs_spark.source")


class Upstream:
    """The publisher of one query's reader process, and the mapping offset <-> position."""

    def __init__(self, opts: SourceOptions, schema: Any, start: StreamOffset, end: StreamOffset | None = None) -> None:
        self._opts = opts
        self._schema = schema
        self._publisher: Any = None
        ref = end if end is not None and end.position is not None else start
        self.key: str | None = ref.stream if ref.position is not None else None
        # The offset of position 0: known from the checkpoint for a stream that can be resumed,
        # else set when the first subscription starts.
        self.origin: int | None = ref.offset - ref.position if ref.position is not None else None
        self.resuming = self.origin is not None  # the first subscription continues a known stream
        self._new_key = False
        self._acked = -1

    # -- the publisher -----------------------------------------------------------------------
    def publisher(self) -> Any:
        """The Publisher (built once): an endpoint read as a resumable stream unless
        ``resumable=false``."""
        if self._publisher is None:
            pub = make_publisher(self._opts, self._schema)
            if self._opts.endpoint and self._opts.resumable:
                pub = pub.resumable(
                    self.key, window=self._opts.resume_window, new=self._new_key, backoff=self._opts.link.backoff
                )
                self.key = pub.key
            self._publisher = pub
        return self._publisher

    @property
    def replayable(self) -> bool:
        """Whether a restarted reader can ask for rows again (offsets then carry positions)."""
        return callable(getattr(self.publisher(), "subscribe_at", None))

    def subscribe(self, intake: Intake, offset: int) -> None:
        """Subscribe ``intake`` so that its first row is the one at ``offset``."""
        pub = self.publisher()
        if not self.replayable:
            self.origin = offset
            pub.subscribe(intake)
            return
        if self.origin is None:
            self.origin = offset  # a new stream, or a replayable publisher from its beginning
        pub.subscribe_at(intake, offset - self.origin)

    def start_over(self, offset: int) -> None:
        """The stream could not be resumed: the next subscription starts a new one at ``offset``."""
        self._publisher = None
        self.key = None
        self.origin = None
        self.resuming = False
        self._acked = -1

    @property
    def key_unrecorded(self) -> bool:
        """An endpoint stream whose key the checkpoint does not hold yet (:meth:`first_offset` names one)."""
        return self.key is None and bool(self._opts.endpoint and self._opts.resumable)

    def takes_acknowledgements(self, subscription: Any) -> bool:
        """Whether the publisher may keep rows until they are acknowledged: it can replay, or it (or
        its Subscription) takes ``on_commit``."""
        if self.replayable:
            return True
        return callable(getattr(subscription, "on_commit", None)) or callable(
            getattr(self._publisher, "on_commit", None)
        )

    def first_offset(self, offset: int) -> StreamOffset | None:
        """For an endpoint stream not yet in the checkpoint: the offset naming a new stream key at
        position 0, returned before any row is asked for (None otherwise). Spark records it (an empty
        first micro-batch) before the stream is opened, so a driver that dies at any later point is
        restarted with the key and loses nothing it was sent."""
        if self.key is not None or not (self._opts.endpoint and self._opts.resumable):
            return None
        self.key = new_key()
        self.origin = offset
        self._new_key = True  # opened under this key by this process (no RESUME first), unless it restarts
        return self.offset(offset)

    # -- offsets and acknowledgements ------------------------------------------------------
    def offset(self, n: int) -> StreamOffset:
        """Spark's offset for row ``n``: with the position where the rows can be asked again."""
        if self.origin is None or not self.replayable:
            return StreamOffset(n)
        return StreamOffset(n, self.key, n - self.origin)

    def acknowledge(self, intake: Intake, offset: int) -> None:
        """Spark committed every row before ``offset``: say so upstream, once per position."""
        origin = self.origin
        if origin is None or offset - origin <= self._acked or offset <= origin:
            return
        position = offset - origin
        self._acked = position
        publisher = self._publisher

        def commit(s: Subscription) -> None:
            hook = getattr(s, "on_commit", None)
            if not callable(hook):
                hook = getattr(publisher, "on_commit", None)
            if callable(hook):
                hook(position)

        intake.call_on_subscription(commit)

    @property
    def acked(self) -> int:
        """The last position acknowledged (-1: none)."""
        return self._acked


__all__ = ["Upstream"]
