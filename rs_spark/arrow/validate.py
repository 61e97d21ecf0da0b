"""Arrow IPC from outside (a socket, a file, the JVM) is checked before any element reaches user code.

pyarrow decodes what a message declares: string offsets pointing outside their data buffer pass
decoding, and the first ``to_pylist()`` then reads neighbouring memory or crashes the process. So
every decoded batch is validated in full (``RecordBatch.validate(full=True)``: offsets, lengths,
dictionary indices, UTF-8) and any message whose body is compressed is refused *before* it is
decompressed: rs_spark never compresses what it sends, and a 33 KB compressed message can declare
a 1 GiB body. A refusal is a :class:`MalformedArrow` that names where the bytes came from.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from types import ModuleType

import pyarrow as pa
import pyarrow.compute as pc

_np: ModuleType | None
try:  # the fastest byte scan when it is there (pyarrow does not require it)
    import numpy as _np
except ImportError:  # pragma: no cover - numpy comes with pyspark's Arrow support
    _np = None


class MalformedArrow(ValueError):
    """Arrow IPC bytes from ``source`` failed validation; nothing of them reached user code."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(
            f"malformed Arrow IPC from {source}: {problem}; the data was refused (nothing of it was "
            "delivered). Check that the peer or file writes uncompressed Arrow IPC streams of the "
            "agreed schema"
        )
        self.source = source
        self.problem = problem


_RECORD_BATCH, _DICTIONARY_BATCH = 3, 4  # MessageHeader union tags (Message.fbs)


class _Table:
    """Just enough of a flatbuffer table to read one field's presence; every read bounds-checked."""

    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf, self.pos = buf, pos
        vt = pos - self._i32(pos)
        self.vtable, self.vtable_size = vt, self._u16(vt)

    def _read(self, fmt: str, at: int) -> int:
        size = struct.calcsize(fmt)
        if at < 0 or at + size > len(self.buf):
            raise ValueError("a flatbuffer offset points outside the message metadata")
        return int(struct.unpack_from(fmt, self.buf, at)[0])

    def _u16(self, at: int) -> int:
        return self._read("<H", at)

    def _i32(self, at: int) -> int:
        return self._read("<i", at)

    def field(self, index: int) -> int:
        """The field's absolute position, or 0 when absent."""
        entry = 4 + 2 * index
        if entry + 2 > self.vtable_size:
            return 0
        off = self._u16(self.vtable + entry)
        return self.pos + off if off else 0

    def u8(self, index: int) -> int:
        at = self.field(index)
        return self._read("<B", at) if at else 0

    def table(self, index: int) -> _Table | None:
        at = self.field(index)
        return _Table(self.buf, at + self._read("<I", at)) if at else None


def is_compressed(metadata: bytes) -> bool:
    """Whether a message's flatbuffer metadata declares body compression (record or dictionary batch)."""
    message = _Table(metadata, struct.unpack_from("<I", metadata, 0)[0] if len(metadata) >= 4 else -1)
    kind = message.u8(1)  # Message.header_type
    header = message.table(2)  # Message.header
    if header is None or kind not in (_RECORD_BATCH, _DICTIONARY_BATCH):
        return False
    batch = header.table(1) if kind == _DICTIONARY_BATCH else header  # DictionaryBatch.data
    return batch is not None and batch.field(3) != 0  # RecordBatch.compression


def refuse_compressed(data: pa.Buffer, source: str) -> None:
    """Walk the messages of an IPC stream (no body is decoded) and refuse any compressed one."""
    try:
        for i, message in enumerate(pa.ipc.MessageReader.open_stream(data)):
            if is_compressed(message.metadata.to_pybytes()):
                raise MalformedArrow(
                    source,
                    f"message {i} ({message.type}) has a compressed body; rs_spark accepts "
                    "uncompressed Arrow only (a compressed body can expand without bound)",
                )
    except MalformedArrow:
        raise
    except (pa.ArrowException, ValueError, struct.error, OSError, EOFError) as exc:
        raise MalformedArrow(source, f"unreadable message framing ({type(exc).__name__}: {exc})") from exc


def checked(batch: pa.RecordBatch, source: str) -> pa.RecordBatch:
    """``batch`` after full validation (offsets, lengths, dictionary indices, UTF-8)."""
    try:
        _validate_full(batch)
        for field in batch.schema:
            _check_names(field)
    except (pa.ArrowException, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise MalformedArrow(source, f"a record batch failed validation ({exc})") from exc
    return batch


_AS_BINARY = {pa.string(): pa.binary(), pa.large_string(): pa.large_binary()}


def _validate_full(batch: pa.RecordBatch) -> None:
    """``batch.validate(full=True)`` in less time for string columns (see :func:`_column_full`);
    a batch that fails is validated by Arrow again, so the error is Arrow's own."""
    try:
        batch.validate()  # the structure first: column count, types and lengths, buffer sizes
        for column in batch.columns:
            _column_full(column)
    except (pa.ArrowException, ValueError):
        batch.validate(full=True)
        raise


def _column_full(column: pa.Array) -> None:
    """``column.validate(full=True)``: for a string column Arrow checks the offsets (as binary: the
    same check without UTF-8), and UTF-8 holds at once when every byte of the data buffer is
    ASCII; otherwise Arrow checks UTF-8 itself. Arrow's UTF-8 check was most of the time a peer's
    string batches took to receive (about 1.2 ms of 1.5 per 1.8 MB batch here)."""
    binary = _AS_BINARY.get(column.type)
    if binary is None:
        column.validate(full=True)
        return
    column.view(binary).validate(full=True)
    if not _is_ascii(column.buffers()[2]):
        column.validate(full=True)


def _is_ascii(data: pa.Buffer | None) -> bool:
    """Whether every byte of ``data`` is below 0x80 (a vectorised max, no copy)."""
    if data is None or data.size == 0:
        return True
    if _np is not None:
        return int(_np.frombuffer(data, _np.uint8).max()) < 0x80
    top = pc.max(pa.Array.from_buffers(pa.uint8(), data.size, [None, data])).as_py()
    return top is not None and top < 0x80


def _check_names(field: pa.Field) -> None:
    """Field names, nested ones too, must be UTF-8: reading one raises otherwise (fuzzing found it)."""
    field.name  # noqa: B018 - the attribute read is the check
    for i in range(field.type.num_fields):
        _check_names(field.type.field(i))


def read_stream(data: pa.Buffer | bytes, source: str) -> list[pa.RecordBatch]:
    """Every batch of one IPC stream, refused if compressed or invalid (see the module docstring)."""
    return list(iter_stream(data, source))


def iter_stream(data: pa.Buffer | bytes, source: str) -> Iterator[pa.RecordBatch]:
    buf = data if isinstance(data, pa.Buffer) else pa.py_buffer(data)
    try:
        batches = _decode_uncompressed(buf, source)
    except MalformedArrow:
        raise
    except (pa.ArrowException, ValueError, struct.error, OSError, EOFError) as exc:
        raise MalformedArrow(source, f"the stream cannot be decoded ({type(exc).__name__}: {exc})") from exc
    for b in batches:
        yield checked(b, source)


def _decode_uncompressed(buf: pa.Buffer, source: str) -> list[pa.RecordBatch]:
    """One pass over the messages: each batch's metadata is checked for compression before its
    body is decoded. Streams with dictionaries take Arrow's stream reader after the check."""
    messages = list(pa.ipc.MessageReader.open_stream(buf))
    if not messages or messages[0].type != "schema":
        raise MalformedArrow(source, "the stream does not begin with a schema message")
    for i, m in enumerate(messages[1:], 1):
        if m.type != "schema" and is_compressed(m.metadata.to_pybytes()):
            raise MalformedArrow(
                source,
                f"message {i} ({m.type}) has a compressed body; rs_spark accepts "
                "uncompressed Arrow only (a compressed body can expand without bound)",
            )
    if any(m.type != "record batch" for m in messages[1:]):
        return list(pa.ipc.open_stream(buf))  # dictionary batches: Arrow's reader keeps the memo
    schema = pa.ipc.read_schema(messages[0])
    return [pa.ipc.read_record_batch(m, schema) for m in messages[1:]]


__all__ = ["MalformedArrow", "checked", "is_compressed", "read_stream", "iter_stream", "refuse_compressed"]
