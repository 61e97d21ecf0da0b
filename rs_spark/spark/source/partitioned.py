"""Several publishers as partitions, read by executors straight from their endpoints.

A Reactive Streams Publisher is one ordered sequence; parallelism comes from several publishers
(shards, service instances, gateways), each a partition with its own position, as each Kafka
topic-partition has its own offset. With option ``endpoint`` naming several endpoints (or
``executorFetch=true``), each endpoint is read as a resumable stream that *keeps* rows without
sending them (``resumable(positions=True)``): the endpoint says how far the rows go, the reader
process here plans micro-batches as position ranges per partition, and executors fetch each range
from the endpoint directly (``ResumablePublisher.fetch``). The reader process carries demand,
positions and acknowledgements only: no row passes through it.

Offsets: :class:`~.offsets.PartitionedOffset`, ``{"positions": {"eu": 1200, "us": 980}, "streams":
{"eu": key, "us": key}}``, a partition's position counting the rows of its stream.
``maxRecordsPerTrigger`` is shared across partitions in proportion to what each has available (as
Kafka shares ``maxOffsetsPerTrigger``); each partition is asked only for what it was granted (rule 1.1).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from ...arrow.convert import ElementConverter
from ...net import connect
from ...net.protocol.address import redact
from ...net.protocol.errors import Refused, ResumeRejected
from ...net.zero_loss.resume import new_key
from ...streams.types import Subscription
from .data_loss import report_data_loss
from .fetch import fetch_range_for
from .intake import PublisherFailed
from .offsets import PartitionedOffset, StreamOffset
from .offsets import parse as parse_offset
from .options import SourceOptions
from .outage import outage_progress
from .reader import default_read_limit
from .sigterm import SigtermStop

log = logging.getLogger("rs_spark.source")


class EndpointRange(InputPartition):
    """Rows ``[lo, hi)`` of partition ``pid``'s stream ``key``: an executor fetches them from the endpoint."""

    def __init__(self, pid: str, key: str, lo: int, hi: int) -> None:
        super().__init__(f"{pid}[{lo}:{hi}]")
        self.pid, self.key, self.lo, self.hi = pid, key, lo, hi


class _Link:
    """The reader process's side of one partition: a positions-only resumable stream."""

    def __init__(
        self, pid: str, opts: SourceOptions, key: str, position: int, changed: Callable[[], None], new: bool = False
    ) -> None:
        self.pid = pid
        self._changed = changed  # rows made available, or the stream ended: wakes the reader's wait
        self.publisher = connect(opts.endpoints[pid], **opts.client_options()).resumable(
            key, window=opts.resume_window, positions=True, new=new, backoff=opts.link.backoff
        )
        self.start = position  # where this reader process took the stream up
        self.subscription: Any = None
        self.error: BaseException | None = None
        self.completed = False
        self.requested = position  # the position up to which rows were asked for
        # Nothing acknowledged by this process yet: Spark's commit() of the checkpoint's last batch
        # (when it plans the next one) acknowledges what the last reader process may not have.
        self._acked = -1
        # The stream named by the checkpoint: resumed, or opened under that key if it is new.
        self.publisher.subscribe_at(self, position)

    @property
    def key(self) -> str:
        return str(self.publisher.key)

    # -- Subscriber (positions only: no on_next) -----------------------------------------------
    def on_subscribe(self, s: Subscription) -> None:
        self.subscription = s
        on_available = getattr(s, "on_available", None)
        if callable(on_available):
            on_available(self._changed)
        self._changed()

    def on_next(self, item: Any) -> None:  # pragma: no cover - a positions-only stream sends no rows
        raise TypeError("a positions-only stream sent a row")

    def on_error(self, error: BaseException) -> None:
        self.error = error
        self._changed()

    def on_complete(self) -> None:
        self.completed = True
        self._changed()

    # -- the reader's calls ----------------------------------------------------------------------
    @property
    def available(self) -> int:
        s = self.subscription
        return self.start if s is None else int(s.position)

    @property
    def ended(self) -> bool:
        return self.completed or self.error is not None

    def demand_up_to(self, position: int) -> None:
        """Ask the endpoint to keep rows available up to ``position``."""
        s = self.subscription
        if s is None or self.ended or position <= self.requested:
            return
        s.request(position - self.requested)
        self.requested = position

    @property
    def acked(self) -> int:
        """The last position this process acknowledged (-1: none)."""
        return self._acked

    def acknowledge(self, position: int) -> None:
        s = self.subscription
        if s is not None and position > self._acked and position <= self.available:
            self._acked = position
            s.on_commit(position)

    @property
    def payload_bytes(self) -> int:
        """Row bytes this link received (a positions-only stream receives none: they go to executors)."""
        s = self.subscription
        return 0 if s is None else int(s.payload_bytes)

    def retention(self) -> dict[str, int]:
        s = self.subscription  # a dict: the server's message, shown as is in the source's progress JSON
        return {} if s is None else dict(s.retention)

    def detach(self) -> None:
        s = self.subscription
        if s is not None:
            s.detach()


def _to(positions: dict[str, int], streams: dict[str, str]) -> dict:
    return PartitionedOffset(positions, streams).json()


class PartitionedStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming reader over several endpoints, one partition each (see the module docstring)."""

    def __init__(self, opts: SourceOptions, schema: StructType) -> None:
        self._opts = opts
        self._schema_json = schema.json()
        self._links: dict[str, _Link] | None = None
        self._available_now = False
        self._lock = threading.Lock()
        self._changed = threading.Condition()  # a link's rows became available, or its stream ended
        self._moved_reported = False
        self._vanished_reported = False

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_links"] = None  # executors never need (or could unpickle) the live links
        state["_lock"] = None
        state["_changed"] = None
        return state

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    # -- offsets ----------------------------------------------------------------------------------
    def _offset(self, d: dict) -> tuple[dict[str, int], dict[str, str]]:
        """Spark's offset as (positions, streams); one the single reader wrote starts over (reported)."""
        o = parse_offset(d)
        if isinstance(o, StreamOffset):
            self._from_single(o)
            return {}, {}
        return dict(o.positions), dict(o.streams)

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
        return _to({}, {})

    def getDefaultReadLimit(self) -> ReadLimit:
        return default_read_limit(self._opts)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        positions, streams = self._offset(start)
        new = [pid for pid in self._opts.endpoints if pid not in streams]
        if new:  # new streams' keys go into the checkpoint before any row is asked for (see upstream.first_offset)
            positions, streams = {**positions, **dict.fromkeys(new, 0)}, {**streams, **{p: new_key() for p in new}}
            if not self._available_now:  # AvailableNow takes the first answer as its target: open at once
                return _to(positions, streams)
        # Acknowledged in commit() only: with asyncProgressTrackingEnabled Spark asks for the next
        # batch before the commit log holds the last one (docs/guarantees.md). Spark refuses async
        # progress tracking with AvailableNow, whose last batch gets no commit(): here it can.
        links = self._subscribe(positions, streams, new)
        if self._available_now:
            for pid, link in links.items():
                link.acknowledge(positions.get(pid, link.start))
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else self._opts.max_records_per_trigger
        self._ask(links, positions, max_rows)
        self._wait(links, positions, max_rows)
        self._check(links, positions)
        take = self._rate_limit(links, positions, max_rows)
        if not any(take.values()):
            return self._release(links, positions, start) or start
        ends = {pid: positions.get(pid, links[pid].start) + take.get(pid, 0) for pid in links}
        if self._opts.prefetch:  # the next micro-batch's rows are made available while Spark runs this one
            self._ask(links, ends, max_rows)
        return _to(ends, {pid: link.key for pid, link in links.items()})

    def _release(self, links: dict[str, _Link], positions: dict[str, int], start: dict) -> dict | None:
        """Nothing to plan while rows before ``start`` are not acknowledged: an offset naming no new
        rows (``release`` + 1), so Spark plans an empty micro-batch and then commits the one ending
        at ``start`` (only then: docs/guarantees.md), and an endpoint at its retention bound can go
        on. Once per position; never in AvailableNow (which ends)."""
        if self._available_now:
            return None
        if not any(pid in positions and positions[pid] > max(link.acked, 0) for pid, link in links.items()):
            return None
        o = parse_offset(start)
        if not isinstance(o, PartitionedOffset):
            return None
        return dataclasses.replace(o, release=o.release + 1).json()

    def _subscribe(self, positions: dict[str, int], streams: dict[str, str], new: list[str]) -> dict[str, _Link]:
        """The links (opened once per reader process), each at its committed position."""
        if self._links is None:
            self._vanished(positions)
            SigtermStop(self.stop).install()
            self._links = {
                pid: _Link(pid, self._opts, streams[pid], positions[pid], self._notify, new=pid in new)
                for pid in self._opts.endpoints
            }
            self._await_subscriptions(self._links)
        return self._links

    def _vanished(self, positions: dict[str, int]) -> None:
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

    def _await_subscriptions(self, links: dict[str, _Link]) -> None:
        def opened() -> bool:
            return all(link.subscription is not None or link.error is not None for link in links.values())

        with self._changed:  # each link notifies on on_subscribe and on on_error
            self._changed.wait_for(opened, max(10.0, 20 * self._opts.poll_timeout))
        for link in links.values():
            if link.subscription is None and link.error is None:
                raise TimeoutError(f"format('reactive'): partition {link.pid!r} did not open its stream in time")

    def _ask(self, links: dict[str, _Link], positions: dict[str, int], max_rows: int | None) -> None:
        """Keep up to a micro-batch's worth (or maxBufferedRecords) available per partition."""
        per = self._opts.max_buffered if max_rows is None else max(1, min(self._opts.max_buffered, max_rows))
        for pid, link in links.items():
            link.demand_up_to(positions.get(pid, link.start) + per)

    def _wait(self, links: dict[str, _Link], positions: dict[str, int], max_rows: int | None) -> None:
        """Wait up to pollTimeout for rows: until a micro-batch's worth is available, or every
        partition has what was asked of it, or one ended."""
        want = max_rows or 1

        def enough() -> bool:
            total = sum(max(0, link.available - positions.get(pid, link.start)) for pid, link in links.items())
            return total >= want or all(link.ended or link.available >= link.requested for link in links.values())

        with self._changed:  # each link notifies after its position moves or its stream ends
            self._changed.wait_for(enough, self._opts.poll_timeout)

    def _check(self, links: dict[str, _Link], positions: dict[str, int]) -> None:
        """A partition whose publisher failed fails the query naming it, once the rows it made
        available before the error are planned; one that cannot be resumed is reported as data loss
        and continues with a new stream."""
        for pid, link in links.items():
            err = link.error
            if isinstance(err, ResumeRejected):
                self._replace(pid, link, positions, err)
            elif err is not None and link.available <= positions.get(pid, link.start):
                raise PublisherFailed(
                    RuntimeError(f"partition {pid!r} ({redact(self._opts.endpoints[pid])}): {err}"), link.available
                ) from err

    def _replace(self, pid: str, link: _Link, positions: dict[str, int], err: BaseException) -> None:
        report_data_loss(
            self._opts,
            f"format('reactive'): partition {pid!r} cannot resume stream {link.key} at position "
            f"{positions.get(pid, link.start)}: {err}; the rows it kept after the last commit are lost",
            "Restart queries within the endpoint's resume window, and keep its process running (or spill). ",
            "continue with a new stream from that endpoint",
        )
        assert self._links is not None
        self._links[pid] = _Link(pid, self._opts, new_key(), 0, self._notify, new=True)
        positions[pid] = 0
        self._await_subscriptions({pid: self._links[pid]})

    def _rate_limit(self, links: dict[str, _Link], positions: dict[str, int], max_rows: int | None) -> dict[str, int]:
        """Rows to plan per partition: all that is available, or ``max_rows`` shared in proportion
        to what each has available (largest remainders get the rows left)."""
        avail = {pid: max(0, link.available - positions.get(pid, link.start)) for pid, link in links.items()}
        total = sum(avail.values())
        if max_rows is None or total <= max_rows:
            return avail
        exact = {pid: max_rows * a / total for pid, a in avail.items()}
        take = {pid: math.floor(x) for pid, x in exact.items()}
        left = max_rows - sum(take.values())
        for pid in sorted(exact, key=lambda p: exact[p] - take[p], reverse=True)[:left]:
            take[pid] += 1
        return take

    # -- planning and reading ---------------------------------------------------------------------
    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        s_pos, _ = self._offset(start)
        e_pos, streams = self._offset(end)
        self._vanished(e_pos)  # a batch planned before a restart, with partitions no longer named
        ranges = [
            (pid, streams[pid], s_pos.get(pid, 0), e)
            for pid, e in e_pos.items()
            if e > s_pos.get(pid, 0) and pid in self._opts.endpoints
        ]
        total = sum(e - s for _, _, s, e in ranges)
        if not total:
            return []
        want = max(self._opts.min_partitions or len(ranges), len(ranges))
        chunk = math.ceil(total / want)
        parts: list[InputPartition] = []
        for pid, key, s, e in ranges:
            for lo in range(s, e, chunk):
                parts.append(EndpointRange(pid, key, lo, min(lo + chunk, e)))
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, EndpointRange)
        p = partition
        schema = to_arrow_schema(StructType.fromJson(json.loads(self._schema_json)), timezone="UTC")
        converter = ElementConverter(schema, self._opts.mode, self._opts.corrupt_column, add_corrupt_column=False)
        got = 0
        pending: list[Any] = []
        why = ""
        try:
            for item in fetch_range_for(self._opts, p.pid, p.key, p.lo, p.hi):  # rides out outages
                if isinstance(item, pa.RecordBatch):
                    yield from self._flush(converter, pending, p.lo + got - len(pending))
                    pending = []
                    got += item.num_rows
                    yield converter.convert([item], p.lo + got - item.num_rows).batch
                else:
                    pending.append(item)
                    got += 1
                    if len(pending) >= 65_536:
                        yield from self._flush(converter, pending, p.lo + got - len(pending))
                        pending = []
        except Refused as exc:  # the endpoint refused the range: it no longer keeps (all of) it
            why = f": {exc}"
        yield from self._flush(converter, pending, p.lo + got - len(pending))
        if got < p.hi - p.lo:
            self._lost_on_executor(p, p.lo + got, why)

    def _lost_on_executor(self, p: EndpointRange, at: int, why: str) -> None:
        """Rows of a planned range the endpoint no longer keeps: failOnDataLoss decides, as on the
        driver (and as Kafka's executor-side consumer: fail, or warn and skip them)."""
        report_data_loss(
            self._opts,
            f"format('reactive'): partition {p.pid!r} ({redact(self._opts.endpoints[p.pid])}) no longer keeps "
            f"positions [{at}, {p.hi}) of stream {p.key}, planned in a micro-batch{why}",
            "Restart queries within the endpoint's resume window and keep its process running (or serve with "
            "Retention(spill=...)). ",
            f"skip these {p.hi - at} rows (they are lost)",
        )

    @staticmethod
    def _flush(converter: ElementConverter, pending: list[Any], offset: int) -> Iterator[pa.RecordBatch]:
        if pending:
            batch = converter.convert(pending, offset).batch
            if batch.num_rows:
                yield batch

    # -- commit, progress, stop -------------------------------------------------------------------
    def commit(self, end: dict) -> None:
        positions, _ = self._offset(end)
        # Spark calls commit(end) once its commit log durably holds the batch ending at `end`
        # (MicroBatchExecution: after commitLog.add; with async progress tracking only for batches
        # whose offset and commit log writes are on disk): only then may the endpoints forget them.
        for pid, link in (self._links or {}).items():
            if pid in positions:
                link.acknowledge(positions[pid])

    def reportLatestOffset(self) -> dict | None:
        links = self._links
        if links is None:
            return None
        return {
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

    def stop(self) -> None:
        for link in (self._links or {}).values():
            link.detach()  # kept by each endpoint for its resume window: a restarted query continues


__all__ = ["PartitionedStreamReader", "EndpointRange"]
