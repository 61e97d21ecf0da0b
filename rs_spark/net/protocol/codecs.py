"""Payload codecs: one element <-> one payload's data, chosen by the connection's data MIME type.

``json``, ``text`` and ``bytes`` carry one element per payload, so REQUEST_N counts payloads
as any RSocket peer expects. ``arrow`` carries one ``pyarrow.RecordBatch`` per payload as a
self-contained Arrow IPC stream (schema, batch, end-of-stream) and REQUEST_N counts *rows*:
a payload of k rows uses k credits. See :mod:`rs_spark.net` for why that keeps rule 1.1.
"""

from __future__ import annotations

import json
from typing import Any

from .frames import Buffer

ARROW_MIME = "application/vnd.apache.arrow.stream"
MIMES = {"json": "application/json", "text": "text/plain", "bytes": "application/octet-stream", "arrow": ARROW_MIME}
_BY_MIME = {v: k for k, v in MIMES.items()}
_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"
_PEER = "an rs_spark.net peer's payload"


class EncodeError(TypeError):
    """An element the stream's codec cannot encode."""


class Codec:
    """One element per payload; demand counts payloads."""

    name = "bytes"
    counts_rows = False

    @property
    def mime(self) -> str:
        return MIMES[self.name]

    def encode(self, item: Any) -> list[Buffer]:
        if isinstance(item, (bytes, bytearray, memoryview)):
            return [item]
        raise EncodeError(f"codec 'bytes' sends bytes-like elements, got {type(item).__name__}")

    def decode(self, data: Buffer) -> Any:
        return bytes(data)

    def count(self, item: Any) -> int:
        return 1


class JsonNumber(float):
    """A JSON number with a fraction or an exponent, as codec ``json`` decodes it: a ``float`` that
    keeps the number's text (``text``), so a reader can take it exactly (rs_spark's source does for a
    DECIMAL column: ``12345678901234567890.123456789012345678`` loses no digit). It compares,
    computes, prints and encodes as the float it is."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, text: str) -> JsonNumber:
        number = super().__new__(cls, text)
        number.text = text
        return number

    def __reduce__(self) -> tuple[Any, ...]:
        return (JsonNumber, (self.text,))


class JsonCodec(Codec):
    """One JSON text per payload (UTF-8). A number with a fraction or an exponent decodes as a
    :class:`JsonNumber`, an integer as an ``int``."""

    name = "json"

    def encode(self, item: Any) -> list[Buffer]:
        try:
            return [json.dumps(item, separators=(",", ":"), ensure_ascii=False).encode("utf-8")]
        except (TypeError, ValueError) as exc:
            raise EncodeError(f"codec 'json' cannot encode a {type(item).__name__}: {exc}") from None

    def decode(self, data: Buffer) -> Any:
        return json.loads(bytes(data), parse_float=JsonNumber)


class TextCodec(Codec):
    name = "text"

    def encode(self, item: Any) -> list[Buffer]:
        if isinstance(item, str):
            return [item.encode("utf-8")]
        raise EncodeError(f"codec 'text' sends str elements, got {type(item).__name__}")

    def decode(self, data: Buffer) -> Any:
        return bytes(data).decode("utf-8")


class ArrowCodec(Codec):
    """Record batches as Arrow IPC streams; a payload of k rows counts as k elements."""

    name = "arrow"
    counts_rows = True

    def __init__(self) -> None:
        import pyarrow as pa  # only streams that use Arrow need pyarrow

        from ...arrow import validate

        self._pa = pa
        self._validate = validate
        self._schema: Any = None
        self._schema_bytes: Any = None
        self._has_dicts = False
        self._in_schema: Any = None
        self._in_schema_bytes: Any = None

    def encode(self, item: Any) -> list[Buffer]:
        pa = self._pa
        if not isinstance(item, pa.RecordBatch):
            raise EncodeError(f"codec 'arrow' sends pyarrow.RecordBatch elements, got {type(item).__name__}")
        if self._schema is None or not item.schema.equals(self._schema, check_metadata=True):
            self._schema = item.schema
            self._schema_bytes = item.schema.serialize()  # cached: the schema rarely changes mid-stream
            self._has_dicts = _has_dictionaries(item.schema)
        if self._has_dicts:  # dictionary batches must precede the record batch: the general writer
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, item.schema) as w:
                w.write_batch(item)
            return [sink.getvalue()]
        return [self._schema_bytes, item.serialize(), _EOS]

    def decode(self, data: Buffer) -> Any:
        # Zero-copy: the batch's columns point into ``data``. A payload is schema + batch + EOS;
        # the schema message is parsed once and reused while its bytes repeat (they do per stream).
        # Bytes from a peer are hostile until validated: compressed bodies are refused before they
        # are decompressed, and every batch is validated in full before it reaches user code.
        pa, v = self._pa, self._validate
        buf = data if isinstance(data, pa.Buffer) else pa.py_buffer(data)
        try:
            batch = self._decode_fast(buf)
        except v.MalformedArrow:
            raise
        except (pa.lib.ArrowException, OSError, EOFError, ValueError, TypeError, KeyError, IndexError):
            # Anything unusual (dictionaries, several batches, other writers): the general reader.
            batches = v.read_stream(buf, _PEER)
            if len(batches) != 1:
                raise v.MalformedArrow(_PEER, f"a payload carries {len(batches)} record batches, not one") from None
            return batches[0]
        return v.checked(batch, _PEER)

    def _decode_fast(self, buf: Any) -> Any:
        pa, v = self._pa, self._validate
        reader = pa.BufferReader(buf)
        msg = pa.ipc.read_message(reader)
        if msg.type != "schema":
            raise ValueError(f"the payload starts with an Arrow {msg.type} message, not a schema")
        end = reader.tell()
        head = buf.slice(0, end)
        if self._in_schema_bytes is None or not head.equals(self._in_schema_bytes):
            self._in_schema = pa.ipc.read_schema(head)
            self._in_schema_bytes = head
        body = pa.ipc.read_message(reader)
        if v.is_compressed(body.metadata.to_pybytes()):
            raise v.MalformedArrow(
                _PEER,
                "the record batch has a compressed body; rs_spark accepts uncompressed "
                "Arrow only (a compressed body can expand without bound)",
            )
        return pa.ipc.read_record_batch(body, self._in_schema)

    def count(self, item: Any) -> int:
        return int(item.num_rows)

    def pieces(self, item: Any) -> list[Any]:
        """A RecordBatch or Table as non-empty record batches (empty ones carry nothing: dropped)."""
        pa = self._pa
        if isinstance(item, pa.Table):
            return [b for b in item.to_batches() if b.num_rows]
        if isinstance(item, pa.RecordBatch):
            return [item] if item.num_rows else []
        raise EncodeError(f"codec 'arrow' sends pyarrow.RecordBatch or Table elements, got {type(item).__name__}")

    @staticmethod
    def split(batch: Any, rows: int) -> tuple[Any, Any | None]:
        """The first ``rows`` rows and the rest (zero-copy slices)."""
        if rows >= batch.num_rows:
            return batch, None
        return batch.slice(0, rows), batch.slice(rows)

    @staticmethod
    def rows_for_bytes(batch: Any, max_bytes: int) -> int:
        """Rows per payload so a payload stays under ``max_bytes`` (estimated from ``nbytes``)."""
        limit = max_bytes * 0.8
        if batch.get_total_buffer_size() <= limit:  # an upper bound of nbytes, 10x cheaper
            return int(batch.num_rows)
        nb = batch.nbytes
        if nb <= limit:
            return int(batch.num_rows)
        return max(1, int(batch.num_rows * (max_bytes * 0.8) / nb))


def _has_dictionaries(schema: Any) -> bool:
    import pyarrow as pa

    def walk(t: Any) -> bool:
        if pa.types.is_dictionary(t):
            return True
        return any(walk(t.field(i).type) for i in range(getattr(t, "num_fields", 0)))

    return any(walk(f.type) for f in schema)


def make_codec(name_or_mime: str) -> Codec:
    """A fresh codec (codecs keep per-stream state) by short name or MIME type."""
    name = _BY_MIME.get(name_or_mime, name_or_mime)
    if name == "json":
        return JsonCodec()
    if name == "text":
        return TextCodec()
    if name == "bytes":
        return Codec()
    if name == "arrow":
        return ArrowCodec()
    raise ValueError(
        f"unknown codec {name_or_mime!r}: use one of {sorted(MIMES)} (MIME types {sorted(MIMES.values())})"
    )


__all__ = [
    "Codec",
    "JsonCodec",
    "JsonNumber",
    "TextCodec",
    "ArrowCodec",
    "EncodeError",
    "make_codec",
    "MIMES",
    "ARROW_MIME",
]
