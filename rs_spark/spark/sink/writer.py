"""The ``reactive`` sink's writers: executors stage Arrow, the commit delivers to the hub.

``write()`` (executors) stages its partition as one Arrow IPC stream: inline in the commit
message up to ``inlineMaxBytes``, beyond that as a file at ``stagingLocation``.
``commit(messages, batchId)`` (a Python worker on the driver) sends the staged record batches,
tagged with ``batchId`` and their row positions, over a two-way channel to the
:class:`~rs_spark.delivery.DeliveryHub` that holds the Subscriber, and returns once the
hub acknowledges that every row reached ``on_next``. The channel's credits come from the
Subscriber's demand, so a slow Subscriber slows the commit and the query.

With option ``subscriber`` (a factory) each task builds its own Subscriber and delivers its
rows inside ``write()``: no ordering across tasks, and a retried task delivers again (at least once).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from ...delivery import SinkError, send_control
from ...delivery.wire import tag_batch
from ...net.protocol.address import parse, redact
from .commit_retry import HubUnreachable, send_riding_outages, unreachable
from .options import SinkOptions
from .staging import StagedPartition, read_staged, remove_staged, stage
from .task_delivery import deliver_in_task

log = logging.getLogger("rs_spark.sink")


def deliver(messages: list[Any], batch_id: int, opts: SinkOptions) -> None:
    """Send the staged micro-batch to the hub; return when every row reached the Subscriber."""
    parts = [m for m in messages if isinstance(m, StagedPartition) and m.rows]
    total = sum(m.rows for m in parts)
    # Each try sends the whole micro-batch again (read anew from its staging): the hub skips what it delivered.
    deliver_batches(lambda: _staged(parts, opts), batch_id, total, opts)


def deliver_batches(
    batches: Callable[[], Iterable[pa.RecordBatch]], batch_id: int, total: int, opts: SinkOptions
) -> None:
    """Send micro-batch ``batch_id`` (``total`` rows; ``batches()`` yields its record batches, in order, anew for
    each try) to the hub at ``opts.endpoint``; return when every row reached the Subscriber (or was delivered
    before: the hub's ledger). Both the format("reactive") commit and the foreachBatch route (update mode) send
    this way."""
    if total == 0:
        return
    where = f"micro-batch {batch_id} ({total} rows) to {redact(opts.endpoint) if opts.endpoint else '?'}"
    acks = send_riding_outages(lambda: _send(_tagged(batches(), batch_id, total), where, opts), where, opts)
    _check_ack(acks, where)


def _staged(parts: list[StagedPartition], opts: SinkOptions) -> Iterator[pa.RecordBatch]:
    for m in parts:
        yield from read_staged(m, opts)


def _tagged(batches: Iterable[pa.RecordBatch], batch_id: int, total: int) -> Iterator[pa.RecordBatch]:
    """The record batches, in order, tagged with the micro-batch and their first row."""
    start = 0
    for b in batches:
        if b.num_rows:
            yield tag_batch(b, batch_id, start, total)
            start += b.num_rows


def _send(batches: Iterator[pa.RecordBatch], where: str, opts: SinkOptions) -> list[pa.RecordBatch]:
    """Send ``batches`` over one commit channel; the hub's answers (one acknowledgement)."""
    from ...net import connect_processor
    from ...net.protocol.errors import NetError, RemoteError
    from ...streams import from_iterable, to_list

    proc = None
    try:
        proc = connect_processor(opts.endpoint or "", codec="arrow", **opts.client_options())
        from_iterable(batches).subscribe(proc)
        return to_list(proc, timeout=opts.commit_timeout)
    except TimeoutError as exc:
        raise SinkError(
            f"delivering {where}: the Subscriber did not take the rows within commitTimeout="
            f"{opts.commit_timeout} s; it requests too slowly, or raise commitTimeout"
        ) from exc
    except RemoteError as exc:
        raise SinkError(f"delivering {where}: {exc.type_name}: {exc.remote_message}") from exc
    except NetError as exc:
        if unreachable(exc):  # tried again by send_riding_outages
            raise HubUnreachable(str(exc)) from exc
        raise SinkError(
            f"delivering {where}: {exc}; is the process serving the Subscriber running? Restart the "
            "query from its checkpoint once it is: no row is delivered twice"
        ) from exc
    finally:
        if proc is not None:
            proc.close()  # Python workers may be reused: leave no channel open behind


def _check_ack(acks: list[pa.RecordBatch], where: str) -> None:
    """Raise unless the hub acknowledged every row as delivered (now, or before: a duplicate)."""
    if len(acks) != 1 or acks[0].num_rows != 1:
        raise SinkError(f"delivering {where}: the sink endpoint answered {acks!r}; it is not an rs_spark sink hub")
    ack = acks[0].to_pylist()[0]
    if ack["status"] not in ("delivered", "duplicate"):
        raise SinkError(
            f"delivering {where}: the hub reports {ack['status']} ({ack['delivered']} of {ack['rows']} rows delivered)"
        )
    if ack["status"] == "duplicate":
        log.info(
            "sink: %s was delivered before (a restart from checkpoint, or a try whose answer was lost); "
            "not delivered again",
            where,
        )


class _WriterBase:
    """What the stream and batch writers share: ``write`` on executors, commit and abort on the driver."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedPartition:
        if self.opts.subscriber:
            return deliver_in_task(iterator, self.opts)
        return stage(iterator, self.opts)

    def _commit(self, messages: list[WriterCommitMessage | None], batch_id: int) -> None:
        if self.opts.subscriber:
            return  # factory mode: the tasks delivered already
        try:
            deliver(list(messages), batch_id, self.opts)
        finally:
            remove_staged(list(messages), self.opts)

    def _abort(self, messages: list[WriterCommitMessage | None], batch_id: int) -> None:
        # Spark calls this (in a Python process it starts on the driver) after a micro-batch's write
        # failed, e.g. because query.stop() cancelled its tasks; it logs "MicroBatchWrite[...] is
        # aborting" at ERROR level first, for every sink, its own noop too. When Spark then logs
        # "failed to abort", this method never ran: stop() interrupts the query thread that starts
        # and talks to that Python process, and the interrupted channel I/O fails
        # (ClosedByInterruptException, added to the stop as suppressed, so no trace). Seen when
        # stop()'s job cancellation reaches the thread before its interrupt. Nothing here raises
        # on a missing hub (the warning below). Stopping between micro-batches avoids both
        # (rs_spark.examples.stopping); nothing is lost either way: the batch runs again after a
        # restart and the hub's ledger keeps it from being delivered twice.
        remove_staged(list(messages), self.opts)
        if not self.opts.endpoint:
            return
        try:
            send_control(
                self._control_address(),
                {
                    "op": "abort",
                    "batch_id": batch_id,
                    "reason": "a task of the batch failed",
                    "keep": self.opts.keep_on_abort,
                },
                tls=self.opts.tls,
            )
        except Exception as exc:  # the query fails anyway; the hub learns at query end
            log.warning(
                "sink: could not tell %s that micro-batch %d was aborted: %s",
                redact(self.opts.endpoint),
                batch_id,
                _without_token(str(exc), self.opts.token),
            )

    def _control_address(self) -> str:
        a = parse(self.opts.endpoint or "")
        if self.opts.token and not a.token:
            a = a.with_token(self.opts.token)
        return a.format(with_token=True)


def _without_token(text: str, token: str | None) -> str:
    """``text`` with the token's value masked: errors from below may quote an address in full."""
    return text.replace(token, "***") if token else text


class ReactiveStreamWriter(_WriterBase, DataSourceStreamArrowWriter):
    """``writeStream.format("reactive")``."""

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._commit(messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._abort(messages, batchId)


class ReactiveBatchWriter(_WriterBase, DataSourceArrowWriter):
    """``write.format("reactive")``: the whole DataFrame as one delivery (the hub numbers it after
    the last micro-batch in its ledger: each write is new data)."""

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._commit(messages, -1)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._abort(messages, -1)


__all__ = ["ReactiveStreamWriter", "ReactiveBatchWriter", "deliver", "deliver_batches"]
