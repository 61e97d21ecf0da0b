"""Factory mode (option ``subscriber``): each task builds its own Subscriber and delivers its
rows inside ``write()``, within that Subscriber's demand. No order across tasks; a retried task
delivers again (at least once)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from ...delivery import SinkError
from ...delivery.elements import batch_elements
from ...streams import from_iterable
from ...streams.errors import throw_if_fatal
from ..factories import load_factory
from ..options import OptionError
from .options import SinkOptions
from .staging import StagedPartition


def deliver_in_task(batches: Iterable[pa.RecordBatch], opts: SinkOptions) -> StagedPartition:
    """Factory mode: this task's rows into a Subscriber built here, within its demand."""
    factory = load_factory(opts.subscriber or "", option="subscriber")
    sub = factory(dict(opts.factory))
    if sub is None or not callable(getattr(sub, "on_subscribe", None)):
        raise OptionError(
            f"option subscriber={opts.subscriber!r}: the factory returned {sub!r}, which is not a "
            "Subscriber (on_subscribe/on_next/on_error/on_complete)"
        )
    task = _TaskDelivery(sub, batches, opts.elements)
    from_iterable(task.items()).subscribe(task)
    if not task.done.wait(opts.commit_timeout):
        task.cancel_upstream()
        raise SinkError(
            f"subscriber factory {opts.subscriber!r}: the Subscriber requested too little to take this "
            f"task's rows within commitTimeout={opts.commit_timeout} s ({task.taken} taken)"
        )
    task.raise_failure(opts.subscriber)
    return StagedPartition(0, delivered=task.taken)


class _TaskDelivery:
    """Feeds one task's rows to the user's Subscriber (standing between it and the source) and
    records how the stream ended: completed, failed, the Subscriber raised, or it cancelled."""

    def __init__(self, sub: Any, batches: Iterable[pa.RecordBatch], elements: str) -> None:
        self._sub = sub
        self._batches = batches
        self._elements = elements
        self._upstream: Any = None
        self.taken = 0  # elements (rows for batches) handed to the source so far
        self.done = threading.Event()
        self.raised: BaseException | None = None  # what the Subscriber's on_next raised
        self.error: BaseException | None = None  # what the source signalled
        self.cancelled = False  # the Subscriber cancelled

    def items(self) -> Iterator[Any]:
        for b in self._batches:
            if not b.num_rows:
                continue
            if self._elements == "batches":
                self.taken += b.num_rows
                yield b
                continue
            for r in batch_elements(b, self._elements):
                self.taken += 1
                yield r

    def cancel_upstream(self) -> None:
        if self._upstream is not None:
            self._upstream.cancel()

    def raise_failure(self, factory: str | None) -> None:
        """Raise what ended the stream abnormally, if anything, saying where."""
        if self.raised is not None:
            exc = self.raised
            throw_if_fatal(exc)
            raise SinkError(
                f"the Subscriber from {factory!r} raised {type(exc).__name__}: {exc} in on_next after "
                f"{self.taken - 1} elements of this task (rule 2.13: treated as cancellation)"
            ) from exc
        if self.cancelled:
            raise SinkError(
                f"the Subscriber from {factory!r} cancelled its subscription after {self.taken} elements "
                "of this task; the query stops"
            )
        if self.error is not None:
            raise self.error

    # -- Subscriber of the source, forwarding to the user's --------------------------------
    def on_subscribe(self, s: Any) -> None:
        self._upstream = s
        self._sub.on_subscribe(_WatchedSubscription(s, self._subscriber_cancelled))

    def on_next(self, item: Any) -> None:
        try:
            self._sub.on_next(item)
        except BaseException as exc:  # rule 2.13: treat as cancellation, fail the task with it
            self.raised = exc
            self.cancel_upstream()
            self.done.set()
            # Ctrl-C / exit also go on up (the source's drain reports them); the waiting task
            # re-raises them as they are (raise_failure).
            throw_if_fatal(exc)

    def on_error(self, e: BaseException) -> None:
        self.error = e
        try:
            self._sub.on_error(e)
        finally:
            self.done.set()

    def on_complete(self) -> None:
        try:
            self._sub.on_complete()
        finally:
            self.done.set()

    def _subscriber_cancelled(self) -> None:
        self.cancelled = True
        self.cancel_upstream()
        self.done.set()


class _WatchedSubscription:
    """The Subscription the user's Subscriber gets: its cancel goes through ``on_cancel``."""

    def __init__(self, s: Any, on_cancel: Any) -> None:
        self._s = s
        self._on_cancel = on_cancel

    def request(self, n: int) -> None:
        self._s.request(n)

    def cancel(self) -> None:
        self._on_cancel()  # records the cancel, then cancels the source


__all__ = ["deliver_in_task"]
