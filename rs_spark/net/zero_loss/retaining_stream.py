"""The outbound stream of a resumable connection: it keeps what it sent until acknowledged.

A :class:`RetainingStream` is built around an :class:`~rs_spark.net.protocol.outbound.OutboundStream`
(its ``outbound``, what the connection routes frames to and the publisher subscribes to): it gives
it the queue of a :class:`~.retention.RetainedLog`, its own executor, the state table of
:mod:`.retaining_states`, and itself as the stream's :class:`~rs_spark.net.protocol.keeper.Keeper`;
it acts on the stream only through its public calls, under the stream's lock.

When its connection drops it is not cancelled: it is *detached*, keeps what its publisher still
sends within the demand already issued, asks for nothing more, and waits for its reader to resume
at any kept position; the registry
(:mod:`.resume_server`) expires it after its window. Its publisher calls (``request``, ``cancel``,
``on_commit``) run on the stream's own serial executor, which outlives connections.

A stream that delivers *positions* only (:class:`Delivery`) sends no rows: it tells the reader how
far the rows go (METADATA_PUSH) within the reader's credit, and the reader's partitions fetch them
by position (:meth:`RetainingStream.read_range`).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...streams.errors import report_dropped
from ...streams.scheduler import default_scheduler
from ..protocol import frames as F
from ..protocol.codecs import ArrowCodec, Codec
from ..protocol.credit import CreditPump
from ..protocol.errors import NetError
from ..protocol.outbound import OutboundStream
from ..protocol.send_queue import split_batch
from ..protocol.stream_frames import Encoded
from ..protocol.stream_state import OutboundStreamStats
from ..protocol.worker import SerialExecutor
from .resume import retention_metadata
from .retaining_states import RETAINING, RetainEvent, RetainingState
from .retention import ResumeError, RetainedLog, Retention
from .spill import Spill


class Delivery(enum.Enum):
    """What a retaining stream sends its reader (fixed when the stream opens)."""

    ROWS = "rows"  # the rows themselves, as PAYLOAD frames
    POSITIONS = "positions"  # how far the rows go (METADATA_PUSH); the reader fetches them by position


@dataclass(frozen=True, slots=True)
class RetainingStreamStats(OutboundStreamStats):
    """An outbound stream's stats, with what keeping its rows adds (rows)."""

    # The oldest row kept, and the position the reader acknowledged.
    first_position: int
    acked_position: int
    # Resumptions, rows sent again after them, and rows never acknowledged when the window ended.
    resumes: int
    resent_records: int
    lost_records: int


class RetainingStream:
    """A served stream that keeps its rows until the reader acknowledges them and survives its
    connection: its ``outbound`` is what the connection and the publisher see (see the module)."""

    def __init__(
        self,
        codec: Codec,
        where: str,
        retention: Retention,
        *,
        on_end: Callable[[BaseException | None], None] | None = None,
        on_detach: Callable[[], None] | None = None,
        address: str | None = None,
        spill: Spill | None = None,
        delivery: Delivery = Delivery.ROWS,
    ) -> None:
        self._arrow = codec if isinstance(codec, ArrowCodec) else None
        self._where = where
        self._address = address
        self._kept = RetainedLog(
            retention, split=split_batch if self._arrow else None, spill=spill, to_bytes=self._payload_bytes
        )
        self.outbound = OutboundStream(
            codec,
            where,
            on_end=on_end,
            address=address,
            queue=self._kept.queue,
            executor=SerialExecutor(f"rs-net-stream {where}"),  # the publisher's calls outlive any one connection
            states=RETAINING,
            keeper=self,
        )
        self._lock = self.outbound.lock  # the stream's: its state and this one's counts change together
        self._delivery = delivery
        self._on_detach = on_detach
        self.committable: Any = None  # the publisher, when it takes on_commit (see _commit_upstream)
        self._acked = 0
        self.resumes = 0
        self.resent = 0  # rows sent again after resumptions
        self.lost = 0  # rows kept and never acknowledged when the resume window ended
        # The one READY question waiting (when it is due, its wait, its answer), and when the one timer
        # pending for it runs (None: none is pending).
        self._ready_question: tuple[float, float, Callable[[int, bool], None]] | None = None
        self._ready_timer_at: float | None = None

    def _payload_bytes(self, item: Any) -> bytes:
        """An element as the bytes its payload carries (for the spill)."""
        buffers = self._arrow.encode(item) if self._arrow is not None else item
        return b"".join(bytes(b) for b in buffers)

    @property
    def state(self) -> RetainingState:
        """Its one state (its outbound stream's, moved by :data:`.retaining_states.RETAINING`)."""
        state = self.outbound.state
        assert isinstance(state, RetainingState), "the stream moves through RETAINING only"
        return state

    @property
    def ended(self) -> bool:
        return self.outbound.ended

    @property
    def error(self) -> BaseException | None:
        """What ended the stream (None: finished, or not ended)."""
        return self.outbound.error

    def subscribe_upstream(self, publisher: Any) -> None:
        """Subscribe to ``publisher`` on the stream's executor (see OutboundStream.subscribe_upstream)."""
        self.outbound.subscribe_upstream(publisher)

    def preload(self, entries: list[tuple[int, int, bytes]], start: int) -> None:
        """Rows of a stream read back from its spill after a restart, decoded (and validated)."""
        items = []
        for pos, rows, payload in entries:
            if self._arrow is not None:
                batch = self._arrow.decode(payload)
                if batch.num_rows != rows:
                    raise ValueError(f"a spilled entry at position {pos} holds {batch.num_rows} rows, not {rows}")
                items.append((pos, rows, batch, batch.nbytes))
            else:
                items.append((pos, rows, [payload], len(payload)))
        with self._lock:
            self._kept.preload(items, start)
            self._acked = start
            self.outbound.move_locked(RetainEvent.PRELOADED)

    # -- connections come and go ---------------------------------------------------------
    def resume(self, conn: Any, stream_id: int, position: int) -> int:
        """Continue on ``conn`` from ``position`` (a kept row): credit starts at zero, the rows
        from there are sent again as the reader grants credit. Returns how many are sent again.
        Raises :class:`ResumeError` when the stream ended or ``position`` is not kept."""
        out = self.outbound
        with self._lock:
            if out.state.ended:
                raise ResumeError(f"{self._where} has ended ({self._ended_why()}); it cannot be resumed")
            resend = self._kept.rewind(position)
            old, old_sid = out.rebind_locked(conn, stream_id)
            out.move_locked(RetainEvent.RESUMED)  # its end waits for the resumed reader's first request
            self.resumes += 1
            self.resent += resend
        if old is not None and old is not conn:  # the old connection may not know it is dead yet
            old.remove_stream(old_sid)
        out.schedule_pump()
        return resend

    def on_connection_closed(self) -> bool:
        """*Keeper*: keep the stream for a resume, unless it already ended: one that sent its end
        and waits for the last acknowledgements is detached too, so it expires after its window."""
        with self._lock:
            detached = self.outbound.move_locked(RetainEvent.DETACHED)
            if detached:
                self.outbound.unbind_locked()
        cb = self._on_detach
        if detached and cb is not None:
            cb()
        return detached

    def expire(self, why: str) -> int:
        """The resume window ended without a reader: cancel the publisher; returns the rows lost."""
        with self._lock:
            if not self.outbound.state.ended:
                self.lost = self._kept.queue.records
        self.outbound.cancel_with(NetError(f"{self._where}: {why}", self._address, self._where))
        return self.lost

    def shutdown(self, why: str) -> None:
        """The server stops: cancel the publisher; a spilled stream keeps its files, so a restarted
        server can serve its kept rows again."""
        with self._lock:
            self._kept.close_spill()
        self.outbound.cancel_with(NetError(f"{self._where}: {why}", self._address, self._where))

    @property
    def reader_gone(self) -> bool:
        """No reader is on the stream: detached, or its connection closed (and not yet told)."""
        conn = self.outbound.connection
        return self.state.detached or conn is None or conn.closed is not None

    # -- acknowledgements ------------------------------------------------------------------
    def acknowledge(self, position: int) -> int:
        """The reader made every row before ``position`` durable: free them, and tell the
        publisher (``on_commit``, serial with its other calls). Returns the rows freed."""
        out = self.outbound
        with self._lock:
            if out.state.ended:
                return 0
            freed = self._kept.free_until(position)
            advanced = position > self._acked
            self._acked = max(self._acked, position)
            finished = self._finished_locked()
        if advanced:
            out.run(lambda: self._commit_upstream(position))
        if finished:
            out.end(None)
        elif freed:
            out.schedule_pump()  # room again: the publisher may be asked for more
        return freed

    def _finished_locked(self) -> bool:
        """Over: its publisher ended and every row is acknowledged, with no reader waiting for its
        end (it was sent; or the stream is detached, so a reader acknowledging on another
        connection made every row durable)."""
        ended = self.state in (RetainingState.FINISHING, RetainingState.DETACHED_ENDING)
        return ended and self._acked >= self._kept.queue.end

    def _commit_upstream(self, position: int) -> None:
        for target in (self.outbound.subscription, self.committable):
            hook = getattr(target, "on_commit", None)
            if callable(hook):
                try:
                    hook(position)
                except Exception as exc:  # an acknowledgement the publisher fumbled must not end the stream
                    report_dropped(exc, f"rs_spark.net: {self._where}: on_commit({position}) raised")
                return

    def ends_when_sent(self) -> bool:
        """*Keeper*: over once its end was sent only when every row is acknowledged."""
        return self._acked >= self._kept.queue.end

    def retention_counts(self) -> dict[str, int]:
        """What the reader is told after an acknowledgement (and, positions only, when rows become available)."""
        with self._lock:
            return self._counts_locked()

    def _counts_locked(self) -> dict[str, int]:
        return {  # a dict: a wire format (the METADATA_PUSH answer's JSON), not introspection
            "retainedRecords": self._kept.queue.records,
            "retainedBytes": self._kept.queue.bytes,
            "ackedPosition": self._acked,
            "resentRecords": self.resent,
            "endPosition": self._kept.queue.cursor,
        }

    def stats(self) -> RetainingStreamStats:
        """What the stream keeps and has done (rows), for the endpoint's stats."""
        with self._lock:
            return RetainingStreamStats(
                **self.outbound.stats_fields_locked(),
                first_position=self._kept.queue.first,
                acked_position=self._acked,
                resumes=self.resumes,
                resent_records=self.resent,
                lost_records=self.lost,
            )

    # -- how far rows are ready (AvailableNow's target) -----------------------------------------
    def answer_ready(self, wait: float, answer: Callable[[int, bool], None]) -> None:
        """A reader asks how far rows are ready (:data:`.resume.READY_MIME`): ``answer(position, edge)``
        at once when the publisher ended or owes nothing, else once it has owed rows ``wait`` seconds
        (on the timer thread). One question waits at a time; a newer one takes its place (also one
        answered at once: the older then gets no late answer), and one timer is pending per stream at
        most, so a reader asking in a loop holds one timer. A newer question due later than the timer
        is answered when it is due; one due sooner, when the timer runs (at most MAX_READY_WAIT on)."""
        r = self.outbound.readiness(wait)
        schedule = False
        with self._lock:
            if r.edge is not None:
                self._ready_question = None
            else:
                due = time.monotonic() + r.left
                self._ready_question = (due, wait, answer)
                schedule = self._ready_timer_at is None
                if schedule:
                    self._ready_timer_at = due
        if r.edge is not None:
            answer(r.position, r.edge)
        elif schedule:
            default_scheduler().schedule(r.left + 0.01, self._answer_waiting)

    def _answer_waiting(self) -> None:
        """The timer: the waiting question, once due, is answered edge if the publisher owed rows all
        along, else not; one that is not due yet (it replaced an earlier one) gets the timer again."""
        later: float | None = None
        with self._lock:
            self._ready_timer_at = None
            waiting = self._ready_question
            if waiting is None:
                return
            due, wait, answer = waiting
            if due > time.monotonic():
                later, self._ready_timer_at = due - time.monotonic(), due
            else:
                self._ready_question = None
        if later is not None:
            default_scheduler().schedule(max(0.0, later) + 0.01, self._answer_waiting)
            return
        r = self.outbound.readiness(wait)
        answer(r.position, bool(r.edge))  # still undecided: it delivered meanwhile, so not at its edge

    # -- positions only, and fetches -------------------------------------------------------
    def send_rows(self, conn: Any, pump: CreditPump) -> bool:
        """*Keeper*: positions only, make rows available within credit (no payload frames) and
        tell the reader how far they now go; rows go as PAYLOAD frames otherwise."""
        if self._delivery is Delivery.ROWS:
            return False
        log = self._kept.queue
        before = log.cursor
        while pump.credit > 0:
            got = log.next_to_send(pump.credit if self._arrow is not None else 1)
            if got is None:
                break
            pump.spend(got[1])
        if log.cursor != before:
            conn.send(F.encode_metadata_push(retention_metadata(self._counts_locked())))
        return True

    def read_range(self, lo: int, hi: int) -> list[Any]:
        """The kept rows ``[lo, hi)`` (made available or sent), as elements to send again: record
        batches, or :class:`Encoded` payloads. Raises ResumeError when they are not all kept."""
        with self._lock:
            if self.outbound.state.ended:
                raise ResumeError(f"{self._where} has ended ({self._ended_why()}); its rows are no longer kept")
            items = self._kept.range(lo, hi)
        return items if self._arrow is not None else [Encoded(i) for i in items]

    def _ended_why(self) -> str:
        e = self.outbound.error
        return "completed and acknowledged" if e is None else str(e)


__all__ = ["RetainingStream", "RetainingStreamStats", "Delivery"]
