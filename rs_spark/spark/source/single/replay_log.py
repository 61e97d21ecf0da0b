"""The replay log: planned micro-batch data as Arrow IPC files on any pyarrow filesystem.

A segment holds the rows of offsets ``[start, end)`` (one planned micro-batch) in a file
named ``<start>-<end>-<rows>.arrow`` (zero-padded, so names sort by offset). It is written to a
temporary name and moved into place, so a reader never sees half a segment. Executors
read slices of segments by row range; ``commit(end)`` deletes segments wholly below ``end``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.ipc as ipc

from ....arrow.validate import MalformedArrow, checked, refuse_compressed
from ...files import make_dirs, open_fs, open_new

log = logging.getLogger("rs_spark.source")

_WIDTH = 20
_SUFFIX = ".arrow"


@dataclasses.dataclass(frozen=True)
class Segment:
    """Offsets ``[start, end)`` stored as ``rows`` rows (fewer when malformed elements were dropped)."""

    start: int
    end: int
    rows: int
    name: str


class ReplayLog:
    """Segments of Arrow IPC files under ``uri`` (a local path or any pyarrow filesystem URI)."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._fs, self._root = open_fs(uri)
        make_dirs(self._fs, self._root)

    def _path(self, name: str) -> str:
        return f"{self._root.rstrip('/')}/{name}"

    def segments(self) -> list[Segment]:
        """Segments in the log, in offset order."""
        infos = self._fs.get_file_info(pafs.FileSelector(self._root, allow_not_found=True))
        out = []
        for info in infos:
            base = info.base_name
            if not base.endswith(_SUFFIX) or base.startswith("."):
                continue
            try:
                a, b, r = base[: -len(_SUFFIX)].split("-")
                out.append(Segment(int(a), int(b), int(r), base))
            except ValueError:
                continue  # not ours
        out.sort(key=lambda seg: seg.start)
        return out

    def end_offset(self) -> int:
        """The offset after the last segment (0 for an empty log)."""
        segs = self.segments()
        return segs[-1].end if segs else 0

    _RECEIVED = "received.json"

    def note_received(self, offset: int) -> None:
        """Record that records up to ``offset`` reached this reader (logged or not yet)."""
        tmp = self._path(f".tmp-{uuid.uuid4().hex}")
        with open_new(self._fs, tmp) as out:
            out.write(json.dumps({"received": int(offset)}).encode())
        self._fs.move(tmp, self._path(self._RECEIVED))

    def received(self) -> int | None:
        """The last offset :meth:`note_received` recorded (None if never)."""
        path = self._path(self._RECEIVED)
        try:
            with self._fs.open_input_stream(path) as f:
                value = json.loads(f.read(64 * 1024).decode())["received"]
        except (OSError, FileNotFoundError, ValueError, KeyError, TypeError):
            return None
        if type(value) is not int or value < 0:  # written by us as a non-negative int: anything else is not ours
            log.warning("replay log: %s holds %r, not a record count; ignoring it", path, value)
            return None
        return value

    def append(self, start: int, end: int, batches: Sequence[pa.RecordBatch], schema: pa.Schema) -> Segment:
        """Durably write ``batches`` as the rows of offsets ``[start, end)``."""
        rows = sum(b.num_rows for b in batches)
        name = f"{start:0{_WIDTH}d}-{end:0{_WIDTH}d}-{rows:0{_WIDTH}d}{_SUFFIX}"
        tmp = self._path(f".tmp-{uuid.uuid4().hex}")
        with open_new(self._fs, tmp) as out:
            with ipc.new_file(out, schema) as writer:
                for b in batches:
                    writer.write_batch(b)
        self._fs.move(tmp, self._path(name))  # atomic on local and HDFS; copy+delete on object stores
        return Segment(start, end, rows, name)

    def covering(self, start: int, end: int) -> list[Segment]:
        """The segments that tile ``[start, end)`` exactly; :class:`MissingData` if any part is absent."""
        pos = start
        out = []
        for seg in self.segments():
            if seg.end <= pos:
                continue
            if seg.start != pos or seg.end > end:
                break
            out.append(seg)
            pos = seg.end
            if pos == end:
                return out
        raise MissingData(start, end, pos, self.uri)

    def truncate_before(self, offset: int) -> int:
        """Delete segments whose offsets are all below ``offset``; return how many were deleted."""
        n = 0
        for seg in self.segments():
            if seg.end <= offset:
                self._fs.delete_file(self._path(seg.name))
                n += 1
        return n


class MissingData(LookupError):
    """Offsets that were planned are not in the log any more (deleted, or never written)."""

    def __init__(self, start: int, end: int, found_until: int, uri: str) -> None:
        super().__init__(
            f"the replay log at {uri} has no data for offsets [{found_until}, {end}) of the micro-batch "
            f"[{start}, {end}): it was deleted, or the log location changed since the batch was planned"
        )
        self.start, self.end, self.found_until = start, end, found_until


def read_segment_slice(
    uri: str, name: str, lo: int, hi: int, what: str = "the replay-log segment"
) -> list[pa.RecordBatch]:
    """Rows ``[lo, hi)`` of one segment (used on executors); ``what`` names the file in errors."""
    fs, root = open_fs(uri)
    path = f"{root.rstrip('/')}/{name}"
    source = f"{what} {path}"
    reader = _open_segment(fs, path, source)
    out: list[pa.RecordBatch] = []
    pos = 0
    for i in range(reader.num_record_batches):
        b = _checked_batch(reader, i, source)
        n = b.num_rows
        if pos + n > lo and pos < hi:
            a = max(lo - pos, 0)
            z = min(hi - pos, n)
            out.append(b.slice(a, z - a))
        pos += n
        if pos >= hi:
            break
    return [b for b in out if b.num_rows]


def _open_segment(fs: pafs.FileSystem, path: str, source: str) -> ipc.RecordBatchFileReader:
    """A segment's reader, after refusing compressed bodies (before anything is decompressed)."""
    try:
        if isinstance(fs, pafs.LocalFileSystem):
            buf = pa.memory_map(path).read_buffer()  # zero-copy: only the pages read are touched
        else:
            with fs.open_input_file(path) as f:
                buf = f.read_buffer()
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError) as exc:
        raise MalformedArrow(source, f"cannot be read ({type(exc).__name__}: {exc})") from exc
    if buf.size < 8 or buf.slice(0, 6).to_pybytes() != b"ARROW1":
        raise MalformedArrow(source, "it is not an Arrow IPC file (no ARROW1 magic)")
    refuse_compressed(buf.slice(8), source)
    try:
        return ipc.open_file(buf)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise MalformedArrow(source, f"not a readable Arrow file ({type(exc).__name__}: {exc})") from exc


def _checked_batch(reader: ipc.RecordBatchFileReader, i: int, source: str) -> pa.RecordBatch:
    """Batch ``i``, validated in full before any row of it is read (files can be tampered with)."""
    try:
        batch = reader.get_batch(i)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise MalformedArrow(source, f"batch {i} cannot be read ({type(exc).__name__}: {exc})") from exc
    return checked(batch, source)


__all__ = ["ReplayLog", "Segment", "MissingData", "read_segment_slice", "open_fs"]
