"""Staging a micro-batch on executors: each task's rows as one Arrow IPC stream, inline in the
commit message up to ``inlineMaxBytes``, beyond that in a private file at ``stagingLocation``."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
from pyspark.sql.datasource import WriterCommitMessage

from ...arrow.validate import iter_stream
from ...delivery import SinkError
from ..files import is_local, make_dirs, open_fs, open_new
from ..options import OptionError
from .options import SinkOptions


@dataclasses.dataclass
class StagedPartition(WriterCommitMessage):
    """One task's output: ``rows`` rows, inline Arrow IPC bytes or a staged file, or (factory
    mode) the rows the task's own Subscriber took."""

    rows: int
    inline: bytes | None = None
    path: str | None = None
    delivered: int = 0


def stage(batches: Iterable[pa.RecordBatch], opts: SinkOptions) -> StagedPartition:
    kept = [b for b in batches if b.num_rows]
    rows = sum(b.num_rows for b in kept)
    if rows == 0:
        return StagedPartition(0)
    # The stream is at least its batches' messages: when they alone exceed inlineMaxBytes it goes straight
    # into the staging file, without first growing (and copying) an in-memory buffer of the whole partition.
    size = sum(ipc.get_record_batch_size(b) for b in kept)
    if size <= opts.inline_max_bytes:
        sink = pa.BufferOutputStream()
        _write(sink, kept)
        buf = sink.getvalue()
        if buf.size <= opts.inline_max_bytes:
            return StagedPartition(rows, inline=buf.to_pybytes())
        size = buf.size
    if not opts.staging_location:
        raise OptionError(
            f"a partition of this micro-batch ({rows} rows) is at least {size} bytes of Arrow, more than option "
            f"inlineMaxBytes={opts.inline_max_bytes} allows inside a commit message; set option stagingLocation (a "
            "directory every executor and the driver can reach: local path in local mode, s3://, hdfs://, ...) or "
            "raise inlineMaxBytes. Nothing of this batch was delivered; restart the query after the fix"
        )
    fs, root = open_fs(opts.staging_location)
    make_dirs(fs, root)
    path = f"{root.rstrip('/')}/part-{uuid.uuid4().hex}.arrow"
    with open_new(fs, path) as f:
        _write(f, kept)
    return StagedPartition(rows, path=path)


def _write(sink: Any, batches: list[pa.RecordBatch]) -> None:
    """``batches`` (at least one) as one Arrow IPC stream into ``sink``."""
    with ipc.new_stream(sink, batches[0].schema) as writer:
        for b in batches:
            writer.write_batch(b)


def read_staged(m: StagedPartition, opts: SinkOptions) -> Iterator[pa.RecordBatch]:
    if m.inline is not None:
        yield from iter_stream(pa.py_buffer(m.inline), f"the inline staged partition ({m.rows} rows)")
    elif m.path is not None:
        yield from iter_stream(_staged_bytes(m.path, m.rows, opts), f"the staged partition {m.path} ({m.rows} rows)")


def _staged_bytes(path: str, rows: int, opts: SinkOptions) -> pa.Buffer:
    """The staged file's bytes: on local disk a memory map (no copy), elsewhere read whole."""
    fs, _ = open_fs(opts.staging_location or "/")
    try:
        if is_local(fs):
            with pa.memory_map(path) as mm:
                return mm.read_buffer()  # the buffer keeps the mapping alive after close
        with fs.open_input_stream(path) as f:
            return f.read_buffer()
    except (OSError, FileNotFoundError) as exc:
        raise SinkError(
            f"staged partition {path} ({rows} rows) cannot be read at commit: {exc}; the "
            "driver must reach option stagingLocation"
        ) from exc


def remove_staged(messages: list[Any], opts: SinkOptions) -> None:
    paths = [m.path for m in messages if isinstance(m, StagedPartition) and m.path]
    if not paths:
        return
    fs, _ = open_fs(opts.staging_location or "/")
    for p in paths:
        try:
            fs.delete_file(p)
        except OSError:
            pass  # already gone: staging is scratch space


__all__ = ["StagedPartition", "stage", "read_staged", "remove_staged"]
