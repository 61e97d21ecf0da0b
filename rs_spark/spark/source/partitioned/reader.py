"""Several publishers as partitions, read by executors straight from their endpoints.

A Reactive Streams Publisher is one ordered sequence; parallelism comes from several publishers
(shards, service instances, gateways), each a partition with its own position, as each Kafka
topic-partition has its own offset. With option ``endpoint`` naming several endpoints (or
``executorFetch=true``), each endpoint is read as a resumable stream that *keeps* rows without
sending them (:mod:`.link`): the endpoint says how far the rows go, the reader process here plans
micro-batches as position ranges per partition (:mod:`..planner` decides), and executors fetch
each range from the endpoint directly (:mod:`.fetch`). The reader process carries demand,
positions and acknowledgements only: no row passes through it.

Offsets: :class:`~..offsets.PartitionedOffset`, ``{"positions": {"eu": 1200, "us": 980}, "streams":
{"eu": key, "us": key}}``, a partition's position counting the rows of its stream.
``maxRecordsPerTrigger`` is shared across partitions in proportion to what each has available (as
Kafka shares ``maxOffsetsPerTrigger``); each partition is asked only for what it was granted (rule 1.1).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NoReturn

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from ....net.protocol.address import redact
from ....net.zero_loss.resume import new_key
from ..data_loss import report_data_loss
from ..errors import PublisherFailed
from ..live_edge import LiveEdge, await_rows_bound, rows_never_came
from ..offsets import PartitionedOffset, StreamOffset
from ..offsets import parse as parse_offset
from ..options import SourceOptions
from ..outage import outage_progress
from ..planner import Action, Ask, Decision, Part, Trigger, View, ask, available_now_target, decide, target_reason
from ..read_limits import default_read_limit, limits_of
from ..sigterm import SigtermStop
from .fetch import EndpointRange, read_range
from .link import PartitionLink

log = logging.getLogger("rs_spark.source")


class PartitionedStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming reader over several endpoints, one partition each (see the module docstring)."""

    def __init__(self, opts: SourceOptions, schema: StructType) -> None:
        self._opts = opts
        self._schema_json = schema.json()
        self._links: dict[str, PartitionLink] | None = None
        self._trigger = Trigger.STREAMING
        self._committed: dict[str, int] = {}  # per partition: the position Spark committed (commit())
        self._targets: dict[str, int] = {}  # AvailableNow: the position each partition's run ends at, once known
        self._run_starts: dict[str, int] = {}  # AvailableNow: each partition's position at the run's first ask
        self._new: set[str] = set()  # keys this process named, recorded in the checkpoint, not yet opened
        self._changed = threading.Condition()  # a link's rows became available, or its stream ended
        self._moved_reported = False
        self._vanished_reported = False
        self._edge_asker = LiveEdge(opts.poll_timeout)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_links"] = None  # executors never need (or could unpickle) the live links
        state["_changed"] = None
        return state

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    # -- offsets ----------------------------------------------------------------------------------
    def _offset(self, d: dict) -> PartitionedOffset:
        """Spark's offset, typed; one the single reader wrote starts over (reported)."""
        o = parse_offset(d)
        if isinstance(o, StreamOffset):
            self._from_single(o)
            return PartitionedOffset()
        return o

    def _from_single(self, o: StreamOffset) -> None:
        """The checkpoint was written by one reader process reading one endpoint's stream (rows sent
        to it): the endpoint keeps that stream in that form, which executors cannot fetch, so the rows
        it kept after the last commit would not be read: refused (failOnDataLoss), else reported once."""
        if o.stream is None or self._moved_reported:
            return  # no endpoint stream: nothing is kept upstream for this query
        self._moved_reported = True
        report_data_loss(
            self._opts,
            f"format('reactive'): the checkpoint was written reading one endpoint through the reader process "
            f"(executorFetch=false; stream {o.stream} at position {o.position}); this query reads partitions "
            "fetched by executors (several endpoints, or executorFetch=true), which cannot continue that stream, "
            "so the rows the endpoint kept after the last commit would not be read",
            "Keep this query on that endpoint alone with executorFetch=false (it reads on from the checkpoint) "
            "and read the other endpoints in another query with its own checkpointLocation, or start this query "
            "with a new checkpointLocation. ",
            "open new streams from the endpoints (the rows that endpoint kept are not read)",
        )

    def initialOffset(self) -> dict:
        return PartitionedOffset().json()

    def getDefaultReadLimit(self) -> ReadLimit:
        return default_read_limit(self._opts)

    def prepareForTriggerAvailableNow(self) -> None:
        self._trigger = Trigger.AVAILABLE_NOW

    # -- latestOffset: look, decide, act ------------------------------------------------------------
    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = self._offset(start)
        give_up = time.monotonic() + await_rows_bound(self._opts.poll_timeout)
        while True:  # AWAIT_ROWS: each look waits up to pollTimeout for rows
            view = self._look(begin, limit)
            d = decide(view)
            if d.action is not Action.AWAIT_ROWS:
                return self._act(d, begin, view).json()
            if time.monotonic() >= give_up:
                rows_never_came(self._opts.poll_timeout, f"positions {dict(begin.positions)}", dict(self._targets))
                return begin.json()

    def _look(self, begin: PartitionedOffset, limit: ReadLimit) -> View:
        """What the planner needs: the partitions' positions, after asking for rows and waiting."""
        lim = limits_of(limit, self._opts)
        if any(pid not in begin.streams for pid in self._opts.endpoints):
            return View({}, lim, self._trigger, new_keys=True)
        links = self._open(begin)
        if self._trigger is Trigger.AVAILABLE_NOW:
            # Spark wrote the commit log of the batch ending at `start` before asking again, and never
            # calls commit() for AvailableNow's last batch (it refuses async progress tracking there).
            self._commit(begin)
        a = ask(self._trigger, lim, self._opts.max_buffered, all(pid in self._targets for pid in links))
        self._ask(links, begin.positions, a)
        parts = {
            pid: link.part(begin.positions[pid], self._committed.get(pid, 0), self._targets.get(pid))
            for pid, link in links.items()
        }
        if a.edge:
            parts = self._said(links, parts)
            parts = {pid: self._edge(pid, p) for pid, p in parts.items()}
        return View(parts, lim, self._trigger)

    def _said(self, links: dict[str, PartitionLink], parts: dict[str, Part]) -> dict[str, Part]:
        """AvailableNow: partitions whose ask fell short, with no target yet, get their endpoint's
        answer to how far its rows are ready (:mod:`..live_edge`)."""
        short = {
            pid: (links[pid].subscription, self._opts.endpoints[pid])
            for pid, p in parts.items()
            if p.short and pid not in self._targets
        }
        said = self._edge_asker.ask(short) if short else {}
        return {pid: dataclasses.replace(p, said=said[pid]) if pid in said else p for pid, p in parts.items()}

    def _edge(self, pid: str, part: Part) -> Part:
        """AvailableNow: a partition's target, once this ask found its publisher's live edge (or bound)."""
        if pid in self._targets:
            return part
        start = self._run_starts.setdefault(pid, part.start)
        target = available_now_target(part, start, self._opts.available_now_max_records)
        if target is None:
            return part
        self._targets[pid] = target
        log.info(
            "format('reactive'): Trigger.AvailableNow reads partition %r up to position %d (%d records this run): %s",
            pid,
            target,
            target - start,
            target_reason(part, self._opts.poll_timeout, self._opts.available_now_max_records),
        )
        return dataclasses.replace(part, target=target)

    def _act(self, d: Decision, begin: PartitionedOffset, view: View) -> PartitionedOffset:
        links = self._links or {}
        if d.action is Action.RECORD_KEYS:
            return self._record_keys(begin, [pid for pid in self._opts.endpoints if pid not in begin.streams])
        if d.action is Action.START_OVER:
            return self._start_over(begin, d.parts)
        if d.action is Action.FAIL:
            self._fail(d.parts[0], begin)
        if d.action is Action.AWAIT_OPEN:
            self._await_open({pid: links[pid] for pid in d.parts})
        if d.action is Action.RELEASE:
            return dataclasses.replace(begin, release=begin.release + 1)
        if d.action is not Action.PLAN:
            return begin  # WAIT, END, or opened meanwhile: no micro-batch now
        ends = {pid: begin.positions[pid] + d.take.get(pid, 0) for pid in links}
        if self._opts.prefetch:
            # the next micro-batch's rows are made available while Spark runs this one (not beyond
            # an AvailableNow target: _ask skips partitions that have one)
            self._ask(
                links,
                ends,
                dataclasses.replace(ask(Trigger.STREAMING, view.limits, self._opts.max_buffered, False), wait_for=0),
            )
        return PartitionedOffset(ends, {pid: link.key for pid, link in links.items()})

    # -- the steps' I/O -----------------------------------------------------------------------------
    def _record_keys(self, begin: PartitionedOffset, new: list[str]) -> PartitionedOffset:
        """New partitions get a key at position 0, recorded in the checkpoint before they are opened
        (a driver that dies in between leaves nothing with the endpoints)."""
        keys = {pid: new_key() for pid in new}
        self._new.update(new)
        return PartitionedOffset({**begin.positions, **dict.fromkeys(new, 0)}, {**begin.streams, **keys})

    def _open(self, begin: PartitionedOffset) -> dict[str, PartitionLink]:
        """The links (opened once per reader process, and again after a start-over), each at the
        position the checkpoint names."""
        if self._links is None:
            self._vanished(begin.positions)
            SigtermStop(self.stop).install()
            self._links = {}
        missing = [pid for pid in self._opts.endpoints if pid not in self._links]
        for pid in missing:
            new = pid in self._new
            self._links[pid] = PartitionLink(
                pid, self._opts, begin.streams[pid], begin.positions[pid], self._notify, new=new
            )
            self._new.discard(pid)
            self._committed[pid] = begin.positions[pid] if new else self._committed.get(pid, 0)
        if missing:
            self._await_open({pid: self._links[pid] for pid in missing})
        return self._links

    def _vanished(self, positions: Mapping[str, int]) -> None:
        """Partitions in the checkpoint that option endpoint no longer names (as Kafka's deleted partitions)."""
        gone = [pid for pid in positions if pid not in self._opts.endpoints]
        if gone and not self._vanished_reported:
            self._vanished_reported = True
            report_data_loss(
                self._opts,
                f"format('reactive'): partitions {', '.join(gone)} are in the checkpoint but not in option endpoint; "
                "the rows their endpoints kept after the last commit are not read",
                "Keep every partition in option endpoint until its rows are read. ",
                "continue without them",
            )

    def _await_open(self, links: dict[str, PartitionLink]) -> None:
        """Wait (bounded, as rule 1.9's on_subscribe) until each stream opened or failed."""

        def opened() -> bool:
            return all(link.subscription is not None or link.error is not None for link in links.values())

        with self._changed:  # each link notifies on on_subscribe and on on_error
            self._changed.wait_for(opened, max(10.0, 20 * self._opts.poll_timeout))
        for link in links.values():
            if link.subscription is None and link.error is None:
                raise TimeoutError(
                    f"format('reactive'): partition {link.pid!r} ({redact(self._opts.endpoints[link.pid])}) did "
                    f"not open its stream within {max(10.0, 20 * self._opts.poll_timeout):.0f} s; check that the "
                    "endpoint is served and reachable from the driver"
                )

    def _ask(self, links: dict[str, PartitionLink], positions: Mapping[str, int], a: Ask) -> None:
        """Ask each partition to keep ``a.per_part`` rows available beyond its position (those whose
        AvailableNow target is fixed: nothing), then wait up to pollTimeout for ``a.wait_for`` rows in
        all, every partition having what was asked of it, or one ending."""
        for pid, link in links.items():
            end = positions.get(pid, link.start) + a.per_part
            link.demand_up_to(min(end, self._targets.get(pid, end)))  # not beyond an AvailableNow target
        if not a.wait_for:
            return

        def served(link: PartitionLink) -> bool:
            return link.error is not None or link.completed or link.available >= link.requested

        def enough() -> bool:
            if all(served(link) for link in links.values()):
                return True
            # AvailableNow looks for each partition's live edge: each must have had its pollTimeout
            total = sum(max(0, link.available - positions.get(pid, link.start)) for pid, link in links.items())
            return not a.edge and total >= a.wait_for

        with self._changed:  # each link notifies after its position moves or its stream ends
            self._changed.wait_for(enough, self._opts.poll_timeout)

    def _start_over(self, begin: PartitionedOffset, pids: tuple[str, ...]) -> PartitionedOffset:
        """Partitions whose endpoint cannot resume their stream: reported as data loss
        (failOnDataLoss decides), then read as new streams whose keys are recorded first."""
        links = self._links or {}
        for pid in pids:
            link = links.pop(pid)
            report_data_loss(
                self._opts,
                f"format('reactive'): partition {pid!r} cannot resume stream {link.key} at position "
                f"{begin.positions[pid]}: {link.error}; the rows it kept after the last commit are lost",
                "Restart queries within the endpoint's resume window, and keep its process running (or spill). ",
                "continue with a new stream from that endpoint",
            )
            self._targets.pop(pid, None)
            self._run_starts.pop(pid, None)
            self._committed.pop(pid, None)
        return self._record_keys(begin, list(pids))

    def _fail(self, pid: str, begin: PartitionedOffset) -> NoReturn:
        """A partition whose publisher failed fails the query naming it (its rows are planned)."""
        link = (self._links or {})[pid]
        err = link.error
        assert err is not None
        raise PublisherFailed(
            RuntimeError(f"partition {pid!r} ({redact(self._opts.endpoints[pid])}): {err}"), begin.positions[pid]
        ) from err

    # -- planning and reading ---------------------------------------------------------------------
    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        s_pos = self._offset(start).positions
        e = self._offset(end)
        self._vanished(e.positions)  # a batch planned before a restart, with partitions no longer named
        ranges = [
            (pid, e.streams[pid], s_pos.get(pid, 0), hi)
            for pid, hi in e.positions.items()
            if hi > s_pos.get(pid, 0) and pid in self._opts.endpoints
        ]
        total = sum(hi - lo for _, _, lo, hi in ranges)
        if not total:
            return []
        want = max(self._opts.min_partitions or len(ranges), len(ranges))
        chunk = math.ceil(total / want)
        return [
            EndpointRange(pid, key, lo, min(lo + chunk, hi)) for pid, key, s, hi in ranges for lo in range(s, hi, chunk)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, EndpointRange)
        return read_range(self._opts, self._schema_json, partition)

    # -- commit, progress, stop -------------------------------------------------------------------
    def commit(self, end: dict) -> None:
        # Spark calls commit(end) once its commit log durably holds the batch ending at `end`
        # (MicroBatchExecution: after commitLog.add; with async progress tracking only for batches
        # whose offset and commit log writes are on disk): only then may the endpoints forget them.
        self._commit(self._offset(end))

    def _commit(self, o: PartitionedOffset) -> None:
        """Spark committed every row before ``o``: each partition's endpoint hears it (a stream this
        process started over is not the one ``o`` names: nothing of it is acknowledged)."""
        for pid, link in (self._links or {}).items():
            if pid in o.positions and o.streams.get(pid) == link.key:
                self._committed[pid] = max(self._committed.get(pid, 0), o.positions[pid])
                link.acknowledge(o.positions[pid])

    def reportLatestOffset(self) -> dict | None:
        links = self._links
        if links is None:
            return None
        report: dict[str, Any] = {
            "partitions": {
                pid: {
                    "available": link.available,
                    **link.retention(),
                    "completed": link.completed,
                    **outage_progress(link.subscription),
                }
                for pid, link in links.items()
            },
            "rowBytesThroughReader": sum(link.payload_bytes for link in links.values()),
        }
        if self._targets:
            report["availableNowTarget"] = dict(self._targets)
        return report

    def stop(self) -> None:
        for link in (self._links or {}).values():
            link.detach()  # kept by each endpoint for its resume window: a restarted query continues


__all__ = ["PartitionedStreamReader", "EndpointRange"]
