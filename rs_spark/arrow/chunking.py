"""A Publisher of elements as a Publisher of record batches, converted where the Publisher lives.

:func:`record_batches` wraps a Publisher of dicts, tuples, Rows, dataclasses or RecordBatches and
emits pyarrow RecordBatches made by a ``convert`` function (an :class:`~.convert.ElementConverter`'s,
with Spark's value rules where the caller has them). Elements are converted in chunks, so an
endpoint serves them with the ``arrow`` codec instead of one JSON text per element.

Demand: ``request(k)`` from downstream asks for ``k`` batches, and upstream for at most
``k * size`` elements in all (what is buffered or on its way counts), so what waits here is
bounded by demand. The first ask is for one element: a Publisher of RecordBatches is then asked
for one batch per batch wanted (each passes on its own, conformed to the schema), any other for
``size`` elements per batch, the first batch's rest at once (so the first batch is as big as the
rest: an endpoint sizes its asks by the last batch's rows). A chunk is emitted when it is full,
when upstream has delivered all it was asked for, when a synchronous upstream returns from
``request`` (what it emitted inside the call is one chunk), at once for a RecordBatch (on the
thread that emitted it), or, for an upstream that emits plain elements from a thread of its own, on
the timer thread at once (elements that arrive meanwhile join the chunk: batches grow with the
rate, and a slow publisher's element is never held back waiting for company). Elements wait while
no batch is wanted, and join one when one is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

from ..streams.demand import MAX_DEMAND, is_valid_request
from ..streams.drain import QueueSubscription, check_subscriber, subscribe_with
from ..streams.errors import SpecViolation, null_element_error, report_dropped, throw_if_fatal
from ..streams.pipeline import PublisherBase
from ..streams.scheduler import SchedulerLike, default_scheduler
from ..streams.types import Publisher, Subscriber, Subscription

CHUNK_ROWS = 4096
"""Most elements in one converted chunk (one record batch)."""


def chunk_rows(retained: int, held: int | None = None) -> int:
    """Rows per converted chunk for a Publisher served on an endpoint: :data:`CHUNK_ROWS`, at most half
    of ``retained`` (the endpoint's ``Retention.max_records``: it keeps a sent batch whole, so a bigger
    one would pass its bound) and half of ``held`` (the reader's ``maxBufferedRecords``, for a reader
    that takes a batch whole: ``format("reactive")``'s; ``None`` for one that takes rows by credit, the
    real-time source's), and at least 1. The one rule ``read_stream`` and ``realtime.read_stream`` use."""
    return max(1, min(CHUNK_ROWS, retained // 2, CHUNK_ROWS if held is None else held // 2))


Convert = Callable[[list[Any], int], Any]
"""``convert(elements, first_offset)`` -> a RecordBatch (empty when every element was dropped); raises
on an element it refuses (the stream then fails with that error)."""


def record_batches(
    publisher: Publisher[Any],
    convert: Callable[[], Convert],
    size: int = CHUNK_ROWS,
    scheduler: SchedulerLike | None = None,
) -> PublisherBase[Any]:
    """``publisher``'s elements as record batches of at most ``size`` rows; ``convert()`` makes a
    fresh converter for each subscription (offsets in errors count from that subscription's start)."""
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise ValueError(f"record_batches() needs a size > 0, got {size!r}")
    return _RecordBatches(publisher, convert, size, scheduler)


class _RecordBatches(PublisherBase[Any]):
    __slots__ = ("_publisher", "_convert", "_size", "_scheduler")

    def __init__(self, publisher: Publisher[Any], convert: Callable[[], Convert], size: int, scheduler: Any) -> None:
        self._publisher = publisher
        self._convert = convert
        self._size = size
        self._scheduler = scheduler

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        check_subscriber(subscriber)  # rule 1.9
        chunker = Chunker(self._convert(), self._size, self._scheduler)
        subscribe_with(subscriber, chunker.downstream(subscriber))
        self._publisher.subscribe(chunker)


class _Downstream(QueueSubscription):
    __slots__ = ("_chunker",)

    def __init__(self, subscriber: Subscriber[Any], chunker: Chunker) -> None:
        super().__init__(subscriber, on_release=chunker.cancel_up, delay_error=True)  # rows before an error arrive
        self._chunker = chunker

    def request(self, n: int) -> None:
        super().request(n)
        if not self.is_done and is_valid_request(n):
            self._chunker.replenish()


class Chunker:
    """The Subscriber of the wrapped Publisher, and the producer of its downstream's batches."""

    def __init__(self, convert: Convert, size: int, scheduler: SchedulerLike | None) -> None:
        self._convert = convert
        self._size = size
        self._scheduler = scheduler
        self._lock = threading.Lock()  # the buffer and the counts
        self._flush_lock = threading.Lock()  # one conversion at a time: batches keep their order
        self._buf: list[Any] = []
        self._asked = 0  # elements requested from upstream
        self._received = 0  # elements received from upstream
        self._converted = 0  # elements taken for conversion
        self._rows = 0  # rows taken for conversion (the next chunk's first offset: a RecordBatch counts its rows)
        self._requesting: int | None = None  # the thread inside upstream.request(), if any
        self._flush_queued = False
        self._per_batch = 0  # elements asked per batch wanted: 0 until the first element, then 1 or size
        self._up: Subscription | None = None
        self._up_cancelled = False
        self._done = False
        self._sub: _Downstream | None = None

    def downstream(self, subscriber: Subscriber[Any]) -> _Downstream:
        self._sub = _Downstream(subscriber, self)
        return self._sub

    # -- Subscriber (from the wrapped Publisher) -----------------------------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise null_element_error("the subscription passed to on_subscribe()")  # rule 2.13
        with self._lock:
            dup = self._up is not None
            if not dup:
                self._up = subscription
            cancelled = self._up_cancelled
        if dup or cancelled:
            subscription.cancel()  # rule 2.5 (a second Subscription), or cancelled before it came
            return
        self.replenish()

    def on_next(self, item: Any) -> None:
        if item is None:
            raise null_element_error("the element passed to on_next()")  # rule 2.13
        self.on_next_many((item,))

    def on_next_many(self, items: Iterable[Any]) -> None:
        """Several elements at once (rs_spark's own sources fuse their chunks this way)."""
        with self._lock:
            if self._done:
                return
            had = len(self._buf)
            self._buf.extend(items)
            if len(self._buf) == had:
                return
            topup = 0
            if not self._per_batch:
                self._per_batch = 1 if _is_arrow(self._buf[had]) else self._size
                if self._per_batch > 1:  # plain elements: the probe's batch is filled, not sent alone
                    topup = max(0, self._size - (self._asked - self._converted))
                    self._asked += topup
            up = self._up
            self._received = len(self._buf) + self._converted
            over = self._received > self._asked
            full = len(self._buf) >= self._size or _is_arrow(self._buf[0])  # a RecordBatch is a chunk itself
            now = full or self._received >= self._asked
            inside = self._requesting == threading.get_ident()
            later = not now and not inside and not self._flush_queued
            if later:
                self._flush_queued = True
        if topup and up is not None:
            self._request_topup(up, topup)
        if over:
            self._fail(
                SpecViolation("1.1", f"the publisher signalled more on_next than were requested ({self._asked})")
            )
            return
        if inside:
            if full:  # an endless synchronous upstream never returns from request(): convert as it goes
                self._convert_buffered(full_only=True)
            return  # the requesting thread flushes the rest when upstream's request() returns
        if now:
            self._flush()
        elif later:
            scheduler = self._scheduler if self._scheduler is not None else default_scheduler()
            scheduler.schedule(0.0, self._flush)

    def on_error(self, error: BaseException) -> None:
        if error is None:
            raise null_element_error("the error passed to on_error()")  # rule 2.13
        self._end(error)

    def on_complete(self) -> None:
        self._end(None)

    # -- demand ----------------------------------------------------------------------------
    def replenish(self) -> None:
        """Convert what is buffered for the downstream's outstanding batches, ask upstream for what they
        may still hold, and convert what a synchronous upstream emits inside each ``request`` (a loop:
        the stack never grows per batch)."""
        self._convert_buffered()
        while self._ask_once():
            self._convert_buffered()

    def _request_topup(self, up: Subscription, n: int) -> None:
        """Ask for the rest of the first batch (rule 3.2: request may be called from on_next)."""
        try:
            up.request(n)
        except BaseException as exc:  # rule 3.16
            throw_if_fatal(exc)
            self._request_failed(n, exc)

    def _ask_once(self) -> bool:
        """One ``request`` upstream, if the downstream wants more than is buffered or on its way."""
        sub = self._sub
        if sub is None:
            return False
        with self._lock:
            up = self._up
            if self._done or up is None or self._requesting is not None:
                return False  # the thread inside request() asks again when it returns
            wanted = sub.outstanding - sub.queued
            per = self._per_batch
            if not per:  # nothing seen yet: one element tells what kind of Publisher this is
                wanted, per = min(wanted, 1), 1
            want = MAX_DEMAND if wanted >= MAX_DEMAND // per else wanted * per
            more = want - (self._asked - self._converted)
            if more <= 0:
                return False
            self._asked += more
            self._requesting = threading.get_ident()
        try:
            up.request(more)
        except BaseException as exc:  # rule 3.16: request returns normally; this one did not
            throw_if_fatal(exc)
            with self._lock:
                self._requesting = None
            self._request_failed(more, exc)
            return False
        with self._lock:
            self._requesting = None
        return True

    def cancel_up(self) -> None:
        """The downstream ended: cancel upstream (once), drop what is buffered."""
        with self._lock:
            self._done = True
            self._buf = []
            up, self._up_cancelled = self._up, True
        if up is not None:
            up.cancel()

    # -- chunks --------------------------------------------------------------------------
    def _flush(self) -> None:
        """Convert what is buffered and hand it downstream; then ask for more (rows dropped as malformed
        leave demand that upstream may fill)."""
        self._convert_buffered()
        self.replenish()

    def _convert_buffered(self, full_only: bool = False, final: bool = False) -> None:
        while self._flush_one(full_only, final):
            pass

    def _flush_one(self, full_only: bool = False, final: bool = False) -> bool:
        """Convert the next chunk (``full_only``: only a full one) if the downstream wants a batch (or
        ``final``: the upstream ended); True when more is buffered. Elements wait here while no batch is
        wanted, so a slow publisher's rows join one batch instead of queueing as many small ones."""
        sub = self._sub
        with self._flush_lock:
            with self._lock:
                if full_only and len(self._buf) < self._size and not (self._buf and _is_arrow(self._buf[0])):
                    return False
                if not final and sub is not None and sub.outstanding - sub.queued <= 0:
                    return False
                self._flush_queued = False
                chunk = _next_chunk(self._buf, self._size)
                del self._buf[: len(chunk)]
                first = self._rows
                self._converted += len(chunk)
                self._rows += sum(map(_rows_of, chunk))
                more = bool(self._buf) and not self._done
            if not chunk or sub is None:
                return False
            try:
                batch = self._convert(chunk, first)
            except BaseException as exc:
                throw_if_fatal(exc)
                self._fail(exc)
                return False
            if batch.num_rows:
                sub.enqueue(batch)
        sub.drain()
        return more

    def _request_failed(self, n: int, exc: BaseException) -> None:
        """The upstream's request raised: what it sent is delivered, then the stream fails (rule 3.16)."""
        with self._lock:
            up, self._up = self._up, None
        if up is not None:
            up.cancel()
        self._convert_buffered(final=True)
        self._fail(SpecViolation("3.16", f"the publisher's Subscription.request({n}) raised {exc!r}"))

    def _fail(self, error: BaseException) -> None:
        """``convert`` refused a chunk: cancel upstream, fail downstream (rule 4.2 style)."""
        self.cancel_up()
        sub = self._sub
        if sub is not None:
            sub.offer_error(error)

    def _end(self, error: BaseException | None) -> None:
        with self._lock:
            if self._done:
                return
            self._up = None  # terminated: never cancel it from here on (rule 2.3)
        self._flush_all()  # what came before the end, an error's too, is delivered first
        with self._lock:
            if self._done:
                return  # a chunk failed while flushing
            self._done = True
        sub = self._sub
        if sub is None:
            report_dropped(error or RuntimeError("completed"), "record_batches: upstream ended before a subscriber")
        elif error is None:
            sub.offer_complete()
        else:
            sub.offer_error(error)

    def _flush_all(self) -> None:
        self._convert_buffered(final=True)


def _is_arrow(item: Any) -> bool:
    return isinstance(item, (pa.RecordBatch, pa.Table))


def _rows_of(item: Any) -> int:
    return int(item.num_rows) if _is_arrow(item) else 1


def _next_chunk(buf: list[Any], size: int) -> list[Any]:
    """The elements of the next batch: one RecordBatch or Table alone, else up to ``size`` plain
    elements (up to the next Arrow element)."""
    if not buf:
        return []
    if _is_arrow(buf[0]):
        return buf[:1]
    n = 1
    while n < len(buf) and n < size and not _is_arrow(buf[n]):
        n += 1
    return buf[:n]


__all__ = ["record_batches", "CHUNK_ROWS", "Chunker"]
