"""The delivery hub takes the real-time sink's open-ended epochs (no Spark: channels over loopback,
tagged as rsspark.rt.ReactiveSinkWriter tags them): an epoch run again goes further than before;
several partitions are delivered side by side, each in order, each with its own ledger line."""

from __future__ import annotations

import json
import threading

import pyarrow as pa

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.delivery import serve_sink
from rs_spark.delivery.wire import META_OPEN, META_PARTITION, tag_batch
from tests.subscribers import Recorder


def open_ended(epoch: int, start: int, lo: int, hi: int, partition: int = 0) -> pa.RecordBatch:
    """Rows ``lo..hi-1`` of ``partition`` as the real-time sink sends them: ``start`` is the first row's
    index in the epoch and the total is only what was sent so far."""
    b = pa.record_batch({"id": pa.array(range(lo, hi), pa.int64())})
    b = tag_batch(b, epoch, start, start + b.num_rows)
    meta = {**(b.schema.metadata or {}), META_OPEN: b"1", META_PARTITION: str(partition).encode()}
    return b.replace_schema_metadata(meta)


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


def _epoch(partition: int, epoch: int, first: int, rows: int, base: int) -> list[pa.RecordBatch]:
    """``rows`` rows of ``partition``'s epoch from its row ``first``, ten per payload; ids ``base + row``."""
    return [
        open_ended(epoch, i, base + i, base + min(i + 10, first + rows), partition)
        for i in range(first, first + rows, 10)
    ]


def test_two_partitions_are_delivered_side_by_side_each_in_order_and_each_replays_on_its_own(tmp_path):
    ledger = str(tmp_path / "ledger.json")
    rec = Recorder()
    ep = serve_sink(rec, ledger=ledger)
    acks: dict[int, dict] = {}
    try:
        # Both partitions' tasks of epoch 0 stream at once, as real-time tasks do.
        threads = [
            threading.Thread(target=lambda p=p: acks.__setitem__(p, send(ep.address, _epoch(p, 0, 0, 100, p * 1000))))
            for p in (0, 1)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert all(acks[p]["status"] == "delivered" and acks[p]["delivered"] == 100 for p in (0, 1)), acks
        ids = [r["id"] for r in rec.items]
        assert [i for i in ids if i < 1000] == list(range(100))  # order kept within each partition
        assert [i for i in ids if i >= 1000] == list(range(1000, 1100))
        saved = json.loads(open(ledger).read())
        assert (saved["batch_id"], saved["rows"]) == (0, 100)  # partition 0 where it always was
        assert saved["partitions"] == {"1": {"batch_id": 0, "rows": 100, "total": 100}}
    finally:
        ep.stop()
    # A restarted hub: partition 1's epoch 0 runs again from its start and goes further; partition 0
    # moves on to epoch 1. Each partition's ledger line decides what it skips.
    again = Recorder()
    ep = serve_sink(again, ledger=ledger)
    try:
        assert send(ep.address, _epoch(1, 0, 0, 130, 1000))["delivered"] == 130
        assert send(ep.address, _epoch(0, 1, 0, 20, 100))["delivered"] == 20
        assert [r["id"] for r in again.items] == list(range(1100, 1130)) + list(range(100, 120))
    finally:
        ep.stop()


def test_a_ledger_written_before_partitions_is_read_as_partition_0(tmp_path):
    ledger = tmp_path / "ledger.json"
    ledger.write_text(json.dumps({"batch_id": 3, "rows": 5, "total": 5}))
    rec = Recorder()
    ep = serve_sink(rec, ledger=str(ledger))
    try:
        assert send(ep.address, _epoch(0, 3, 0, 8, 0))["delivered"] == 8
        assert [r["id"] for r in rec.items] == [5, 6, 7]
    finally:
        ep.stop()
