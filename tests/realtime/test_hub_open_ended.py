"""The delivery hub takes the real-time sink's open-ended epochs (no Spark: channels over loopback,
tagged as rsspark.rt.ReactiveSinkWriter tags them): an epoch run again goes further than before."""

from __future__ import annotations

import pyarrow as pa

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.delivery import serve_sink
from rs_spark.delivery.wire import META_OPEN, tag_batch
from tests.subscribers import Recorder


def open_ended(epoch: int, start: int, lo: int, hi: int) -> pa.RecordBatch:
    """Rows ``lo..hi-1`` as the real-time sink sends them: ``start`` is the first row's index in the
    epoch and the total is only what was sent so far."""
    b = pa.record_batch({"id": pa.array(range(lo, hi), pa.int64())})
    b = tag_batch(b, epoch, start, start + b.num_rows)
    return b.replace_schema_metadata({**(b.schema.metadata or {}), META_OPEN: b"1"})


def send(address: str, batches: list[pa.RecordBatch]) -> dict:
    proc = net.connect_processor(address, codec="arrow")
    rs.from_iterable(batches).subscribe(proc)
    return rs.to_list(proc, timeout=20)[0].to_pylist()[0]


def test_an_epoch_run_again_skips_the_rows_delivered_and_delivers_the_rows_beyond():
    rec = Recorder()
    ep = serve_sink(rec)
    try:
        ack = send(ep.address, [open_ended(0, 0, 0, 3), open_ended(0, 3, 3, 5)])
        assert ack["status"] == "delivered" and ack["rows"] == 5 and ack["delivered"] == 5
        # The batch's task is retried (or the query restarted): the same rows from the batch's start,
        # and this time more of them, since a real-time batch ends by time, not by count.
        ack = send(ep.address, [open_ended(0, 0, 0, 4), open_ended(0, 4, 4, 9)])
        assert ack["status"] == "delivered" and ack["rows"] == 9 and ack["delivered"] == 9
        ack = send(ep.address, [open_ended(1, 0, 9, 12)])
        assert ack["status"] == "delivered"
        assert [r["id"] for r in rec.items] == list(range(12))
    finally:
        ep.stop()


def test_a_closed_micro_batch_run_again_is_still_a_duplicate():
    """Micro-batch commits keep their meaning: a whole batch delivered before is not delivered again."""
    rec = Recorder()
    ep = serve_sink(rec)
    try:
        tagged = tag_batch(pa.record_batch({"id": pa.array(range(4), pa.int64())}), 0, 0, 4)
        assert send(ep.address, [tagged])["status"] == "delivered"
        assert send(ep.address, [tagged])["status"] == "duplicate"
        assert [r["id"] for r in rec.items] == list(range(4))
    finally:
        ep.stop()
