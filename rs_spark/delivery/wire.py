"""The commit channel's wire format: record batches tagged with their micro-batch, and the answer.

A commit sends each staged record batch with schema metadata naming its micro-batch (``batch_id``),
the micro-batch's row where the record batch starts, and the micro-batch's total rows. The hub
answers with one ``ACK_SCHEMA`` row: ``delivered``, ``duplicate`` or ``incomplete``.

The real-time sink (the shim's ``rsspark.rt.ReactiveSinkWriter``) streams an epoch's rows while Spark
still produces them, so it cannot know the total: its record batches say ``open_ended`` and carry as
total the rows sent so far (the batch's own end).
"""

from __future__ import annotations

import pyarrow as pa

from .errors import SinkError

META_BATCH = b"rs_spark.batch_id"
META_START = b"rs_spark.start_row"
META_TOTAL = b"rs_spark.batch_rows"
META_OPEN = b"rs_spark.open_ended"
META_PARTITION = b"rs_spark.partition"
"""The real-time sink's Spark partition (absent: 0); each partition is delivered in order, side by side."""
ACK_SCHEMA = pa.schema(
    [("status", pa.string()), ("batch_id", pa.int64()), ("rows", pa.int64()), ("delivered", pa.int64())]
)


def batch_meta(batch: pa.RecordBatch) -> tuple[int, int, int]:
    md = batch.schema.metadata or {}
    try:
        return int(md[META_BATCH]), int(md[META_START]), int(md[META_TOTAL])
    except (KeyError, ValueError):
        raise SinkError(
            "a record batch reached the sink hub without rs_spark batch metadata; only the "
            "reactive sink's commit may write to this endpoint"
        ) from None


def is_open_ended(batch: pa.RecordBatch) -> bool:
    """Whether ``batch`` belongs to an epoch whose total is not known yet (the real-time sink's)."""
    return (batch.schema.metadata or {}).get(META_OPEN) == b"1"


def partition_of(batch: pa.RecordBatch) -> int:
    """The partition ``batch`` belongs to (0 without the tag, as micro-batch commits send it)."""
    raw = (batch.schema.metadata or {}).get(META_PARTITION)
    try:
        p = 0 if raw is None else int(raw)
    except ValueError:
        p = -1
    if p < 0:
        raise SinkError(f"a record batch reached the sink hub tagged with partition {raw!r}, not a number >= 0")
    return p


def tag_batch(batch: pa.RecordBatch, batch_id: int, start: int, total: int) -> pa.RecordBatch:
    md = dict(batch.schema.metadata or {})
    md.update({META_BATCH: str(batch_id).encode(), META_START: str(start).encode(), META_TOTAL: str(total).encode()})
    return batch.replace_schema_metadata(md)


def ack_batch(status: str, batch_id: int, rows: int, delivered: int) -> pa.RecordBatch:
    """The hub's answer to one commit."""
    return pa.record_batch(
        [
            pa.array([status]),
            pa.array([batch_id], pa.int64()),
            pa.array([rows], pa.int64()),
            pa.array([delivered], pa.int64()),
        ],
        schema=ACK_SCHEMA,
    )


__all__ = [
    "META_BATCH",
    "META_START",
    "META_TOTAL",
    "META_OPEN",
    "META_PARTITION",
    "ACK_SCHEMA",
    "batch_meta",
    "is_open_ended",
    "partition_of",
    "tag_batch",
    "ack_batch",
]
