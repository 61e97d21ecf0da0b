"""The single reader's reader-process state: the subscription, what was planned, the replay store.

Only Spark's long-lived reader process (one per query) builds a :class:`Live`; the reader object
itself is pickled to executors without it. The reader asks it for a few coarse things (open the
subscription, ask for rows, describe the stream to the planner, plan rows, start over) and decides
nothing itself (:mod:`..planner` does).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn

import pyarrow as pa

from ....net.protocol.address import redact
from ....net.protocol.errors import ResumeRejected
from ....streams.errors import SpecViolation, throw_if_fatal
from ...values import element_converter
from ..data_loss import report_data_loss
from ..errors import PublisherFailed
from ..live_edge import LiveEdge
from ..offsets import StreamOffset
from ..options import SourceOptions
from ..outage import outage_progress
from ..planner import Ask, Part, Said, Stream
from ..sigterm import SigtermStop
from .chunks import convert_taken
from .intake import Intake
from .planned import Planned
from .upstream import Upstream

log = logging.getLogger("rs_spark.source")


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
        self.converter = element_converter(arrow_schema, opts.mode, opts.corrupt_column, from_json=opts.json_elements())
        self.planned = Planned(opts, arrow_schema)
        self.log = self.planned.log
        self.upstream = Upstream(opts, arrow_schema, start, end)
        self._prefetch: int | None = None  # demand deferred until Spark has the planned micro-batch
        self._asked_rows = 0  # rows the last ask wanted beyond its start (what "short" is measured against)
        s = start.offset
        self.next_offset = s if self.log is None else max(s, self.log.end_offset())
        self.intake = self._new_intake()
        self.last_batch_at = clock()
        self.subscribed_at: float | None = None  # when the current subscription began (rule 1.9's bound)
        self.malformed = 0
        self.dropped = 0
        self.replayed = 0  # rows asked for again after a restart (a planned batch re-read from upstream)
        self._process_set_up = False  # SIGTERM handler, warnings, the received-records note (once)
        self.subscribe_error: BaseException | None = None
        self._noted = -1
        self._stopped = False
        self._stop_lock = threading.Lock()
        self._stopping = threading.Event()  # ends the periodic note of received records at once

    def _new_intake(self) -> Intake:
        return Intake(self.opts.max_buffered, self.next_offset, precompute=self.converter.try_bulk)

    # -- the subscription ---------------------------------------------------------------------
    def open(self) -> None:
        """Subscribe (once per stream; again after :meth:`start_over`); raise what subscribe() raised."""
        if not self._process_set_up:
            self._set_up_process()
        if self.subscribed_at is None:
            self._start_subscription()
            if self.opts.prefetch:
                self.intake.demand_up_to(1)
        self.check_subscribed()

    def _set_up_process(self) -> None:
        self._process_set_up = True
        SigtermStop(self.stop).install()  # Spark ends this process with SIGTERM: stop() first
        self._warn_without_replay()
        if self.log is not None and not self.upstream.replayable:
            self.report_in_flight_loss(self.next_offset)
            threading.Thread(target=self._note_loop, name="rs-reactive-received", daemon=True).start()

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

    def _start_subscription(self) -> None:
        """Subscribe the intake at ``next_offset``; wait (bounded) for on_subscribe (rule 1.9)."""
        # subscribe() runs on its own thread: one that blocks (without calling on_subscribe)
        # cannot hang the query; the planner's AWAIT_OPEN fails it naming rule 1.9 after a bounded wait.
        self.subscribed_at = self.clock()
        done = threading.Event()
        offset = self.next_offset
        intake = self.intake

        def run() -> None:
            try:
                self.upstream.subscribe(intake, offset)
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
        # Until on_subscribe, or subscribe() returned (on_subscribe may follow), or the limit.
        intake.wait_subscribed(self._open_left(), done.is_set)

    def _open_left(self) -> float:
        """Seconds left of rule 1.9's bound on the current subscription's on_subscribe."""
        began = self.subscribed_at if self.subscribed_at is not None else self.clock()
        return self.on_subscribe_limit() - (self.clock() - began)

    def on_subscribe_limit(self) -> float:
        """How long subscribe() may take to call on_subscribe (rule 1.9) before the query fails."""
        return max(10.0, 20 * self.opts.poll_timeout)

    def check_subscribed(self) -> None:
        """Raise what went wrong in subscribe(), if anything."""
        if self.subscribe_error is not None:
            raise self.subscribe_error

    def await_open(self) -> None:
        """The planner's AWAIT_OPEN: wait for on_subscribe within rule 1.9's bound, else fail saying so."""
        intake = self.intake
        intake.wait_subscribed(self._open_left(), lambda: self.subscribe_error is not None)
        self.check_subscribed()
        if intake.subscription is None:
            waited = self.on_subscribe_limit() - self._open_left()
            raise SpecViolation(
                "1.9",
                (
                    f"format('reactive'): the publisher did not call on_subscribe within {waited:.0f} s of "
                    "subscribe(), so no records can be requested; fix the publisher (or its factory) to "
                    "call subscriber.on_subscribe(subscription) first"
                ),
            )

    def start_over(self, offset: int) -> None:
        """The endpoint cannot resume the stream: report what is lost (failOnDataLoss decides), then
        read a new stream from ``offset``; its key is recorded before it is opened."""
        err = self.intake.failed
        report_data_loss(
            self.opts,
            f"format('reactive'): the endpoint {redact(self.opts.endpoint or '')} cannot resume stream "
            f"{self.upstream.key} at offset {offset}: {err.args[0] if err and err.args else err}; records it had "
            "sent after the last commit are lost",
            "Restart queries within the endpoint's resume window (option resumeWindow, Retention.window) and keep "
            "the serving process running, or serve with Retention(spill=...). ",
            "continue with a new stream from the endpoint",
        )
        self.upstream.start_over(offset)
        self.intake.cancel()
        self.next_offset = offset
        self.intake = self._new_intake()
        self.subscribed_at = None

    # -- what the planner sees --------------------------------------------------------------------
    def part(self, s: int, committed: int, target: int | None) -> Part:
        """The stream as the planner sees it for a micro-batch starting at ``s`` (record offsets);
        ``committed``: the offset Spark committed (-1: none known)."""
        intake = self.intake
        floor = max(committed, self.release_floor(s))
        # Short: rows asked for did not come within pollTimeout, and elements asked for are still due. Both:
        # an Arrow endpoint's elements are batches whose sizes vary (cut to credit), so elements may still
        # be due when every row asked for came (read_stream's chunks), and an ask in elements may cover
        # fewer rows than asked (a batch half taken counts as one) while every element came.
        short = intake.buffered_rows < self._asked_rows and intake.outstanding > 0
        return Part(s, s + intake.buffered_rows, floor, self._stream(), target, short=short)

    def _stream(self) -> Stream:
        intake = self.intake
        err = intake.failed
        if isinstance(err, ResumeRejected):  # its window ended: a new stream, once what came is planned
            return Stream.FAILED if intake.buffered_rows else Stream.GONE
        if err is not None or intake.violated:
            return Stream.FAILED
        if intake.completed:
            return Stream.COMPLETED
        return Stream.OPENING if intake.subscription is None else Stream.OPEN

    def said(self, edge: LiveEdge) -> Said | None:
        """AvailableNow: the endpoint's answer to how far its rows are ready, in record offsets (None:
        it does not answer, or its answer did not come)."""
        origin = self.upstream.origin
        answer = edge.ask({"": (self.intake.subscription, self.opts.endpoint or "")}).get("")
        if answer is None or origin is None:
            return None
        return answer if not answer.edge else Said(origin + answer.position, True)

    def release_floor(self, s: int) -> int:
        """Rows before this offset need no commit for the publisher to go on: those before this
        stream began, or all of them when the publisher takes no acknowledgements."""
        up = self.upstream
        if up.origin is None or not up.takes_acknowledgements(self.intake.subscription):
            return s
        return up.origin

    def fail(self, s: int) -> NoReturn:
        """The planner's FAIL: raise the rule the publisher broke, or the error it signalled."""
        self.intake.check()
        err = self.intake.failed
        if err is None:  # pragma: no cover - FAIL follows a failed stream only
            raise RuntimeError("format('reactive'): the publisher failed without an error")
        raise PublisherFailed(err, s)

    # -- demand ---------------------------------------------------------------------------------
    def ask(self, a: Ask) -> int:
        """Signal the demand ``a`` says and wait up to pollTimeout for its rows; the elements asked for."""
        self._asked_rows = 0
        if not a.per_part:
            return 0
        o, intake = self.opts, self.intake
        self.note_received()  # includes what prefetch received while Spark ran the last batch
        if intake.received_rows == 0 and intake.buffered == 0 and not intake.terminated:
            # Learn how many rows an element carries before asking for many (RecordBatch publishers).
            intake.demand_up_to(1)
            intake.wait(1, o.poll_timeout)
        want = max(1, math.ceil(a.per_part / max(intake.rows_per_element(), 1e-9)))
        intake.chunk = max(1024, min(65_536, want // 4))  # the converter thread's bite: ~4 per micro-batch
        intake.demand_up_to(want)
        intake.wait(a.wait_for, o.poll_timeout)
        self._asked_rows = a.per_part
        return want

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

    def acknowledge(self, offset: int) -> None:
        """Spark committed every row before ``offset``: tell the publisher (once per position)."""
        if self.subscribed_at is not None and not self._stopped:
            self.upstream.acknowledge(self.intake, offset)

    # -- planning -------------------------------------------------------------------------------
    def realign(self, s: int) -> None:
        """Spark's start differs from ours: only after a restart without (enough) log."""
        if s >= self.next_offset:
            self.next_offset = s
            return
        # s < next_offset: rows [s, next_offset) were planned but their plan is gone.
        msg = (
            f"format('reactive'): Spark asked for records from offset {s}, but this reader already "
            f"planned up to {self.next_offset} and cannot find the batch starting at {s}"
        )
        report_data_loss(self.opts, msg, "", "continue from the current offset")

    def plan(self, s: int, rows: int) -> int:
        """Take ``rows`` buffered rows, convert them into the micro-batch ``[s, s + rows)`` and make it
        replayable; its end."""
        elements, taken = self.intake.take_rows(rows)
        end = s + taken
        batches, malformed, dropped = convert_taken(self.converter, elements, s)
        self.malformed += malformed
        self.dropped += dropped
        if dropped:
            log.warning(
                "format('reactive'): dropped %d malformed records in offsets [%d, %d) (mode=DROPMALFORMED)",
                dropped,
                s,
                end,
            )
        self.planned.store(s, end, batches)
        self.next_offset = end
        self.last_batch_at = self.clock()
        self.note_received()  # so a crash's in-flight records are counted at the next start
        return end

    def replan(self, s: int, e: int) -> bool:
        """After a restart, ask the publisher again for the rows of the micro-batch ``[s, e)`` Spark
        planned before (it can replay), and plan them identically; False if they did not come."""
        if not self.upstream.replayable or s != self.next_offset:
            return False
        self.open()
        intake = self.intake
        intake.demand_up_to(max(1, e - s))
        if not intake.wait(e - s, max(30.0, 40 * self.opts.poll_timeout)):
            if self._stream() is Stream.GONE:
                self.start_over(s)
            return False
        self.plan(s, e - s)
        self.replayed += e - s
        return True

    # -- the replay log's note of received records ------------------------------------------------
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

    # -- progress and stop ------------------------------------------------------------------------
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
        p["rowBytesThroughReader"] = self.planned.row_bytes
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
        if not self.upstream.replayable:
            dropped = self.intake.buffered_rows
            if dropped:  # e.g. rows that arrived after an AvailableNow run's target
                log.warning(
                    "format('reactive'): stopping drops %d records received after the last micro-batch "
                    "(offsets from %d); the publisher cannot replay them",
                    dropped,
                    self.next_offset,
                )
            if self.log is not None:
                self.log.note_received(self.next_offset)  # a clean stop: nothing to report at the next start
        self.planned.close()
        # A resumable endpoint stream is left to its endpoint (kept for its resume window), so a
        # restarted query continues it; anything else is cancelled.
        if not self.intake.cancel(wait=10.0, detach=resumable):
            log.warning(
                "format('reactive'): the publisher did not accept cancel() within 10 s "
                "(its request() or cancel() is blocking); stopping anyway"
            )


__all__ = ["Live"]
