"""The ``reactive`` sink's writers: executors stage Arrow, the commit delivers to the hub.

``write()`` (executors) stages its partition as one Arrow IPC stream: inline in the commit
message up to ``inlineMaxBytes``, beyond that as a file at ``stagingLocation``.
``commit(messages, batchId)`` (a Python worker on the driver) sends the staged record batches,
tagged with ``batchId`` and their row positions, over a two-way channel to the
:class:`~rs_spark.spark.delivery.DeliveryHub` that holds the Subscriber, and returns once the
hub acknowledges that every row reached ``on_next``. The channel's credits come from the
Subscriber's demand, so a slow Subscriber slows the commit and the query.

With option ``subscriber`` (a factory) each task builds its own Subscriber and delivers its
rows inside ``write()``: no ordering across tasks, and a retried task delivers again (at least once).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from ..arrow.validate import iter_stream
from ..net.address import parse as parse_address
from ..net.address import redact
from .delivery import SinkError, batch_meta, send_control, tag_batch
from .elements import batch_elements
from .options import OptionError
from .private_files import make_dirs, open_new
from .replay_log import open_fs
from .resolve import load_factory
from .sink_options import SinkOptions

log = logging.getLogger("rs_spark.spark.sink")


@dataclasses.dataclass
class StagedPartition(WriterCommitMessage):
    """One task's output: ``rows`` rows, inline Arrow IPC bytes or a staged file, or (factory
    mode) the rows the task's own Subscriber took."""

    rows: int
    inline: bytes | None = None
    path: str | None = None
    delivered: int = 0


# -- executors ------------------------------------------------------------------------------
def stage(batches: Iterable[pa.RecordBatch], opts: SinkOptions) -> StagedPartition:
    sink = pa.BufferOutputStream()
    writer = None
    rows = 0
    for b in batches:
        if writer is None:
            writer = ipc.new_stream(sink, b.schema)
        if b.num_rows:
            writer.write_batch(b)
            rows += b.num_rows
    if writer is None or rows == 0:
        return StagedPartition(0)
    writer.close()
    buf = sink.getvalue()
    if buf.size <= opts.inline_max_bytes:
        return StagedPartition(rows, inline=buf.to_pybytes())
    if not opts.staging_location:
        raise OptionError(
            f"a partition of this micro-batch is {buf.size} bytes of Arrow, more than option inlineMaxBytes="
            f"{opts.inline_max_bytes} allows inside a commit message; set option stagingLocation (a directory "
            "every executor and the driver can reach: local path in local mode, s3://, hdfs://, ...) or raise "
            "inlineMaxBytes. Nothing of this batch was delivered; restart the query after the fix"
        )
    fs, root = open_fs(opts.staging_location)
    make_dirs(fs, root)
    path = f"{root.rstrip('/')}/part-{uuid.uuid4().hex}.arrow"
    with open_new(fs, path) as f:
        f.write(buf)
    return StagedPartition(rows, path=path)


def read_staged(m: StagedPartition, opts: SinkOptions) -> Iterator[pa.RecordBatch]:
    if m.inline is not None:
        yield from iter_stream(pa.py_buffer(m.inline), f"the inline staged partition ({m.rows} rows)")
    elif m.path is not None:
        fs, _ = open_fs(opts.staging_location or "/")
        try:
            f = fs.open_input_stream(m.path)
        except (OSError, FileNotFoundError) as exc:
            raise SinkError(
                f"staged partition {m.path} ({m.rows} rows) cannot be read at commit: {exc}; the "
                "driver must reach option stagingLocation"
            ) from None
        with f:
            data = f.read_buffer()
        yield from iter_stream(data, f"the staged partition {m.path} ({m.rows} rows)")


def remove_staged(messages: list[Any], opts: SinkOptions) -> None:
    paths = [m.path for m in messages if isinstance(m, StagedPartition) and m.path]
    if not paths:
        return
    fs, _ = open_fs(opts.staging_location or "/")
    for p in paths:
        try:
            fs.delete_file(p)
        except OSError:
            pass  # already gone: staging is scratch space


def deliver_in_task(batches: Iterable[pa.RecordBatch], opts: SinkOptions) -> StagedPartition:
    """Factory mode: this task's rows into a Subscriber built here, within its demand."""
    from ..streams import from_iterable

    factory = load_factory(opts.subscriber or "", option="subscriber")
    sub = factory(dict(opts.raw))
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


# -- commit (driver-side Python worker) --------------------------------------------------------
def deliver(messages: list[Any], batch_id: int, opts: SinkOptions) -> None:
    """Send the staged micro-batch to the hub; return when every row reached the Subscriber."""
    from ..net import connect_processor
    from ..net.errors import NetError, RemoteError
    from ..streams import from_iterable, to_list

    parts = [m for m in messages if isinstance(m, StagedPartition) and m.rows]
    total = sum(m.rows for m in parts)
    if total == 0:
        return

    def tagged() -> Iterator[pa.RecordBatch]:
        start = 0
        for m in parts:
            for b in read_staged(m, opts):
                if b.num_rows:
                    yield tag_batch(b, batch_id, start, total)
                    start += b.num_rows

    kwargs = {"token": opts.token} if opts.token else {}
    where = f"micro-batch {batch_id} ({total} rows) to {opts.endpoint.split('?')[0] if opts.endpoint else '?'}"
    proc = None
    try:
        proc = connect_processor(opts.endpoint or "", codec="arrow", **kwargs)
        from_iterable(tagged()).subscribe(proc)
        acks = to_list(proc, timeout=opts.commit_timeout)
    except TimeoutError:
        raise SinkError(
            f"delivering {where}: the Subscriber did not take the rows within commitTimeout="
            f"{opts.commit_timeout} s; it requests too slowly, or raise commitTimeout"
        ) from None
    except RemoteError as exc:
        raise SinkError(f"delivering {where}: {exc.type_name}: {exc.remote_message}") from None
    except NetError as exc:
        raise SinkError(
            f"delivering {where}: {exc}; is the process serving the Subscriber running? Restart the "
            "query from its checkpoint once it is: no row is delivered twice"
        ) from None
    finally:
        if proc is not None:
            proc.close()  # Python workers may be reused: leave no channel open behind
    if len(acks) != 1 or acks[0].num_rows != 1:
        raise SinkError(f"delivering {where}: the sink endpoint answered {acks!r}; it is not an rs_spark sink hub")
    ack = acks[0].to_pylist()[0]
    if ack["status"] not in ("delivered", "duplicate"):
        raise SinkError(
            f"delivering {where}: the hub reports {ack['status']} ({ack['delivered']} of {ack['rows']} rows delivered)"
        )
    if ack["status"] == "duplicate":
        log.info("sink: %s was delivered before (restart from checkpoint); not delivered again", where)


class _WriterBase:
    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedPartition:
        if self.opts.subscriber:
            return deliver_in_task(iterator, self.opts)
        return stage(iterator, self.opts)


class ReactiveStreamWriter(_WriterBase, DataSourceStreamArrowWriter):
    """``writeStream.format("reactive")``."""

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.opts.subscriber:
            return
        try:
            deliver(list(messages), batchId, self.opts)
        finally:
            remove_staged(list(messages), self.opts)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        remove_staged(list(messages), self.opts)
        if self.opts.endpoint:
            try:
                send_control(
                    self._control_address(),
                    {"op": "abort", "batch_id": batchId, "reason": "a task of the batch failed"},
                )
            except Exception as exc:  # the query fails anyway; the hub learns at query end
                log.warning(
                    "sink: could not tell %s that micro-batch %d was aborted: %s",
                    redact(self.opts.endpoint),
                    batchId,
                    _without_token(str(exc), self.opts.token),
                )

    def _control_address(self) -> str:
        a = parse_address(self.opts.endpoint or "")
        if self.opts.token and not a.token:
            a = a.with_token(self.opts.token)
        return a.format(with_token=True)


def _without_token(text: str, token: str | None) -> str:
    """``text`` with the token's value masked: errors from below may quote an address in full."""
    return text.replace(token, "***") if token else text


class ReactiveBatchWriter(_WriterBase, DataSourceArrowWriter):
    _control_address = ReactiveStreamWriter._control_address

    """``write.format("reactive")``: the whole DataFrame as one delivery (batch id from the hub's
    ledger is not used: each write is new data)."""

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.opts.subscriber:
            return
        try:
            deliver(list(messages), -1, self.opts)
        finally:
            remove_staged(list(messages), self.opts)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        ReactiveStreamWriter.abort(self, messages, -1)  # type: ignore[arg-type]


__all__ = [
    "ReactiveStreamWriter",
    "ReactiveBatchWriter",
    "StagedPartition",
    "stage",
    "deliver",
    "read_staged",
    "batch_meta",
]
