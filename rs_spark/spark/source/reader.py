"""The ``reactive`` source's readers: micro-batch offsets become ``request(n)`` demand.

Which process runs what (docs/architecture.md, "Processes"): the reader object is built in a
planner worker and pickled to executors, so it holds nothing live until first used. In Spark's
long-lived driver-side reader process, the first ``latestOffset``/``partitions`` call builds the
live state (:class:`~.live.Live`: the subscription, the converter, the replay store).
``read(partition)`` runs on executors and only reads what the partition carries or names
(:mod:`.partitions`).

Offsets are :class:`~.offsets.StreamOffset`: ``offset`` counts records received from the publisher
since the query began (a RecordBatch element counts its rows). When the publisher can replay they
also carry the stream position (and an endpoint stream's key), so a restarted reader asks again
from there (:mod:`.upstream`); Spark's checkpoint is then all the state a restart needs.
Acknowledgements upstream follow Spark's ``commit`` only (docs/guarantees.md, "Acknowledgements").
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from ...arrow.convert import ElementConverter
from ...arrow.ipc import to_ipc
from ...streams.errors import SpecViolation
from .data_loss import DataLossError, report_data_loss
from .intake import Intake, PublisherFailed
from .live import Live, inline_max_bytes
from .offsets import PartitionedOffset, StreamOffset
from .offsets import parse as parse_offset
from .options import SourceOptions
from .partitions import FetchPartition, InlinePartition, LogPartition, SubscribePartition, read_partition, split_log
from .replay_log import MissingData
from .resolve import make_publisher

log = logging.getLogger("rs_spark.source")


def default_read_limit(o: SourceOptions) -> ReadLimit:
    """Spark's read limit from maxRecordsPerTrigger / minRecordsPerTrigger (else everything available)."""
    if o.max_records_per_trigger is not None:
        return ReadMaxRows(o.max_records_per_trigger)
    if o.min_records_per_trigger is not None:
        return ReadMinRows(o.min_records_per_trigger)
    return ReadAllAvailable()


class ReactiveStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming reader: demand per micro-batch from the read limit. ``clock``: seconds on a monotonic
    clock, for maxTriggerDelay and the on_subscribe wait (a test passes one it moves by hand)."""

    def __init__(self, opts: SourceOptions, schema: StructType, clock: Callable[[], float] = time.monotonic) -> None:
        self._opts = opts
        self._clock = clock
        self._schema_json = schema.json()
        self._live: Live | None = None
        self._available_now = False
        self._moved_reported = False

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_live"] = None  # executors never need (or could unpickle) the live subscription
        return state

    # -- live state --------------------------------------------------------------------
    def _arrow_schema(self) -> pa.Schema:
        return to_arrow_schema(StructType.fromJson(json.loads(self._schema_json)), timezone="UTC")

    def _state(self, start: StreamOffset, end: StreamOffset | None = None) -> Live:
        if self._live is None:
            self._live = Live(self._opts, self._arrow_schema(), start, end, clock=self._clock)
        return self._live

    # -- offsets ------------------------------------------------------------------------
    def _offset(self, d: dict) -> StreamOffset:
        """Spark's offset, typed; one the partitioned reader wrote starts over (reported)."""
        o = parse_offset(d)
        if isinstance(o, PartitionedOffset):
            self._from_partitions(o)
            return StreamOffset(0)
        return o

    def _from_partitions(self, o: PartitionedOffset) -> None:
        """The checkpoint was written reading partitions (executorFetch): this reader cannot continue
        their streams (the endpoints keep them for executors to fetch), so their kept rows would not be
        read: refused (failOnDataLoss), else reported once and a new stream is read."""
        if not o.streams or self._moved_reported:
            return
        self._moved_reported = True
        at = ", ".join(f"{pid} at position {p}" for pid, p in o.positions.items())
        report_data_loss(
            self._opts,
            f"format('reactive'): the checkpoint was written reading partitions ({at}) with executors fetching "
            "from the endpoints (several endpoints, or executorFetch=true); this query reads one endpoint "
            "through its reader process (executorFetch=false), which cannot continue those streams, so the rows "
            "the endpoints kept after the last commit would not be read",
            "Set option executorFetch=true (and keep every partition in option endpoint, as id=address) to read "
            "on from the checkpoint, or start this query with a new checkpointLocation. ",
            "start a new stream (the rows the endpoints kept are not read)",
        )

    # -- DataSourceStreamReader ---------------------------------------------------------
    def initialOffset(self) -> dict:
        return StreamOffset(0).json()

    def getDefaultReadLimit(self) -> ReadLimit:
        return default_read_limit(self._opts)

    def prepareForTriggerAvailableNow(self) -> None:
        # AvailableNow reads until the publisher completes or goes quiet for pollTimeout.
        self._available_now = True

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = self._offset(start)
        s = begin.offset
        live = self._state(begin)
        # A new endpoint stream: its key goes into the checkpoint before any row (Trigger.AvailableNow
        # takes the first answer as its target, so there the stream opens at once, and a driver that
        # dies before Spark records the first offset leaves those rows with the endpoint).
        first = None if self._available_now else live.upstream.first_offset(s)
        if first is not None:
            return first.json()
        live.subscribe()
        # Acknowledged in commit() only: with asyncProgressTrackingEnabled Spark asks for the next
        # batch before the commit log holds the last one (docs/guarantees.md). Spark refuses async
        # progress tracking with AvailableNow, whose last batch gets no commit(): here it can.
        if self._available_now:
            live.acknowledge(s)
        planned = live.planned_end(s)
        if planned is not None:  # logged before a restart but never run: replay it first
            return live.upstream.offset(planned).json()
        if s != live.next_offset:
            s = self._realign(live, s)
        live.check_subscribed()
        live.note_received()  # includes what prefetch received while Spark ran the last batch
        max_rows, min_rows = self._rate_limit(limit)
        if self._available_now and live.available_now_done:
            return start
        want = self._request(live.intake, max_rows, min_rows)
        if self._delay_batch(live, min_rows):
            return start
        elements, taken = live.intake.take_rows(max_rows)
        if not elements:
            self._nothing_to_plan(live, s)
            return self._release(live, begin) or start
        end = live.plan(s, elements, taken)
        if self._opts.prefetch:
            live.prefetch_later(want)
        live.note_received()  # so a crash's in-flight records are counted at the next start
        return live.upstream.offset(end).json()

    def _release(self, live: Live, begin: StreamOffset) -> dict | None:
        """Nothing to plan while the rows before ``begin`` are not acknowledged: an offset naming no
        new rows (``release`` + 1), so Spark plans an empty micro-batch and then calls commit for
        the batch ending at ``begin`` (only then: docs/guarantees.md), and the publisher (an endpoint
        at its retention bound) can go on. Once per position; never in AvailableNow (which ends)."""
        position = begin.position
        if self._available_now or position is None or position <= max(live.upstream.acked, 0):
            return None
        if live.upstream.origin is None or live.upstream.key != begin.stream:
            return None  # a stream this process started over: nothing of `begin` to acknowledge
        return dataclasses.replace(begin, release=begin.release + 1).json()

    def _rate_limit(self, limit: ReadLimit) -> tuple[int | None, int | None]:
        """``(max_rows, min_rows)`` of this micro-batch, from Spark's limit and the options."""
        o = self._opts
        if isinstance(limit, ReadMaxRows):
            return limit.max_rows, o.min_records_per_trigger
        if isinstance(limit, ReadMinRows):
            return o.max_records_per_trigger, limit.min_rows
        return None, None

    def _request(self, intake: Intake, max_rows: int | None, min_rows: int | None) -> int:
        """Signal demand for this micro-batch and wait up to pollTimeout for it; the elements wanted."""
        o = self._opts
        if intake.received_rows == 0 and intake.buffered == 0 and not intake.terminated:
            # Learn how many rows an element carries before asking for many (RecordBatch publishers).
            intake.demand_up_to(1)
            intake.wait(1, o.poll_timeout)
        want = self._elements_for(intake, max_rows or min_rows)
        intake.chunk = max(1024, min(65_536, want // 4))  # the converter thread's bite: ~4 per micro-batch
        intake.demand_up_to(want)
        intake.wait(max_rows or min_rows or 1, o.poll_timeout)
        return want

    def _delay_batch(self, live: Live, min_rows: int | None) -> bool:
        """True to plan nothing yet: fewer than minRecordsPerTrigger and maxTriggerDelay not reached.
        A spec violation or a terminal signal never waits (its records are delivered first)."""
        intake = live.intake
        rows = intake.buffered_rows
        if min_rows is None or rows >= min_rows or intake.terminated or intake.violated:
            return False
        return rows == 0 or self._clock() - live.last_batch_at < self._opts.max_trigger_delay

    def _nothing_to_plan(self, live: Live, s: int) -> None:
        """No records to plan: continue a stream the endpoint no longer keeps; raise what ended the
        publisher, or what it broke; else note AvailableNow's end."""
        if live.resume_refused(s):
            return
        intake = live.intake
        intake.check()
        err = intake.failed
        if err is not None:
            raise PublisherFailed(err, s)
        if intake.subscription is None and not intake.terminated:
            self._await_on_subscribe(live)
            return
        if self._available_now:
            # The publisher completed, or sent nothing within pollTimeout although records were
            # requested: what was available has been read, so Trigger.AvailableNow ends here.
            live.available_now_done = True
            if not intake.completed:
                log.warning(
                    "format('reactive'): Trigger.AvailableNow ends at offset %d: the publisher sent nothing "
                    "for pollTimeout=%ss although %d records were requested, and has not completed. If it "
                    "is slow rather than done, raise option pollTimeout",
                    s,
                    self._opts.poll_timeout,
                    intake.outstanding,
                )

    def _await_on_subscribe(self, live: Live) -> None:
        """Rule 1.9: subscribe() must be followed by on_subscribe; without it no demand can be
        signalled, so waiting longer cannot help: fail after a bounded wait."""
        intake = live.intake
        # Spark (AvailableNow) would take an empty answer as "no more data": wait for on_subscribe.
        left = live.on_subscribe_limit() - (self._clock() - live.subscribed_at)
        intake.wait_subscribed(left, lambda: live.subscribe_error is not None)
        live.check_subscribed()
        waited = self._clock() - live.subscribed_at
        if intake.subscription is None:
            raise SpecViolation(
                "1.9",
                (
                    f"format('reactive'): the publisher did not call on_subscribe within {waited:.0f} s of "
                    "subscribe(), so no records can be requested; fix the publisher (or its factory) to "
                    "call subscriber.on_subscribe(subscription) first"
                ),
            )

    def _elements_for(self, intake: Intake, rows: int | None) -> int:
        if rows is None:
            return self._opts.max_buffered
        return max(1, math.ceil(rows / max(intake.rows_per_element(), 1e-9)))

    def _realign(self, live: Live, s: int) -> int:
        """Spark's start differs from ours: only after a restart without (enough) log."""
        if s > live.next_offset:
            live.next_offset = s
            return s
        # s < next_offset: rows [s, next_offset) were planned but their plan is gone.
        msg = (
            f"format('reactive'): Spark asked for records from offset {s}, but this reader already "
            f"planned up to {live.next_offset} and cannot find the batch starting at {s}"
        )
        report_data_loss(self._opts, msg, "", "continue from the current offset")
        return s

    def reportLatestOffset(self) -> dict | None:
        live = self._live
        if live is None:
            return None
        progress = live.progress()
        live.prefetch_now()  # Spark's next call here comes after its offset log write: see Live.prefetch_later
        return progress

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        parts = self._partitions(start, end)
        if self._live is not None:
            self._live.prefetch_now()  # if reportLatestOffset did not (a Spark that never calls it)
        return parts

    def _partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, until = self._offset(start), self._offset(end)
        s, e = begin.offset, until.offset
        if s == e:
            return []
        live = self._state(begin, until)
        if live.log is not None:
            try:
                segs = live.log.covering(s, e)
            except MissingData as exc:
                return self._lost(s, e, str(exc))
            return split_log(live.log.uri, [(seg.name, seg.rows) for seg in segs], self._opts.num_partitions)
        planned = live.memory.get(s)
        if (planned is None or planned.end != e) and live.replan(s, e):
            planned = live.memory.get(s)  # asked again from the publisher, which can replay
        if planned is None or planned.end != e:
            return self._lost(
                s,
                e,
                f"the micro-batch [{s}, {e}) was planned by an earlier reader process "
                "(the driver restarted) and was kept only in its memory",
            )
        return self._partitions_of(live, s, planned.table)

    def _partitions_of(self, live: Live, s: int, table: pa.Table) -> list[InputPartition]:
        """A planned micro-batch in memory as numPartitions partitions: inline or fetched."""
        rows = table.num_rows
        if rows == 0:
            return []
        n = self._opts.num_partitions
        parts: list[InputPartition] = []
        step = math.ceil(rows / n)
        inline = self._opts.batch_transport == "inline" or (
            self._opts.batch_transport == "auto" and table.nbytes <= inline_max_bytes(self._opts)
        )
        server = None if inline else live.server()
        for lo in range(0, rows, step):
            hi = min(lo + step, rows)
            if server is None:
                piece = table.slice(lo, hi - lo).combine_chunks().to_batches()
                parts.append(InlinePartition(to_ipc(piece, live.schema), s + lo))
            else:
                # this range's credential only; the private file first on this host
                parts.append(FetchPartition(server.grant(s, lo, hi), s, lo, hi, live.local_file(s)))
        return parts

    def _lost(self, s: int, e: int, why: str) -> list[InputPartition]:
        report_data_loss(
            self._opts,
            f"format('reactive'): records at offsets [{s}, {e}) cannot be replayed: {why}",
            "Set option logPath for durable replay, or read an endpoint or a replayable publisher. ",
            f"skip these {e - s} records (they are lost)",
        )
        return []

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition)

    def commit(self, end: dict) -> None:
        live = self._live
        if live is None:
            return
        e = self._offset(end).offset
        # Spark calls commit(end) once its commit log durably holds the batch ending at `end`
        # (MicroBatchExecution: after commitLog.add; with async progress tracking only for batches
        # whose offset and commit log writes are on disk): only then may the publisher forget them.
        live.acknowledge(e)
        if live.log is not None:
            live.log.truncate_before(e)
        for k in [k for k, p in live.memory.items() if p.end <= e]:
            live.forget(k)

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()


class ReactiveBatchReader(DataSourceReader):
    """``spark.read.format("reactive")``: a finite publisher read to completion on one executor."""

    def __init__(self, opts: SourceOptions, schema: StructType) -> None:
        self._opts = opts
        self._schema_json = schema.json()

    def partitions(self) -> list[InputPartition]:
        return [SubscribePartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from ...streams.subscribers import BlockingIterator

        schema = to_arrow_schema(StructType.fromJson(json.loads(self._schema_json)), timezone="UTC")
        converter = ElementConverter(schema, self._opts.mode, self._opts.corrupt_column, add_corrupt_column=False)
        chunk = min(self._opts.max_buffered, 65_536)
        it = BlockingIterator(prefetch=chunk)
        make_publisher(self._opts, schema).subscribe(it)
        offset = 0
        pending: list[Any] = []
        rows = 0
        with it:
            for element in it:
                pending.append(element)
                rows += converter.rows_of(element)
                if rows >= chunk:
                    yield from _nonempty(converter.convert(pending, offset).batch)
                    offset += rows
                    pending, rows = [], 0
            if pending:
                yield from _nonempty(converter.convert(pending, offset).batch)


def _nonempty(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    if batch.num_rows:
        yield batch


__all__ = [
    "ReactiveStreamReader",
    "ReactiveBatchReader",
    "DataLossError",
    "InlinePartition",
    "LogPartition",
    "FetchPartition",
]
