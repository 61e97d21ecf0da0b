"""Planned micro-batches handed to executors on the reader's host as private files
(rs_spark/spark/source/handoff.py), called as Spark's reader process and executors call the reader,
without Spark."""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest
from pyspark.sql.streaming.datasource import ReadMaxRows
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from rs_spark.arrow.validate import MalformedArrow
from rs_spark.spark.source.options import SourceOptions
from rs_spark.spark.source.single import handoff
from rs_spark.spark.source.single.handoff import LocalHandoff
from rs_spark.spark.source.single.partitions import FetchPartition, read_partition
from rs_spark.spark.source.single.reader import ReactiveStreamReader

ROWS = 1000
SCHEMA = StructType(
    [StructField("id", LongType()), StructField("name", StringType()), StructField("price", DoubleType())]
)


def _reader(transport: str = "fetch") -> ReactiveStreamReader:
    opts = SourceOptions.parse(
        {
            "publisher": "tests.spark.publishers:arrow_batches",
            "publisher.batches": "4",
            "publisher.rows": str(ROWS),
            "batchTransport": transport,
            "pollTimeout": "10s",
        }
    )
    return ReactiveStreamReader(opts, SCHEMA)


def _latest(reader: ReactiveStreamReader, start: dict) -> dict:
    """latestOffset off the main thread (the reader installs its SIGTERM handler only there)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(reader.latestOffset, start, ReadMaxRows(ROWS)).result(60)


def _ids(batches) -> list[int]:
    return [i for b in batches for i in b.column("id").to_pylist()]


def test_executor_on_the_reader_host_reads_the_private_file_not_the_socket():
    reader = _reader()
    try:
        start = reader.initialOffset()
        end = _latest(reader, start)
        (part,) = reader.partitions(start, end)
        assert isinstance(part, FetchPartition) and part.local is not None
        folder, name = part.local
        path = os.path.join(folder, name)
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        reader._live.planned.server().close()  # the rows can only come from the file now
        assert _ids(read_partition(part)) == list(range(ROWS))
        reader.commit(end)
        assert not os.path.exists(path)  # committed: the file is gone
    finally:
        reader.stop()
    assert not os.path.exists(folder)


def test_a_missing_file_falls_back_to_the_tcp_fetch():
    reader = _reader()
    try:
        start = reader.initialOffset()
        end = _latest(reader, start)
        (part,) = reader.partitions(start, end)
        os.unlink(os.path.join(*part.local))
        assert _ids(read_partition(part)) == list(range(ROWS))  # fetched from the reader process
    finally:
        reader.stop()


def test_the_next_batch_is_requested_once_spark_has_the_offset_not_inside_latest_offset():
    """A publisher building elements in the reader process would otherwise hold its interpreter
    while Spark's reportLatestOffset call, right after latestOffset, waits for it."""
    reader = _reader()
    try:
        start = reader.initialOffset()
        end = _latest(reader, start)
        requested = reader._live.intake.stats().requested
        reader.reportLatestOffset()
        assert reader._live.intake.stats().requested == requested + 1
        reader.partitions(start, end)  # asked once only
        assert reader._live.intake.stats().requested == requested + 1
    finally:
        reader.stop()


def test_without_report_the_next_batch_is_requested_at_partitions():
    reader = _reader()
    try:
        start = reader.initialOffset()
        end = _latest(reader, start)
        requested = reader._live.intake.stats().requested
        reader.partitions(start, end)
        assert reader._live.intake.stats().requested == requested + 1
    finally:
        reader.stop()


def test_a_tampered_file_is_refused_before_any_row():
    reader = _reader()
    try:
        start = reader.initialOffset()
        end = _latest(reader, start)
        (part,) = reader.partitions(start, end)
        path = os.path.join(*part.local)
        os.unlink(path)  # the reader's memory map keeps its rows; the executor finds new bytes
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, b"ARROW1\0\0" + b"\xff" * 64)
        os.close(fd)
        with pytest.raises(MalformedArrow, match="hand-off file"):
            list(read_partition(part))
    finally:
        reader.stop()


def test_files_are_created_exclusively_and_an_existing_one_is_never_overwritten(tmp_path, monkeypatch):
    monkeypatch.setattr(handoff, "_base_dir", lambda: str(tmp_path))
    h = LocalHandoff()
    batch = pa.RecordBatch.from_pydict({"x": [1, 2, 3]})
    table = h.put(0, [batch], batch.schema)
    assert table is not None and table.column("x").to_pylist() == [1, 2, 3]
    planted = os.path.join(h.folder, h.name(5))
    with open(planted, "wb") as f:
        f.write(b"theirs")
    assert h.put(5, [batch], batch.schema) is None  # the caller keeps the rows in memory instead
    with open(planted, "rb") as f:
        assert f.read() == b"theirs"
    h.close()
    assert not os.listdir(tmp_path)


def test_folders_of_dead_reader_processes_are_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(handoff, "_base_dir", lambda: str(tmp_path))
    dead = tmp_path / "rs-spark-batches-999999999-abc"  # no such pid
    alive = tmp_path / f"rs-spark-batches-{os.getppid()}-abc"
    other = tmp_path / "someone-elses"
    for d in (dead, alive, other):
        d.mkdir()
    h = LocalHandoff()
    batch = pa.RecordBatch.from_pydict({"x": [1]})
    assert h.put(0, [batch], batch.schema) is not None
    assert not dead.exists() and alive.exists() and other.exists()
    h.close()
