"""The single reader: one publisher through the reader process; micro-batch offsets become ``request(n)``.

Which process runs what (docs/architecture.md, "Processes"): the reader object is built in a
planner worker and pickled to executors, so it holds nothing live until first used. In Spark's
long-lived driver-side reader process, the first ``latestOffset``/``partitions`` call builds the
live state (:class:`~.live.Live`: the subscription, the converter, the replay store).
``read(partition)`` runs on executors and only reads what the partition carries or names
(:mod:`.partitions`).

``latestOffset`` looks (subscribes, acknowledges, asks for rows and waits), lets the planner decide
(:func:`~..planner.decide`, the one decision both readers share) and acts on the decision.

Offsets are :class:`~..offsets.StreamOffset`: ``offset`` counts records received from the publisher
since the query began (a RecordBatch element counts its rows). When the publisher can replay they
also carry the stream position (and an endpoint stream's key), so a restarted reader asks again
from there (:mod:`.upstream`); Spark's checkpoint is then all the state a restart needs.
Acknowledgements upstream follow Spark's ``commit`` only (docs/guarantees.md, "Acknowledgements").
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from ....arrow.ipc import to_ipc
from ..data_loss import report_data_loss
from ..executor_rows import arrow_schema
from ..live_edge import LiveEdge, await_rows_bound, rows_never_came
from ..offsets import PartitionedOffset, StreamOffset
from ..offsets import parse as parse_offset
from ..options import SourceOptions
from ..planner import Action, Decision, Part, Trigger, View, ask, available_now_target, decide, target_reason
from ..read_limits import default_read_limit, limits_of
from .live import Live
from .partitions import FetchPartition, InlinePartition, read_partition, split_log
from .planned import inline_max_bytes
from .replay_log import MissingData

log = logging.getLogger("rs_spark.source")


class ReactiveStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming reader: demand per micro-batch from the read limit. ``clock``: seconds on a monotonic
    clock, for maxTriggerDelay and the on_subscribe wait (a test passes one it moves by hand)."""

    def __init__(self, opts: SourceOptions, schema: StructType, clock: Callable[[], float] = time.monotonic) -> None:
        self._opts = opts
        self._clock = clock
        self._schema_json = schema.json()
        self._live: Live | None = None
        self._trigger = Trigger.STREAMING
        self._committed = -1  # the offset Spark last committed (commit(), or AvailableNow's start)
        self._target: int | None = None  # AvailableNow: the offset the run ends at, once known
        self._run_start: int | None = None  # AvailableNow: the offset the run's first ask began at
        self._asked = 0  # elements the last ask signalled demand for (prefetched again after planning)
        self._moved_reported = False
        self._edge_asker = LiveEdge(opts.poll_timeout)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_live"] = None  # executors never need (or could unpickle) the live subscription
        return state

    def _state(self, start: StreamOffset, end: StreamOffset | None = None) -> Live:
        if self._live is None:
            self._live = Live(self._opts, arrow_schema(self._schema_json), start, end, clock=self._clock)
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
        self._trigger = Trigger.AVAILABLE_NOW

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = self._offset(start)
        live = self._state(begin)
        give_up = self._clock() + await_rows_bound(self._opts.poll_timeout)
        while True:  # AWAIT_ROWS: each look waits up to pollTimeout for rows
            view = self._look(live, begin, limit)
            d = decide(view)
            if d.action is not Action.AWAIT_ROWS:
                return self._act(live, d, begin, view).json()
            if self._clock() >= give_up:
                rows_never_came(self._opts.poll_timeout, begin.offset, self._target)
                return begin.json()

    def _look(self, live: Live, begin: StreamOffset, limit: ReadLimit) -> View:
        """What the planner needs: the stream's state after subscribing, acknowledging, asking for
        rows and waiting (none of it when a new key must be recorded or a planned batch replayed)."""
        s, lim = begin.offset, limits_of(limit, self._opts)
        if live.upstream.key_unrecorded:
            return View({}, lim, self._trigger, new_keys=True)
        live.open()
        if self._trigger is Trigger.AVAILABLE_NOW:
            # Spark wrote the commit log of the batch ending at `start` before asking again, and never
            # calls commit() for AvailableNow's last batch (it refuses async progress tracking there).
            self._commit(s)
        logged = live.planned.end_of(s)
        if logged is not None:  # planned before a restart but never run: replay it first
            return View({}, lim, self._trigger, logged_end=logged)
        live.realign(s)
        a = ask(self._trigger, lim, self._opts.max_buffered, self._target is not None)
        if self._target is not None:  # not beyond the target: what is held counts, so only rows still due
            a = dataclasses.replace(a, per_part=max(0, min(a.per_part, self._target - s)))
        self._asked = live.ask(a)
        part = live.part(s, self._committed, self._target)
        if a.edge:
            part = self._edge(live, part)
        return View({"": part}, lim, self._trigger, self._clock() - live.last_batch_at)

    def _edge(self, live: Live, part: Part) -> Part:
        """AvailableNow: the run's target, once this ask found the publisher's live edge (or its bound):
        an ask that fell short is put to the endpoint, when it answers (:mod:`..live_edge`)."""
        if self._run_start is None:
            self._run_start = part.start
        if part.short and self._opts.endpoint:
            said = live.said(self._edge_asker)
            if said is not None:
                part = dataclasses.replace(part, said=said)
        self._target = available_now_target(part, self._run_start, self._opts.available_now_max_records)
        if self._target is not None:
            log.info(
                "format('reactive'): Trigger.AvailableNow reads up to offset %d (%d records this run): %s",
                self._target,
                self._target - self._run_start,
                target_reason(part, self._opts.poll_timeout, self._opts.available_now_max_records),
            )
        return dataclasses.replace(part, target=self._target)

    def _act(self, live: Live, d: Decision, begin: StreamOffset, view: View) -> StreamOffset:
        s = begin.offset
        if d.action is Action.START_OVER:
            live.start_over(s)
            self._target = self._run_start = None  # the new stream's run ends at its own live edge
        if d.action in (Action.RECORD_KEYS, Action.START_OVER):
            return live.upstream.first_offset(s) or begin
        if d.action is Action.REPLAY:
            assert view.logged_end is not None
            return live.upstream.offset(view.logged_end)
        if d.action is Action.FAIL:
            live.fail(s)
        if d.action is Action.AWAIT_OPEN:
            live.await_open()
        if d.action is Action.RELEASE:
            return dataclasses.replace(begin, release=begin.release + 1)
        if d.action is not Action.PLAN:
            return begin  # WAIT, END, or opened meanwhile: no micro-batch now
        end = live.plan(s, d.rows)
        if self._opts.prefetch and self._target is None:  # not beyond AvailableNow's target
            live.prefetch_later(self._asked)
        return live.upstream.offset(end)

    def _commit(self, e: int) -> None:
        live = self._live
        if live is None:
            return
        self._committed = max(self._committed, e)
        live.acknowledge(e)

    def reportLatestOffset(self) -> dict | None:
        live = self._live
        if live is None:
            return None
        progress = live.progress()
        if self._target is not None:
            progress["availableNowTarget"] = self._target
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
        planned = live.planned
        if planned.log is not None:
            try:
                segs = planned.log.covering(s, e)
            except MissingData as exc:
                return self._lost(s, e, str(exc))
            return split_log(planned.log.uri, [(seg.name, seg.rows) for seg in segs], self._opts.num_partitions)
        batch = planned.memory.get(s)
        if (batch is None or batch.end != e) and live.replan(s, e):
            batch = planned.memory.get(s)  # asked again from the publisher, which can replay
        if batch is None or batch.end != e:
            return self._lost(
                s,
                e,
                f"the micro-batch [{s}, {e}) was planned by an earlier reader process "
                "(the driver restarted) and was kept only in its memory",
            )
        return self._partitions_of(live, s, batch.table)

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
        server = None if inline else live.planned.server()
        for lo in range(0, rows, step):
            hi = min(lo + step, rows)
            if server is None:
                piece = table.slice(lo, hi - lo).combine_chunks().to_batches()
                parts.append(InlinePartition(to_ipc(piece, live.schema), s + lo))
            else:
                # this range's credential only; the private file first on this host
                parts.append(FetchPartition(server.grant(s, lo, hi), s, lo, hi, live.planned.local_file(s)))
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
        # Spark calls commit(end) once its commit log durably holds the batch ending at `end`
        # (MicroBatchExecution: after commitLog.add; with async progress tracking only for batches
        # whose offset and commit log writes are on disk): only then may the publisher forget them.
        e = self._offset(end).offset
        self._commit(e)
        if self._live is not None:
            self._live.planned.committed(e)

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()


__all__ = ["ReactiveStreamReader"]
