"""Arrow IPC stream bytes <-> record batches: the one encoding rs_spark ships batches in."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from .validate import read_stream


def to_ipc(batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> bytes:
    """Serialize ``batches`` (all of ``schema``) as one Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        for b in batches:
            writer.write_batch(b)
    return sink.getvalue().to_pybytes()


def from_ipc(data: bytes | pa.Buffer, source: str = "an Arrow IPC stream") -> list[pa.RecordBatch]:
    """Every batch of one Arrow IPC stream, validated (see :mod:`rs_spark.arrow.validate`)."""
    return read_stream(pa.py_buffer(data) if isinstance(data, (bytes, bytearray, memoryview)) else data, source)


__all__ = ["to_ipc", "from_ipc"]
