"""The single reader's partitions: where a micro-batch's rows are for executors (inside the
partition, on the reader process's batch server, or in replay-log segments), and reading each
kind on an executor."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from ....arrow.ipc import from_ipc
from .batch_fetch import FetchError, FetchGrant, fetch, host_key
from .replay_log import read_segment_slice


class InlinePartition(InputPartition):
    """Rows carried inside the partition as Arrow IPC bytes (no replay log)."""

    def __init__(self, ipc: bytes, first_offset: int) -> None:
        super().__init__(first_offset)
        self.ipc = ipc


class FetchPartition(InputPartition):
    """Rows ``[lo, hi)`` of the micro-batch planned at offset ``key``, fetched by the executor
    straight from the driver-side reader process (no replay log; large batches). ``local`` names
    the private file (folder, name) the reader wrote them to (:mod:`.handoff`): an executor on the
    reader's host maps that instead, and fetches only if it cannot open it."""

    def __init__(self, grant: FetchGrant, key: int, lo: int, hi: int, local: tuple[str, str] | None = None) -> None:
        super().__init__(key + lo)
        self.grant, self.key, self.lo, self.hi = grant, key, lo, hi
        self.local = local


class LogPartition(InputPartition):
    """Rows ``[lo, hi)`` of replay-log segments, read by the executor from the log."""

    def __init__(self, uri: str, pieces: list[tuple[str, int, int]]) -> None:
        super().__init__(pieces[0][0] if pieces else None)
        self.uri = uri
        self.pieces = pieces


def split_log(uri: str, segs: list[tuple[str, int]], n: int) -> list[InputPartition]:
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


def read_partition(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """The rows of one of the source's partitions (on an executor)."""
    if isinstance(partition, InlinePartition):
        yield from from_ipc(partition.ipc, f"the inline partition from offset {partition.value}")
    elif isinstance(partition, FetchPartition):
        local = _local_rows(partition)
        if local is not None:
            yield from local
            return
        try:
            yield from fetch(partition.grant, partition.key, partition.lo, partition.hi)
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


def _local_rows(partition: FetchPartition) -> list[pa.RecordBatch] | None:
    """The partition's rows from the reader's private file, when this executor is on its host and
    the file is there (validated in full); None to fetch them over TCP instead."""
    local = getattr(partition, "local", None)  # absent in partitions pickled by an older release
    if local is None or partition.grant.host_key != host_key():
        return None
    folder, name = local
    if not os.access(os.path.join(folder, name), os.R_OK):
        return None  # another user, another mount namespace, or committed meanwhile: fetch says which
    try:
        return read_segment_slice(folder, name, partition.lo, partition.hi, "the reader process's hand-off file")
    except (FileNotFoundError, PermissionError):
        return None  # another mount namespace, or committed meanwhile: the TCP fetch says which


__all__ = ["InlinePartition", "FetchPartition", "LogPartition", "split_log", "read_partition"]
