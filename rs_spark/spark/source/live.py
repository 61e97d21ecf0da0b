"""The driver-side reader process's state: the subscription, what was planned, the replay store.

Only Spark's long-lived reader process (one per query) builds a :class:`Live`; the reader object
itself is pickled to executors without it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from ...arrow.convert import ElementConverter
from ...net.protocol.address import redact
from ...net.protocol.errors import ResumeRejected
from ...net.zero_loss.batch_fetch import BatchServer
from ...streams.errors import SpecViolation, throw_if_fatal
from .bind_address import batch_server_binds
from .chunks import Chunk
from .data_loss import report_data_loss
from .handoff import LocalHandoff
from .intake import Intake
from .offsets import StreamOffset
from .options import SourceOptions
from .outage import outage_progress
from .replay_log import ReplayLog
from .sigterm import SigtermStop
from .upstream import Upstream

log = logging.getLogger("rs_spark.source")

# batchTransport=auto: partitions up to this size travel inside Spark's tasks; larger ones are
# fetched by executors from the reader process (through the JVM costs ~25 ms per MB).
INLINE_MAX_BYTES = 1 << 20


def inline_max_bytes(opts: SourceOptions) -> int:
    """The largest micro-batch that travels inside Spark's tasks with batchTransport=auto."""
    return INLINE_MAX_BYTES * opts.num_partitions


class _Planned:
    __slots__ = ("end", "table")

    def __init__(self, end: int, table: pa.Table) -> None:
        self.end = end
        self.table = table


class Live:
    """Everything that exists only in the driver-side reader process.

    ``start`` (and, when Spark re-runs a planned micro-batch after a restart, ``end``) are Spark's
    offsets: they carry the stream position when the publisher can replay (:mod:`.upstream`).
    """

    def __init__(
        self,
        opts: SourceOptions,
        arrow_schema: pa.Schema,
        start: StreamOffset,
        end: StreamOffset | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.opts = opts
        self.clock = clock  # when micro-batches were planned and the subscription began (the reader's clock)
        self.schema = arrow_schema
        self.converter = ElementConverter(arrow_schema, opts.mode, opts.corrupt_column, add_corrupt_column=False)
        self.log = ReplayLog(opts.log_path) if opts.log_path else None
        self.upstream = Upstream(opts, arrow_schema, start, end)
        self.memory: dict[int, _Planned] = {}
        self._server: BatchServer | None = None
        self.handoff = LocalHandoff()
        self._prefetch: int | None = None  # demand deferred until Spark has the planned micro-batch
        s = start.offset
        self.next_offset = s if self.log is None else max(s, self.log.end_offset())
        self.intake = self._new_intake()
        self.last_batch_at = clock()
        self.malformed = 0
        self.dropped = 0
        self.replayed = 0  # rows asked for again after a restart (a planned batch re-read from upstream)
        self.row_bytes = 0  # Arrow bytes of the rows planned here: every row passes through this process
        self.available_now_done = False
        self._subscribed = False
        self.subscribe_error: BaseException | None = None
        self._noted = -1
        self._stopped = False
        self._stop_lock = threading.Lock()
        self._stopping = threading.Event()  # ends the periodic note of received records at once

    def _new_intake(self) -> Intake:
        return Intake(self.opts.max_buffered, self.next_offset, precompute=self.converter.try_bulk)

    def _warn_without_replay(self) -> None:
        if self.log is None and not self.upstream.replayable:
            log.warning(
                "format('reactive') runs without option logPath and its publisher cannot replay: planned "
                "micro-batches are kept only in the reader process's memory, so if the driver restarts before a "
                "batch commits, its records cannot be replayed (at-most-once for those; failOnDataLoss decides "
                "whether that fails the query). Set logPath to a durable location for exactly-once replay, or "
                "read an rs_spark.net endpoint (it keeps what it sent until Spark commits) or a replayable "
                "publisher (subscribe_at)."
            )

    def subscribe(self) -> None:
        if self._subscribed:
            return
        self._subscribed = True
        self.subscribed_at = self.clock()
        SigtermStop(self.stop).install()  # Spark ends this process with SIGTERM: stop() first
        self._warn_without_replay()
        if self.log is not None and not self.upstream.replayable:
            self.report_in_flight_loss(self.next_offset)
            threading.Thread(target=self._note_loop, name="rs-reactive-received", daemon=True).start()
        self._start_subscription()
        if self.opts.prefetch:
            self.intake.demand_up_to(1)

    def _start_subscription(self) -> None:
        """Subscribe the intake at ``next_offset``; wait (bounded) for on_subscribe (rule 1.9)."""
        # subscribe() runs on its own thread: one that blocks (without calling on_subscribe)
        # cannot hang the query; latestOffset then fails it naming rule 1.9 after a bounded wait.
        done = threading.Event()
        offset = self.next_offset
        intake = self.intake

        def run() -> None:
            try:
                self.upstream.subscribe(self.intake, offset)
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
                intake.wake()

        threading.Thread(target=run, name="rs-spark-subscribe", daemon=True).start()
        # Until on_subscribe, or subscribe() returned (on_subscribe may follow: latestOffset waits),
        # or the limit.
        intake.wait_subscribed(self.on_subscribe_limit() - (self.clock() - self.subscribed_at), done.is_set)
        self.check_subscribed()

    def resume_refused(self, offset: int) -> bool:
        """If the stream could not be resumed (the endpoint no longer keeps it), report the loss and
        continue with a new stream at ``offset``; returns whether it did."""
        err = self.intake.failed
        if not isinstance(err, ResumeRejected) or self.intake.buffered_rows:  # rows received are planned first
            return False
        key = self.upstream.key
        report_data_loss(
            self.opts,
            f"format('reactive'): the endpoint {redact(self.opts.endpoint or '')} cannot resume stream {key} at "
            f"offset {offset}: {err.args[0] if err.args else err}; records it had sent after the last commit are lost",
            "Restart queries within the endpoint's resume window (option resumeWindow, Retention.window) and keep "
            "the serving process running, or serve with Retention(spill=...). ",
            "continue with a new stream from the endpoint",
        )
        self.upstream.start_over(offset)
        self.intake.cancel()
        self.next_offset = offset
        self.intake = self._new_intake()
        self._start_subscription()
        if self.opts.prefetch:
            self.intake.demand_up_to(1)
        return True

    def on_subscribe_limit(self) -> float:
        """How long subscribe() may take to call on_subscribe (rule 1.9) before the query fails."""
        return max(10.0, 20 * self.opts.poll_timeout)

    def check_subscribed(self) -> None:
        """Raise what went wrong in subscribe(), if anything."""
        if self.subscribe_error is not None:
            raise self.subscribe_error

    def acknowledge(self, offset: int) -> None:
        """Spark committed every row before ``offset``: tell the publisher (once per position)."""
        if self._subscribed and not self._stopped:
            self.upstream.acknowledge(self.intake, offset)

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
        self.row_bytes += sum(b.nbytes for b in batches)
        if self.log is not None:
            self.log.append(start, end, batches, self.schema)
        else:
            table = self.handoff.put(start, batches, self.schema) if self._hand_off(batches) else None
            if table is None:
                table = pa.Table.from_batches(batches, schema=self.schema)
            self.memory[start] = _Planned(end, table)

    def _hand_off(self, batches: list[pa.RecordBatch]) -> bool:
        """Whether executors will fetch these rows (batchTransport, size): then they go to a private file."""
        t = self.opts.batch_transport
        return t == "fetch" or (t == "auto" and sum(b.nbytes for b in batches) > inline_max_bytes(self.opts))

    def prefetch_later(self, elements: int) -> None:
        """Ask the publisher for the next micro-batch's ``elements`` once Spark has this one's offset.

        Asked inside ``latestOffset``, a publisher that builds its elements in this process (a
        factory's) holds the interpreter in long native calls while Spark's very next call here,
        ``reportLatestOffset``, waits for it: measured 100-280 ms per micro-batch on a loaded
        machine. Asked at the end of ``reportLatestOffset`` (else of ``partitions``), it builds them
        while Spark writes its offset log and runs the tasks, which read the rows from a file
        (:mod:`.handoff`) without this process. The next ``latestOffset`` asks anyway.
        """
        self._prefetch = elements

    def prefetch_now(self) -> None:
        """Signal the demand :meth:`prefetch_later` deferred, if any."""
        elements, self._prefetch = self._prefetch, None
        if elements is not None:
            self.intake.demand_up_to(elements)

    def local_file(self, start: int) -> tuple[str, str] | None:
        """(folder, name) of the private file holding the micro-batch planned at ``start``, if any."""
        return self.handoff.file_of(start)

    def forget(self, start: int) -> None:
        """The micro-batch planned at ``start`` committed: free its rows and file."""
        self.memory.pop(start, None)
        self.handoff.drop(start)

    def plan(self, s: int, elements: list[Any], taken: int) -> int:
        """Convert the records taken into the micro-batch ``[s, s + taken)`` and make it replayable."""
        end = s + taken
        batches, malformed, dropped = convert(self.converter, elements, s)
        self.malformed += malformed
        self.dropped += dropped
        if dropped:
            log.warning(
                "format('reactive'): dropped %d malformed records in offsets [%d, %d) (mode=DROPMALFORMED)",
                dropped,
                s,
                end,
            )
        self.store(s, end, batches)
        self.next_offset = end
        self.last_batch_at = self.clock()
        return end

    def replan(self, s: int, e: int) -> bool:
        """After a restart, ask the publisher again for the rows of the micro-batch ``[s, e)`` Spark
        planned before (it can replay), and plan them identically; False if they did not come."""
        if not self.upstream.replayable or s != self.next_offset:
            return False
        self.subscribe()
        intake = self.intake
        wait = max(30.0, 40 * self.opts.poll_timeout)
        intake.demand_up_to(max(1, e - s))
        got = intake.wait(e - s, wait)
        if not got and self.resume_refused(s):
            return False
        if not got:
            return False
        elements, taken = intake.take_rows(e - s)
        self.plan(s, elements, taken)
        self.replayed += taken
        return True

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
        while not self.intake.terminated and not self._stopping.wait(0.5):
            try:
                self.note_received()
            except Exception as exc:  # a note is best effort; the log itself is what matters
                log.debug("format('reactive'): could not note received records: %s", exc)

    def note_received(self) -> None:
        if self.log is not None and not self._stopped and not self.upstream.replayable:
            now = self.next_offset + self.intake.buffered_rows
            if now != self._noted:  # one small write per change, not per poll
                self._noted = now
                self.log.note_received(now)

    def progress(self) -> dict[str, Any]:
        """What the source's progress JSON shows about the publisher and what it keeps."""
        counts = self.intake.stats()
        p: dict[str, Any] = {
            "offset": self.next_offset + self.intake.buffered_rows,
            "bufferedElements": counts.buffered,
            "outstandingDemand": counts.outstanding,
            "receivedElements": counts.received,
            "malformedRecords": self.malformed,
            "droppedRecords": self.dropped,
        }
        up = self.upstream
        if up.origin is not None and up.replayable:
            p["committedPosition"] = max(up.acked, 0)
            p["replayedRecords"] = self.replayed
        p["rowBytesThroughReader"] = self.row_bytes
        p.update(outage_progress(self.intake.subscription))  # while the endpoint is unreachable
        retention = getattr(self.intake.subscription, "retention", None)
        if isinstance(retention, dict) and retention:
            p["endpointRetainedRecords"] = retention.get("retainedRecords", 0)
            p["endpointRetainedBytes"] = retention.get("retainedBytes", 0)
            p["endpointResentRecords"] = retention.get("resentRecords", 0)
        return p

    def stop(self) -> None:
        """Cancel once; a second caller (Spark's stop() and SIGTERM) waits for the first."""
        with self._stop_lock:
            if self._stopped:
                return
            self._stopped = True
            self._stopping.set()
            self._stop_once()

    def _stop_once(self) -> None:
        resumable = self.upstream.key is not None
        if self.log is not None and not self.upstream.replayable:
            dropped = self.intake.buffered_rows
            if dropped:
                log.warning(
                    "format('reactive'): stopping drops %d records received after the last micro-batch "
                    "(offsets from %d); the publisher cannot replay them",
                    dropped,
                    self.next_offset,
                )
            self.log.note_received(self.next_offset)  # a clean stop: nothing to report at the next start
        self.handoff.close()
        # A resumable endpoint stream is left to its endpoint (kept for its resume window), so a
        # restarted query continues it; anything else is cancelled.
        if not self.intake.cancel(wait=10.0, detach=resumable):
            log.warning(
                "format('reactive'): the publisher did not accept cancel() within 10 s "
                "(its request() or cancel() is blocking); stopping anyway"
            )


_ARROW = (pa.RecordBatch, pa.Table)


def convert(
    converter: ElementConverter, elements: list[Any], first_offset: int
) -> tuple[list[pa.RecordBatch], int, int]:
    """Convert what ``Intake.take_rows`` returned: Chunks are converted already; runs of plain
    elements and runs of Arrow elements go through the converter (which names bad offsets).
    Returns (batches, malformed, dropped)."""
    out: list[pa.RecordBatch] = []
    malformed = dropped = 0
    offset = first_offset
    for run in runs(elements):
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


def runs(elements: list[Any]) -> Iterator[Chunk | list[Any]]:
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


__all__ = ["Live"]
