"""The ``reactive`` source's readers: micro-batch offsets become ``request(n)`` demand.

Which process runs what (docs/architecture.md, "Processes"): the reader object is built in a planner
worker and pickled to executors, so it holds nothing live until first used. In Spark's
long-lived driver-side reader process, the first ``initialOffset``/``latestOffset``/
``partitions`` call builds the live state: the subscription (an :class:`Intake`), the converter
and the replay store. ``read(partition)`` runs on executors and only reads what the partition
carries (inline Arrow IPC bytes) or names (a slice of a replay-log segment).

Offsets are ``{"offset": n}``: ``n`` counts records received from the publisher since the
query began (a RecordBatch element counts its rows).
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Iterator, Sequence
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
from ...arrow.ipc import from_ipc, to_ipc
from ...net.batch_fetch import Address, BatchServer, FetchError, fetch
from ...streams.errors import SpecViolation, throw_if_fatal
from .bind_address import batch_server_binds
from .intake import Chunk, Intake, PublisherFailed
from .options import SourceOptions
from .replay_log import MissingData, ReplayLog, read_segment_slice
from .resolve import make_publisher
from .sigterm import SigtermStop

log = logging.getLogger("rs_spark.source")

# batchTransport=auto: partitions up to this size travel inside Spark's tasks; larger ones are
# fetched by executors from the reader process (through the JVM costs ~25 ms per MB).
_INLINE_MAX_BYTES = 1 << 20


class DataLossError(RuntimeError):
    """Planned records cannot be replayed and ``failOnDataLoss`` is true."""


def report_data_loss(opts: SourceOptions, message: str, fix: str, continuing: str) -> None:
    """The one place data loss is reported (as Kafka's ``reportDataLoss``): with failOnDataLoss
    the query fails saying how to avoid it (``fix``), else a warning says what happens instead."""
    if opts.fail_on_data_loss:
        raise DataLossError(f"{message}. {fix}Set failOnDataLoss=false to {continuing}.")
    log.warning("%s; %s (failOnDataLoss=false)", message, continuing)


class InlinePartition(InputPartition):
    """Rows carried inside the partition as Arrow IPC bytes (no replay log)."""

    def __init__(self, ipc: bytes, first_offset: int) -> None:
        super().__init__(first_offset)
        self.ipc = ipc


class FetchPartition(InputPartition):
    """Rows ``[lo, hi)`` of the micro-batch planned at offset ``key``, fetched by the executor
    straight from the driver-side reader process (no replay log; large batches)."""

    def __init__(self, address: Address, key: int, lo: int, hi: int) -> None:
        super().__init__(key + lo)
        self.address, self.key, self.lo, self.hi = address, key, lo, hi


class LogPartition(InputPartition):
    """Rows ``[lo, hi)`` of replay-log segments, read by the executor from the log."""

    def __init__(self, uri: str, pieces: list[tuple[str, int, int]]) -> None:
        super().__init__(pieces[0][0] if pieces else None)
        self.uri = uri
        self.pieces = pieces


class _Planned:
    __slots__ = ("end", "table")

    def __init__(self, end: int, table: pa.Table) -> None:
        self.end = end
        self.table = table


class _Live:
    """Everything that exists only in the driver-side reader process."""

    def __init__(self, opts: SourceOptions, arrow_schema: pa.Schema, start: int) -> None:
        self.opts = opts
        self.schema = arrow_schema
        self.converter = ElementConverter(arrow_schema, opts.mode, opts.corrupt_column, add_corrupt_column=False)
        self.log = ReplayLog(opts.log_path) if opts.log_path else None
        self.memory: dict[int, _Planned] = {}
        self._server: BatchServer | None = None
        if self.log is None:
            log.warning(
                "format('reactive') runs without option logPath: planned micro-batches are kept only in the "
                "reader process's memory, so if the driver restarts before a batch commits, its records cannot "
                "be replayed (at-most-once for those; failOnDataLoss decides whether that fails the query). "
                "Set logPath to a durable location for exactly-once replay."
            )
            base = start
        else:
            base = max(start, self.log.end_offset())
            self.report_in_flight_loss(base)
        self.next_offset = base
        self.intake = Intake(opts.max_buffered, base, precompute=self.converter.try_bulk)
        self.last_batch_at = time.monotonic()
        self.malformed = 0
        self.dropped = 0
        self.available_now_done = False
        self._subscribed = False
        self.subscribe_error: BaseException | None = None
        self._noted = -1
        self._stopped = False
        self._stop_lock = threading.Lock()

    def subscribe(self) -> None:
        if self._subscribed:
            return
        self._subscribed = True
        self.subscribed_at = time.monotonic()
        SigtermStop(self.stop).install()  # Spark ends this process with SIGTERM: stop() first
        if self.log is not None:
            threading.Thread(target=self._note_loop, name="rs-reactive-received", daemon=True).start()
        publisher = make_publisher(self.opts, self.schema)
        # subscribe() runs on its own thread: one that blocks (without calling on_subscribe)
        # cannot hang the query; latestOffset then fails it naming rule 1.9 after a bounded wait.
        done = threading.Event()

        def run() -> None:
            try:
                publisher.subscribe(self.intake)
            except BaseException as exc:
                # Recorded even when fatal (SystemExit, CancelledError...), so the query fails
                # saying what subscribe() did rather than waiting for on_subscribe; a fatal error
                # then ends this thread (re-raised below).
                self.subscribe_error = SpecViolation(
                    "1.9",
                    (
                        f"format('reactive'): the publisher's subscribe() raised {type(exc).__name__}: {exc}. "
                        "Publisher.subscribe must return normally and report failures with on_error; fix the "
                        "publisher (or what it connects to) and restart the query"
                    ),
                )
                self.subscribe_error.__cause__ = exc
                throw_if_fatal(exc)
            finally:
                done.set()

        threading.Thread(target=run, name="rs-spark-subscribe", daemon=True).start()
        limit = self.on_subscribe_limit()
        while not done.wait(0.02) and self.intake.subscription is None:
            if time.monotonic() - self.subscribed_at > limit:
                break
        self.check_subscribed()
        if self.opts.prefetch:
            self.intake.demand_up_to(1)

    def on_subscribe_limit(self) -> float:
        """How long subscribe() may take to call on_subscribe (rule 1.9) before the query fails."""
        return max(10.0, 20 * self.opts.poll_timeout)

    def check_subscribed(self) -> None:
        """Raise what went wrong in subscribe(), if anything."""
        if self.subscribe_error is not None:
            raise self.subscribe_error

    def planned_end(self, start: int) -> int | None:
        """The end of a batch already planned from ``start`` (after a restart), if any."""
        if self.log is not None:
            for seg in self.log.segments():
                if seg.start == start:
                    return seg.end
            return None
        p = self.memory.get(start)
        return p.end if p else None

    def store(self, start: int, end: int, batches: list[pa.RecordBatch]) -> None:
        """Make ``[start, end)`` replayable before its offset is returned."""
        batches = [b for b in batches if b.num_rows]
        if self.log is not None:
            self.log.append(start, end, batches, self.schema)
        else:
            self.memory[start] = _Planned(end, pa.Table.from_batches(batches, schema=self.schema))

    def server(self) -> BatchServer:
        """Start (once) the server executors fetch planned micro-batches from."""
        if self._server is None:
            self._server = BatchServer(self._lookup, binds=batch_server_binds())
        return self._server

    def _lookup(self, key: int, lo: int, hi: int) -> tuple[pa.Schema, list[pa.RecordBatch]]:
        planned = self.memory.get(key)  # dict reads are atomic; commit() only removes entries
        if planned is None:
            raise LookupError(
                f"format('reactive'): the micro-batch planned at offset {key} is no longer held by "
                "the reader process (it was committed, or the driver restarted)"
            )
        return self.schema, planned.table.slice(lo, hi - lo).to_batches()

    def report_in_flight_loss(self, logged_end: int) -> None:
        """Records the previous reader process received but had not logged died with it."""
        assert self.log is not None
        received = self.log.received()
        if received is None or received <= logged_end:
            return
        lost = received - logged_end
        msg = (
            f"format('reactive'): the previous reader process received {lost} records (offsets {logged_end}.."
            f"{received - 1}) that were not yet in the replay log at {self.opts.log_path} when it stopped; the "
            "publisher cannot replay them (a new subscription starts after them)"
        )
        self.log.note_received(logged_end)  # reported once
        report_data_loss(self.opts, msg, "", "continue without them")

    def _note_loop(self) -> None:
        # Records prefetched between micro-batches are noted too, so a crash's loss is counted.
        while not self.intake.terminated and not self._stopped:
            time.sleep(0.5)
            try:
                self.note_received()
            except Exception as exc:  # a note is best effort; the log itself is what matters
                log.debug("format('reactive'): could not note received records: %s", exc)

    def note_received(self) -> None:
        if self.log is not None and not self._stopped:
            now = self.next_offset + self.intake.buffered_rows
            if now != self._noted:  # one small write per change, not per poll
                self._noted = now
                self.log.note_received(now)

    def stop(self) -> None:
        """Cancel once; a second caller (Spark's stop() and SIGTERM) waits for the first."""
        with self._stop_lock:
            if self._stopped:
                return
            self._stopped = True
            self._stop_once()

    def _stop_once(self) -> None:
        if self.log is not None:
            dropped = self.intake.buffered_rows
            if dropped:
                log.warning(
                    "format('reactive'): stopping drops %d records received after the last micro-batch "
                    "(offsets from %d); the publisher cannot replay them",
                    dropped,
                    self.next_offset,
                )
            self.log.note_received(self.next_offset)  # a clean stop: nothing to report at the next start
        if not self.intake.cancel(wait=10.0):
            log.warning(
                "format('reactive'): the publisher did not accept cancel() within 10 s "
                "(its request() or cancel() is blocking); stopping anyway"
            )


class ReactiveStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming reader: demand per micro-batch from the read limit."""

    def __init__(self, opts: SourceOptions, schema: StructType) -> None:
        self._opts = opts
        self._schema_json = schema.json()
        self._live: _Live | None = None
        self._available_now = False

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_live"] = None  # executors never need (or could unpickle) the live subscription
        return state

    # -- live state --------------------------------------------------------------------
    def _arrow_schema(self) -> pa.Schema:
        return to_arrow_schema(StructType.fromJson(json.loads(self._schema_json)), timezone="UTC")

    def _state(self, start: int) -> _Live:
        if self._live is None:
            self._live = _Live(self._opts, self._arrow_schema(), start)
        return self._live

    # -- DataSourceStreamReader ---------------------------------------------------------
    def initialOffset(self) -> dict:
        return {"offset": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        o = self._opts
        if o.max_records_per_trigger is not None:
            return ReadMaxRows(o.max_records_per_trigger)
        if o.min_records_per_trigger is not None:
            return ReadMinRows(o.min_records_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        # AvailableNow reads until the publisher completes or goes quiet for pollTimeout.
        self._available_now = True

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        s = int(start["offset"])
        live = self._state(s)
        live.subscribe()
        planned = live.planned_end(s)
        if planned is not None:  # logged before a restart but never run: replay it first
            return {"offset": planned}
        if s != live.next_offset:
            s = self._realign(live, s)
        live.check_subscribed()
        live.note_received()  # includes what prefetch received while Spark ran the last batch
        max_rows, min_rows = self._rate_limit(limit)
        if self._available_now and live.available_now_done:
            return {"offset": s}
        want = self._request(live.intake, max_rows, min_rows)
        if self._delay_batch(live, min_rows):
            return {"offset": s}
        elements, taken = live.intake.take_rows(max_rows)
        if not elements:
            self._nothing_to_plan(live, s)
            return {"offset": s}
        end = self._plan(live, s, elements, taken)
        if self._opts.prefetch:
            live.intake.demand_up_to(want)
        live.note_received()  # so a crash's in-flight records are counted at the next start
        return {"offset": end}

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

    def _delay_batch(self, live: _Live, min_rows: int | None) -> bool:
        """True to plan nothing yet: fewer than minRecordsPerTrigger and maxTriggerDelay not reached.
        A spec violation or a terminal signal never waits (its records are delivered first)."""
        intake = live.intake
        rows = intake.buffered_rows
        if min_rows is None or rows >= min_rows or intake.terminated or intake.violated:
            return False
        return rows == 0 or time.monotonic() - live.last_batch_at < self._opts.max_trigger_delay

    def _nothing_to_plan(self, live: _Live, s: int) -> None:
        """No records to plan: raise what ended the publisher, or what it broke; else note AvailableNow's end."""
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

    def _await_on_subscribe(self, live: _Live) -> None:
        """Rule 1.9: subscribe() must be followed by on_subscribe; without it no demand can be
        signalled, so waiting longer cannot help: fail after a bounded wait."""
        intake = live.intake
        limit = live.on_subscribe_limit()
        while (
            intake.subscription is None
            and live.subscribe_error is None
            and time.monotonic() - live.subscribed_at < limit
        ):
            time.sleep(0.05)  # Spark (AvailableNow) would take an empty answer as "no more data"
        live.check_subscribed()
        waited = time.monotonic() - live.subscribed_at
        if intake.subscription is None:
            raise SpecViolation(
                "1.9",
                (
                    f"format('reactive'): the publisher did not call on_subscribe within {waited:.0f} s of "
                    "subscribe(), so no records can be requested; fix the publisher (or its factory) to "
                    "call subscriber.on_subscribe(subscription) first"
                ),
            )

    def _plan(self, live: _Live, s: int, elements: list[Any], taken: int) -> int:
        """Convert the records taken into the micro-batch ``[s, s + taken)`` and make it replayable."""
        end = s + taken
        batches, malformed, dropped = _convert(live.converter, elements, s)
        live.malformed += malformed
        live.dropped += dropped
        if dropped:
            log.warning(
                "format('reactive'): dropped %d malformed records in offsets [%d, %d) (mode=DROPMALFORMED)",
                dropped,
                s,
                end,
            )
        live.store(s, end, batches)
        live.next_offset = end
        live.last_batch_at = time.monotonic()
        return end

    def _elements_for(self, intake: Intake, rows: int | None) -> int:
        if rows is None:
            return self._opts.max_buffered
        return max(1, math.ceil(rows / max(intake.rows_per_element(), 1e-9)))

    def _realign(self, live: _Live, s: int) -> int:
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
        requested, received, buffered, outstanding = live.intake.stats()
        return {
            "offset": live.next_offset + live.intake.buffered_rows,
            "bufferedElements": buffered,
            "outstandingDemand": outstanding,
            "receivedElements": received,
            "malformedRecords": live.malformed,
            "droppedRecords": live.dropped,
        }

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        s, e = int(start["offset"]), int(end["offset"])
        if s == e:
            return []
        live = self._state(s)
        n = self._opts.num_partitions
        if live.log is not None:
            try:
                segs = live.log.covering(s, e)
            except MissingData as exc:
                return self._lost(s, e, str(exc))
            return _split_log(live.log.uri, [(seg.name, seg.rows) for seg in segs], n)
        planned = live.memory.get(s)
        if planned is None or planned.end != e:
            return self._lost(
                s,
                e,
                f"the micro-batch [{s}, {e}) was planned by an earlier reader process "
                "(the driver restarted) and was kept only in its memory",
            )
        table = planned.table
        rows = table.num_rows
        if rows == 0:
            return []
        parts: list[InputPartition] = []
        step = math.ceil(rows / n)
        inline = self._opts.batch_transport == "inline" or (
            self._opts.batch_transport == "auto" and table.nbytes <= _INLINE_MAX_BYTES * n
        )
        server = None if inline else live.server()
        for lo in range(0, rows, step):
            hi = min(lo + step, rows)
            if server is None:
                piece = table.slice(lo, hi - lo).combine_chunks().to_batches()
                parts.append(InlinePartition(to_ipc(piece, live.schema), s + lo))
            else:
                parts.append(FetchPartition(server.grant(s, lo, hi), s, lo, hi))  # this range's credential only
        return parts

    def _lost(self, s: int, e: int, why: str) -> list[InputPartition]:
        report_data_loss(
            self._opts,
            f"format('reactive'): records at offsets [{s}, {e}) cannot be replayed: {why}",
            "Set option logPath for durable replay. ",
            f"skip these {e - s} records (they are lost)",
        )
        return []

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, InlinePartition):
            yield from from_ipc(partition.ipc, f"the inline partition from offset {partition.value}")
        elif isinstance(partition, FetchPartition):
            try:
                yield from fetch(partition.address, partition.key, partition.lo, partition.hi)
            except FetchError as exc:
                raise FetchError(
                    f"format('reactive'): an executor could not fetch its micro-batch rows from the driver-side "
                    f"reader process: {exc}. Executors must reach the driver host on that port; otherwise set "
                    "option logPath to a location executors can read (also gives replay after a restart), or "
                    "batchTransport=inline (rows travel inside Spark's tasks, slower for large batches)"
                ) from exc
        elif isinstance(partition, LogPartition):
            for name, lo, hi in partition.pieces:
                yield from read_segment_slice(partition.uri, name, lo, hi)
        else:  # pragma: no cover - Spark only hands back our partitions
            raise TypeError(f"format('reactive') cannot read partition {partition!r}")

    def commit(self, end: dict) -> None:
        live = self._live
        if live is None:
            return
        e = int(end["offset"])
        if live.log is not None:
            live.log.truncate_before(e)
        for k in [k for k, p in live.memory.items() if p.end <= e]:
            del live.memory[k]

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()


_ARROW = (pa.RecordBatch, pa.Table)


def _convert(
    converter: ElementConverter, elements: list[Any], first_offset: int
) -> tuple[list[pa.RecordBatch], int, int]:
    """Convert what ``Intake.take_rows`` returned: Chunks are converted already; runs of plain
    elements and runs of Arrow elements go through the converter (which names bad offsets).
    Returns (batches, malformed, dropped)."""
    out: list[pa.RecordBatch] = []
    malformed = dropped = 0
    offset = first_offset
    for run in _runs(elements):
        if isinstance(run, Chunk):
            out.append(run.batch)
            offset += run.batch.num_rows
            continue
        c = converter.convert(run, offset)
        out.append(c.batch)
        malformed += c.malformed
        dropped += c.dropped
        offset += sum(x.num_rows for x in run) if isinstance(run[0], _ARROW) else len(run)
    return out, malformed, dropped


def _runs(elements: list[Any]) -> Iterator[Chunk | list[Any]]:
    """``elements`` in order as each Chunk alone and the longest runs of plain elements or of
    Arrow elements between them (the converter takes one kind at a time)."""
    i, n = 0, len(elements)
    while i < n:
        e = elements[i]
        if isinstance(e, Chunk):
            yield e
            i += 1
            continue
        arrow = isinstance(e, _ARROW)
        j = i + 1
        while j < n and not isinstance(elements[j], Chunk) and isinstance(elements[j], _ARROW) == arrow:
            j += 1
        yield elements[i:j]
        i = j


def _split_log(uri: str, segs: list[tuple[str, int]], n: int) -> list[InputPartition]:
    """Split the rows of ``segs`` (name, rows) into ``n`` row ranges of near-equal size."""
    total = sum(r for _, r in segs)
    if total == 0:
        return []
    step = math.ceil(total / n)
    parts: list[InputPartition] = []
    pieces: list[tuple[str, int, int]] = []
    room = step
    for name, rows in segs:
        lo = 0
        while lo < rows:
            take = min(room, rows - lo)
            pieces.append((name, lo, lo + take))
            lo += take
            room -= take
            if room == 0:
                parts.append(LogPartition(uri, pieces))
                pieces, room = [], step
    if pieces:
        parts.append(LogPartition(uri, pieces))
    return parts


class SubscribePartition(InputPartition):
    """Batch read: the executor subscribes to the publisher itself and reads it to completion."""


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
