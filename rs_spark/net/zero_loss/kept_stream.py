"""The outbound stream of a resumable connection: it keeps what it sent until acknowledged.

A :class:`KeptStream` is an :class:`~rs_spark.net.protocol.outbound.OutboundStream` whose queue is
a :class:`~.retention.RetainedLog`. When its connection drops it is not cancelled: it is
*detached*, keeps what its publisher still sends within the demand already issued, asks for
nothing more, and waits for its reader to resume at any kept position; the registry
(:mod:`.resume_server`) expires it after its window. Its publisher calls (``request``, ``cancel``,
``on_commit``) run on the stream's own serial executor, which outlives connections.

A stream that delivers *positions* only (:class:`Delivery`) sends no rows: it tells the reader how
far the rows go (METADATA_PUSH) within the reader's credit, and the reader's partitions fetch them
by position (:meth:`KeptStream.read_range`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...streams.errors import report_dropped
from ..protocol import frames as F
from ..protocol.codecs import ArrowCodec, Codec
from ..protocol.errors import NetError
from ..protocol.outbound import Encoded, OutboundStream
from ..protocol.send_queue import split_batch
from ..protocol.stream_state import OutboundStreamStats, State
from ..protocol.worker import SerialExecutor
from .resume import retention_metadata
from .retention import ResumeError, RetainedLog, Retention
from .spill import Spill


class Delivery(enum.Enum):
    """What a kept stream sends its reader (fixed when the stream opens)."""

    ROWS = "rows"  # the rows themselves, as PAYLOAD frames
    POSITIONS = "positions"  # how far the rows go (METADATA_PUSH); the reader fetches them by position


@dataclass(frozen=True, slots=True)
class KeptStreamStats(OutboundStreamStats):
    """An outbound stream's stats, with what keeping its rows adds (rows)."""

    # The oldest row kept, and the position the reader acknowledged.
    first_position: int
    acked_position: int
    # Resumptions, rows sent again after them, and rows never acknowledged when the window ended.
    resumes: int
    resent_records: int
    lost_records: int


class KeptStream(OutboundStream):
    """An outbound stream that keeps its rows until the reader acknowledges them, and survives
    its connection (see the module)."""

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
        arrow = codec if isinstance(codec, ArrowCodec) else None
        log = RetainedLog(retention, split=split_batch if arrow else None, spill=spill, to_bytes=self._payload_bytes)
        # The publisher's calls outlive any one connection's signal thread.
        executor = SerialExecutor(f"rs-net-stream {where}")
        super().__init__(codec, where, on_end=on_end, address=address, log=log, executor=executor)
        self._kept = log
        self._delivery = delivery
        self._on_detach = on_detach
        self.committable: Any = None  # the publisher, when it takes on_commit (see _commit_upstream)
        self._acked = 0
        self.resumes = 0
        self.resent = 0  # rows sent again after resumptions
        self.lost = 0  # rows kept and never acknowledged when the resume window ended

    def _payload_bytes(self, item: Any) -> bytes:
        """An element as the bytes its payload carries (for the spill)."""
        buffers = self._arrow.encode(item) if self._arrow is not None else item
        return b"".join(bytes(b) for b in buffers)

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
            self._state = State.DETACHED

    # -- connections come and go ---------------------------------------------------------
    def resume(self, conn: Any, stream_id: int, position: int) -> int:
        """Continue on ``conn`` from ``position`` (a kept row): credit starts at zero, the rows
        from there are sent again as the reader grants credit. Returns how many are sent again.
        Raises :class:`ResumeError` when the stream ended or ``position`` is not kept."""
        with self._lock:
            if self._state is State.ENDED:
                raise ResumeError(f"{self._where} has ended ({self._ended_why()}); it cannot be resumed")
            resend = self._kept.rewind(position)
            old, old_sid = self._conn, self._sid
            self._conn, self._sid = conn, stream_id
            self._pump.revoke()
            self._state = State.RESUMED  # its end waits for the resumed reader's first request
            self.resumes += 1
            self.attaches += 1
            self.resent += resend
        if old is not None and old is not conn:  # the old connection may not know it is dead yet
            old.remove_stream(old_sid)
        self._schedule_pump()
        return resend

    def on_frame(self, f: F.Frame) -> None:
        """After its end was sent the stream takes only acknowledgements (METADATA_PUSH): its
        frames are ignored, as for any ended stream (Protocol.md, "Handling the Unexpected")."""
        if self._state is not State.FINISHING:
            super().on_frame(f)

    def on_connection_closed(self, error: BaseException) -> None:
        """Keep the stream for a resume, unless it already ended: one that sent its end and waits
        for the last acknowledgements is detached too, so it expires after its window."""
        with self._lock:
            detached = self._state is not State.ENDED
            if detached:
                self._state = State.DETACHED
                self._conn = None
                self._pump.revoke()
        if not detached:
            self.cancel_with(error)
            return
        cb = self._on_detach
        if cb is not None:
            cb()

    def expire(self, why: str) -> int:
        """The resume window ended without a reader: cancel the publisher; returns the rows lost."""
        with self._lock:
            if self._state is not State.ENDED:
                self.lost = self._kept.records
        self.cancel_with(NetError(f"{self._where}: {why}", self._address, self._where))
        return self.lost

    def shutdown(self, why: str) -> None:
        """The server stops: cancel the publisher; a spilled stream keeps its files, so a restarted
        server can serve its kept rows again."""
        with self._lock:
            self._kept.close_spill()
        self.cancel_with(NetError(f"{self._where}: {why}", self._address, self._where))

    @property
    def reader_gone(self) -> bool:
        """No reader is on the stream: detached, or its connection closed (and not yet told)."""
        conn = self._conn
        return self._state is State.DETACHED or conn is None or conn.closed is not None

    # -- acknowledgements ------------------------------------------------------------------
    def acknowledge(self, position: int) -> int:
        """The reader made every row before ``position`` durable: free them, and tell the
        publisher (``on_commit``, serial with its other calls). Returns the rows freed."""
        with self._lock:
            if self._state is State.ENDED:
                return 0
            freed = self._kept.free_until(position)
            advanced = position > self._acked
            self._acked = max(self._acked, position)
            finished = self._finished_locked()
        if advanced:
            self._run(lambda: self._commit_upstream(position))
        if finished:
            self._end(None)
        elif freed:
            self._schedule_pump()  # room again: the publisher may be asked for more
        return freed

    def _finished_locked(self) -> bool:
        """Over: its publisher ended and every row is acknowledged, with no reader waiting for its
        end (it was sent; or the stream is detached, so a reader acknowledging on another
        connection made every row durable)."""
        ended = self._state is State.FINISHING or (self._state is State.DETACHED and self._terminal is not None)
        return ended and self._acked >= self._kept.end

    def _commit_upstream(self, position: int) -> None:
        for target in (self._sub, self.committable):
            hook = getattr(target, "on_commit", None)
            if callable(hook):
                try:
                    hook(position)
                except Exception as exc:  # an acknowledgement the publisher fumbled must not end the stream
                    report_dropped(exc, f"rs_spark.net: {self._where}: on_commit({position}) raised")
                return

    def _ends_when_sent_locked(self) -> bool:
        return self._acked >= self._kept.end

    def retention_counts(self) -> dict[str, int]:
        """What the reader is told after an acknowledgement (and, positions only, when rows become available)."""
        with self._lock:
            return self._counts_locked()

    def _counts_locked(self) -> dict[str, int]:
        return {  # a dict: a wire format (the METADATA_PUSH answer's JSON), not introspection
            "retainedRecords": self._kept.records,
            "retainedBytes": self._kept.bytes,
            "ackedPosition": self._acked,
            "resentRecords": self.resent,
            "endPosition": self._kept.cursor,
        }

    def stats(self) -> KeptStreamStats:
        """What the stream keeps and has done (rows), for the endpoint's stats."""
        with self._lock:
            return KeptStreamStats(
                **self._stats_fields_locked(),
                first_position=self._kept.first,
                acked_position=self._acked,
                resumes=self.resumes,
                resent_records=self.resent,
                lost_records=self.lost,
            )

    # -- positions only, and fetches -------------------------------------------------------
    def _send_rows_locked(self, conn: Any) -> None:
        if self._delivery is Delivery.ROWS:
            super()._send_rows_locked(conn)
            return
        # Positions only: make rows available within credit (no payload frames) and tell the
        # reader how far they now go.
        log, pump = self._kept, self._pump
        before = log.cursor
        while pump.credit > 0:
            got = log.next_to_send(pump.credit if self._arrow is not None else 1)
            if got is None:
                break
            pump.spend(got[1])
        if log.cursor != before:
            conn.send(F.encode_metadata_push(retention_metadata(self._counts_locked())))

    def read_range(self, lo: int, hi: int) -> list[Any]:
        """The kept rows ``[lo, hi)`` (made available or sent), as elements to send again: record
        batches, or :class:`Encoded` payloads. Raises ResumeError when they are not all kept."""
        with self._lock:
            if self._state is State.ENDED:
                raise ResumeError(f"{self._where} has ended ({self._ended_why()}); its rows are no longer kept")
            items = self._kept.range(lo, hi)
        return items if self._arrow is not None else [Encoded(i) for i in items]

    def _ended_why(self) -> str:
        e = self.error
        return "completed and acknowledged" if e is None else str(e)


__all__ = ["KeptStream", "KeptStreamStats", "Delivery"]
