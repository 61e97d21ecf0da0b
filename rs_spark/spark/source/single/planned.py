"""The micro-batches the single reader planned, kept replayable until Spark commits them: replay-log
segments, or the reader process's memory (and a private file or the batch server for executors)."""

from __future__ import annotations

import pyarrow as pa

from ..options import SourceOptions
from .batch_fetch import BatchServer
from .bind_address import batch_server_binds
from .handoff import LocalHandoff
from .replay_log import ReplayLog

# batchTransport=auto: partitions up to this size travel inside Spark's tasks; larger ones are
# fetched by executors from the reader process (through the JVM costs ~25 ms per MB).
INLINE_MAX_BYTES = 1 << 20


def inline_max_bytes(opts: SourceOptions) -> int:
    """The largest micro-batch that travels inside Spark's tasks with batchTransport=auto."""
    return INLINE_MAX_BYTES * opts.num_partitions


class Batch:
    """A micro-batch held in memory: its end offset and rows."""

    __slots__ = ("end", "table")

    def __init__(self, end: int, table: pa.Table) -> None:
        self.end = end
        self.table = table


class Planned:
    """Planned micro-batches by start offset: in the replay log (option ``logPath``) or in memory."""

    def __init__(self, opts: SourceOptions, schema: pa.Schema) -> None:
        self._opts = opts
        self.schema = schema
        self.log = ReplayLog(opts.log_path) if opts.log_path else None
        self.memory: dict[int, Batch] = {}
        self.handoff = LocalHandoff()
        self._server: BatchServer | None = None
        self.row_bytes = 0  # Arrow bytes of the rows planned here: every row passes through this process

    def end_of(self, start: int) -> int | None:
        """The end of a micro-batch planned from ``start`` (before a restart, if any)."""
        if self.log is not None:
            return next((seg.end for seg in self.log.segments() if seg.start == start), None)
        p = self.memory.get(start)
        return p.end if p else None

    def store(self, start: int, end: int, batches: list[pa.RecordBatch]) -> None:
        """Make ``[start, end)`` replayable before its offset is returned."""
        batches = [b for b in batches if b.num_rows]
        self.row_bytes += sum(b.nbytes for b in batches)
        if self.log is not None:
            self.log.append(start, end, batches, self.schema)
            return
        table = self.handoff.put(start, batches, self.schema) if self._hand_off(batches) else None
        if table is None:
            table = pa.Table.from_batches(batches, schema=self.schema)
        self.memory[start] = Batch(end, table)

    def _hand_off(self, batches: list[pa.RecordBatch]) -> bool:
        """Whether executors will fetch these rows (batchTransport, size): then they go to a private file."""
        t = self._opts.batch_transport
        return t == "fetch" or (t == "auto" and sum(b.nbytes for b in batches) > inline_max_bytes(self._opts))

    def local_file(self, start: int) -> tuple[str, str] | None:
        """(folder, name) of the private file holding the micro-batch planned at ``start``, if any."""
        return self.handoff.file_of(start)

    def committed(self, end: int) -> None:
        """Spark committed every micro-batch before ``end``: free their rows, files and log segments."""
        if self.log is not None:
            self.log.truncate_before(end)
        for k in [k for k, p in self.memory.items() if p.end <= end]:
            self.memory.pop(k, None)
            self.handoff.drop(k)

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

    def close(self) -> None:
        self.handoff.close()


__all__ = ["Batch", "INLINE_MAX_BYTES", "Planned", "inline_max_bytes"]
