"""The source's offsets in Spark's checkpoint (rs_spark/spark/source/offsets.py): typed and versioned,
today's unversioned checkpoints (tests/fixtures/offsets_v0) read on, a newer or unknown one refused
at start, a checkpoint moved between one endpoint and several never abandoning the kept rows
silently; loss found by executors following failOnDataLoss; and acknowledgements upstream never
ahead of Spark's durable commit (docs/guarantees.md, "Acknowledgements")."""

from __future__ import annotations

import json
import os
import shutil
import threading

import pytest
from pyspark.errors import StreamingQueryException

from rs_spark import streams as rs
from rs_spark.net import serve
from rs_spark.spark.source import offsets
from rs_spark.spark.source.offsets import OffsetError, PartitionedOffset, StreamOffset
from tests.spark.queries import wait_for_rows
from tests.waits import wait_until

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "offsets_v0")
TOKEN = "offsets-test-token"
SCHEMA = "p STRING, id LONG"
KEY = "0123456789abcdef0123456789abcdef"


def _error_text(exc: BaseException) -> str:
    return f"{exc}\n{getattr(exc, 'desc', '')}\n{getattr(exc, 'stackTrace', '')}"


def _source_offset(path: str) -> dict:
    """The source's offset in one of Spark's offsets/N files (version line, metadata, one per source)."""
    with open(path, encoding="utf-8") as f:
        return json.loads(f.read().splitlines()[2])


def _batches(ckpt: str, log: str) -> list[int]:
    folder = os.path.join(ckpt, log)
    return sorted(int(n) for n in os.listdir(folder) if n.isdigit()) if os.path.isdir(folder) else []


# -- the classes ---------------------------------------------------------------------------------
def test_offsets_have_one_json_and_one_parse_and_carry_their_version():
    one = StreamOffset(300, KEY, 120)
    assert one.json() == {"v": offsets.VERSION, "offset": 300, "stream": KEY, "position": 120}
    assert StreamOffset.parse(one.json()) == one and offsets.parse(one.json()) == one
    assert StreamOffset.parse(StreamOffset(7).json()) == StreamOffset(7)
    parts = PartitionedOffset({"eu": 5, "us": 0}, {"eu": KEY, "us": KEY[::-1]})
    assert parts.json() == {
        "v": offsets.VERSION,
        "positions": {"eu": 5, "us": 0},
        "streams": {"eu": KEY, "us": KEY[::-1]},
    }
    assert PartitionedOffset.parse(parts.json()) == parts and offsets.parse(parts.json()) == parts


def test_version_0_offsets_written_by_the_earlier_release_are_read():
    """Every offset in the committed checkpoints (written before offsets had a version) parses."""
    single = [_source_offset(os.path.join(FIXTURES, "single-replayable", "offsets", str(n))) for n in range(3)]
    assert [StreamOffset.parse(d) for d in single] == [StreamOffset(n, None, n) for n in (100, 200, 300)]
    last = _source_offset(os.path.join(FIXTURES, "partitioned", "offsets", "3"))
    assert "v" not in last
    o = PartitionedOffset.parse(last)
    assert o.positions == {"a": 200, "b": 100} and set(o.streams) == {"a", "b"}


def test_an_offset_of_a_newer_version_is_refused_saying_what_to_do():
    with pytest.raises(
        OffsetError,
        match=r"has version 2, written by a newer rs_spark; this release reads offset "
        r"versions 0 to 1\. Run the query with that rs_spark release or a newer one, or start it "
        r"with a new checkpointLocation",
    ):
        StreamOffset.parse({"v": 2, "offset": 5})


@pytest.mark.parametrize(
    ("offset", "why"),
    [
        ({"offset": -1}, "has offset -1, not a count >= 0"),
        ({"offset": "5"}, "has offset '5', not a count >= 0"),
        ({"offset": 5, "stream": KEY}, "names a stream but no position in it"),
        ({"offset": 5, "partition": "eu"}, "has fields partition that a one-reader offset does not have"),
        ({"positions": {"a": 1}, "streams": {}}, "has positions without a stream for partitions a"),
        ({"positions": [1]}, "positions or streams that are not objects"),
        ({"v": "one", "offset": 1}, "has version 'one', not a whole number"),
        ({"records": 5}, "is not an offset of format\\('reactive'\\)"),
    ],
)
def test_an_offset_of_the_wrong_shape_is_refused_saying_what_to_do(offset, why):
    with pytest.raises(OffsetError, match=why) as ei:
        offsets.parse(offset)
    assert "new checkpointLocation" in str(ei.value)


# -- queries ---------------------------------------------------------------------------------------
def _endless(name: str):
    return rs.range_(10**9).pipe(rs.map(lambda i: {"p": name, "id": i}))


class _Sink:
    """foreachBatch that keeps each batch's (p, id) rows by batch id (a re-run batch replaces its rows)."""

    def __init__(self) -> None:
        self.batches: dict[int, list[tuple[str, int]]] = {}
        self.runs: dict[int, int] = {}
        self._lock = threading.Lock()

    def __call__(self, df, batch_id: int) -> None:
        rows = [(r.p, r.id) for r in df.collect()]
        with self._lock:
            self.batches[batch_id] = rows
            self.runs[batch_id] = self.runs.get(batch_id, 0) + 1

    def ids(self, p: str) -> list[int]:
        return [i for b in sorted(self.batches) for q, i in self.batches[b] if q == p]


def _start(spark, ckpt: str, endpoint: str, sink: _Sink, **options):
    r = spark.readStream.format("reactive").schema(SCHEMA).option("endpoint", endpoint).option("token", TOKEN)
    for k, v in {"maxRecordsPerTrigger": 100, "pollTimeout": "200ms", **options}.items():
        r = r.option(k, str(v))
    w = r.load().writeStream.foreachBatch(sink).option("checkpointLocation", ckpt)
    return w.trigger(processingTime="100 milliseconds").start()


def _fails(q) -> str:
    with pytest.raises(StreamingQueryException) as ei:
        q.awaitTermination(180)
    return _error_text(ei.value)


def _assert_in_order_once(ids: list[int]) -> None:
    assert ids == list(range(len(ids))), "every row once, in order, across the restarts"


@pytest.mark.timeout(300)
def test_a_query_restarted_from_a_version_0_checkpoint_reads_on_from_its_position(spark, tmp_path):
    """A checkpoint written by the earlier release (batch 2, [200, 300), planned, not committed):
    the new code replays that batch and reads on, every row once."""
    ckpt = str(tmp_path / "ckpt")
    shutil.copytree(os.path.join(FIXTURES, "single-replayable"), ckpt)
    got: dict[int, list[int]] = {}
    df = (
        spark.readStream.format("reactive")
        .schema("id LONG, name STRING, price DOUBLE")
        .option("publisher", "tests.spark.publishers:replayable")
        .option("publisher.count", "1000")
        .option("maxRecordsPerTrigger", "100")
        .option("pollTimeout", "200ms")
        .load()
    )
    q = df.writeStream.foreachBatch(lambda b, i: got.__setitem__(i, [r.id for r in b.collect()]))
    q = q.option("checkpointLocation", ckpt).trigger(availableNow=True).start()
    q.awaitTermination(180)
    assert q.exception() is None
    assert got[2] == list(range(200, 300)), "the planned batch is replayed from the version 0 position"
    assert [i for b in sorted(got) for i in got[b]] == list(range(200, 1000))
    assert json.loads(q.lastProgress["sources"][0]["endOffset"])["v"] == offsets.VERSION


@pytest.mark.timeout(300)
def test_a_version_0_partitioned_checkpoint_resumes_the_streams_and_positions_it_names(spark, tmp_path):
    """The fixture's endpoints are gone: the restarted query asks new ones for the streams and
    positions the version 0 offset names, and (failOnDataLoss) fails naming them."""
    ckpt = str(tmp_path / "ckpt")
    shutil.copytree(os.path.join(FIXTURES, "partitioned"), ckpt)
    last = PartitionedOffset.parse(_source_offset(os.path.join(ckpt, "offsets", "3")))
    a, b = serve(_endless("a"), name="a", token=TOKEN), serve(_endless("b"), name="b", token=TOKEN)
    try:
        text = _fails(_start(spark, ckpt, f"{a.address},{b.address}", _Sink()))
    finally:
        a.stop()
        b.stop()
    assert any(f"cannot resume stream {last.streams[p]} at position {last.positions[p]}" in text for p in "ab")
    assert "failOnDataLoss=false" in text


@pytest.mark.timeout(300)
def test_an_offset_of_a_newer_version_in_the_checkpoint_fails_the_query_at_start(spark, tmp_path):
    ckpt = str(tmp_path / "ckpt")
    shutil.copytree(os.path.join(FIXTURES, "single-replayable"), ckpt)
    path = os.path.join(ckpt, "offsets", "2")
    os.unlink(os.path.join(ckpt, "offsets", ".2.crc"))  # the file is edited below
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    lines[2] = json.dumps({"v": 9, **json.loads(lines[2])})
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    df = (
        spark.readStream.format("reactive")
        .schema("id LONG, name STRING, price DOUBLE")
        .option("publisher", "tests.spark.publishers:replayable")
        .load()
    )
    q = df.writeStream.foreachBatch(lambda b, i: None).option("checkpointLocation", ckpt).start()
    text = _fails(q)
    assert "has version 9, written by a newer rs_spark" in text and "new checkpointLocation" in text


@pytest.mark.timeout(400)
def test_a_checkpoint_of_one_endpoint_moved_to_several_is_refused_at_start_and_the_fix_reads_on(spark, tmp_path):
    ckpt, sink = str(tmp_path / "ckpt"), _Sink()
    a, b = serve(_endless("a"), name="a", token=TOKEN), serve(_endless("b"), name="b", token=TOKEN)
    try:
        q = _start(spark, ckpt, a.address, sink)  # one endpoint: one reader process
        wait_for_rows(q, batches=2, rows=200)
        q.stop()
        read = len(sink.ids("a"))
        text = _fails(_start(spark, ckpt, f"{a.address},{b.address}", sink))
        assert "checkpoint was written reading one endpoint through the reader process" in text
        assert "Keep this query on that endpoint alone with executorFetch=false" in text
        assert "new checkpointLocation" in text and "failOnDataLoss=false" in text
        q = _start(spark, ckpt, a.address, sink)  # the fix: reads on from the checkpoint
        wait_until(lambda: len(sink.ids("a")) >= read + 300, "300 more rows of endpoint a", 120)
        q.stop()
    finally:
        a.stop()
        b.stop()
    _assert_in_order_once(sink.ids("a"))
    assert not sink.ids("b")


@pytest.mark.timeout(400)
def test_a_checkpoint_of_several_partitions_moved_to_one_reader_is_refused_and_executor_fetch_carries_it(
    spark, tmp_path
):
    ckpt, sink = str(tmp_path / "ckpt"), _Sink()
    a, b = serve(_endless("a"), name="a", token=TOKEN), serve(_endless("b"), name="b", token=TOKEN)
    try:
        q = _start(spark, ckpt, f"{a.address},{b.address}", sink)  # partitions a and b, fetched by executors
        wait_for_rows(q, batches=2, rows=200)
        q.stop()
        read = len(sink.ids("a"))
        text = _fails(_start(spark, ckpt, a.address, sink, executorFetch="false"))
        assert "checkpoint was written reading partitions (a at position" in text
        assert "Set option executorFetch=true" in text and "failOnDataLoss=false" in text
        # Endpoint a alone, read by executors: its partition carries over (b, no longer named, is
        # reported as data loss: failOnDataLoss=false lets the query go on without it).
        q = _start(spark, ckpt, f"a={a.address}", sink, executorFetch="true", failOnDataLoss="false")
        wait_until(lambda: len(sink.ids("a")) >= read + 300, "300 more rows of partition a", 120)
        q.stop()
    finally:
        a.stop()
        b.stop()
    _assert_in_order_once(sink.ids("a"))
    _assert_in_order_once(sink.ids("b"))


# -- loss found by executors -----------------------------------------------------------------------
def _stop_with_a_planned_batch(q, ckpt: str) -> int:
    """Stop ``q``; leave its last planned batch uncommitted (as a driver that died between Spark's
    offset log and commit log); returns that batch's id."""
    q.stop()
    planned = _batches(ckpt, "offsets")[-1]
    for name in (str(planned), f".{planned}.crc"):
        path = os.path.join(ckpt, "commits", name)
        if os.path.exists(path):
            os.unlink(path)
    return planned


@pytest.mark.timeout(400)
@pytest.mark.parametrize("fail", [True, False])
def test_rows_an_endpoint_no_longer_keeps_found_by_executors_follow_fail_on_data_loss(spark, tmp_path, fail):
    ckpt, sink = str(tmp_path / "ckpt"), _Sink()
    a, b = serve(_endless("a"), name="a", token=TOKEN), serve(_endless("b"), name="b", token=TOKEN)
    a2 = None
    try:
        q = _start(spark, ckpt, f"{a.address},{b.address}", sink)
        wait_for_rows(q, batches=2, rows=200)
        planned = _stop_with_a_planned_batch(q, ckpt)
        start = PartitionedOffset.parse(_source_offset(os.path.join(ckpt, "offsets", str(planned - 1))))
        end = PartitionedOffset.parse(_source_offset(os.path.join(ckpt, "offsets", str(planned))))
        a.stop()  # partition a's endpoint is gone with the rows it kept; a new one knows nothing of them
        a2 = serve(_endless("a"), name="a", token=TOKEN)
        q = _start(spark, ckpt, f"{a2.address},{b.address}", sink, failOnDataLoss=str(fail).lower())
        if fail:
            text = _fails(q)
            assert "partition 'a' (" in text and f"no longer keeps positions [{start.positions['a']}, " in text
            assert "Set failOnDataLoss=false to skip these" in text
            return
        wait_until(lambda: sink.runs.get(planned, 0) and planned + 2 in sink.batches, "the re-run and 2 more", 120)
        q.stop()
    finally:
        for s in (a2, b):
            if s is not None:
                s.stop()
    # failOnDataLoss=false: the re-run batch has b's rows only (a's were skipped, as Kafka's executors
    # skip what the broker no longer has) and the query went on.
    rerun = sink.batches[planned]
    assert sorted(i for p, i in rerun if p == "b") == list(range(start.positions["b"], end.positions["b"]))
    assert [i for p, i in rerun if p == "a"] == []
    _assert_in_order_once(sink.ids("b"))


# -- acknowledgements ------------------------------------------------------------------------------
def _durable_position(ckpt: str) -> int:
    """The endpoint position of the last batch whose commit is on disk in Spark's checkpoint."""
    committed = _batches(ckpt, "commits")
    if not committed:
        return 0
    o = StreamOffset.parse(_source_offset(os.path.join(ckpt, "offsets", str(committed[-1]))))
    return o.position or 0


@pytest.mark.timeout(300)
def test_with_async_progress_tracking_the_endpoint_frees_only_rows_spark_committed_durably(spark, tmp_path):
    """asyncProgressTrackingEnabled: Spark writes its offset and commit logs in the background (to
    disk every asyncProgressTrackingCheckpointIntervalMs) and asks for the next batch before the
    last one's commit is durable. The endpoint's acknowledged position never passes the position of
    the last batch whose commit is on disk."""
    ckpt = str(tmp_path / "ckpt")
    server = serve(_endless("a"), name="a", token=TOKEN)
    df = (
        spark.readStream.format("reactive")
        .schema(SCHEMA)
        .option("endpoint", server.address)
        .option("token", TOKEN)
        .option("maxRecordsPerTrigger", "50")
        .option("pollTimeout", "100ms")
        .load()
    )
    q = (
        df.writeStream.format("memory")
        .queryName("offsets_async")
        .option("checkpointLocation", ckpt)
        .option("asyncProgressTrackingEnabled", "true")
        .option("asyncProgressTrackingCheckpointIntervalMs", "2000")
        .trigger(processingTime="50 milliseconds")
        .start()
    )
    seen: list[tuple[int, int]] = []

    def check() -> bool:
        assert q.isActive, q.exception()
        streams = server.stats().streams
        acked = streams[0].acked_position if streams else 0
        durable = _durable_position(ckpt)  # read after: the commit log only grows
        assert acked <= durable, f"the endpoint freed rows up to {acked}; Spark's commit log holds {durable}"
        seen.append((acked, durable))
        return len({a for a, _ in seen if a > 0}) >= 3  # three acknowledgements, each checked

    try:
        wait_until(check, lambda: f"three acknowledgements (seen {sorted(set(seen))[-5:]})", 180, interval=0.02)
    finally:
        q.stop()
        server.stop()
    rows = [r.id for r in spark.sql("select id from offsets_async order by id").collect()]
    assert rows[:1000] == list(range(min(1000, len(rows))))


@pytest.mark.timeout(400)
def test_a_restart_after_a_planned_but_uncommitted_batch_reads_its_rows_from_the_endpoint(spark, tmp_path):
    """The driver stopped after Spark logged a batch's offsets but before its commit (its commits/N
    deleted if it got there): the endpoint still keeps that batch's rows (acknowledgements follow
    Spark's commit of the batch before it, never the batch itself), and the restarted query runs the
    batch again with exactly those rows."""
    ckpt, sink = str(tmp_path / "ckpt"), _Sink()
    server = serve(_endless("a"), name="a", token=TOKEN)
    try:
        q = _start(spark, ckpt, server.address, sink)
        wait_for_rows(q, batches=3, rows=300)
        planned = _stop_with_a_planned_batch(q, ckpt)
        first = list(sink.batches.get(planned, []))
        start = StreamOffset.parse(_source_offset(os.path.join(ckpt, "offsets", str(planned - 1))))
        end = StreamOffset.parse(_source_offset(os.path.join(ckpt, "offsets", str(planned))))
        assert start.position is not None and end.position is not None
        assert server.stats().streams[0].acked_position <= start.position
        q = _start(spark, ckpt, server.address, sink)
        wait_until(lambda: planned + 2 in sink.batches, "the planned batch again and 2 more", 120)
        q.stop()
    finally:
        server.stop()
    assert sink.batches[planned] == [("a", i) for i in range(start.position, end.position)]
    assert not first or first == sink.batches[planned], "the re-run batch has the same rows"
    _assert_in_order_once(sink.ids("a"))


def test_an_idle_reader_plans_one_empty_batch_so_spark_commits_the_last_one():
    """Spark calls commit only once it plans another batch: with nothing to plan while the rows
    before ``start`` are not acknowledged, the offset names no new rows but counts a release, so
    Spark plans an empty batch and commits the last one (an endpoint at its retention bound could
    otherwise wait for that forever)."""
    o = StreamOffset(800, KEY, 800, release=1)
    assert o.json()["release"] == 1 and StreamOffset.parse(o.json()) == o
    assert "release" not in StreamOffset(800, KEY, 800).json()
    p = PartitionedOffset({"a": 5}, {"a": KEY}, release=2)
    assert PartitionedOffset.parse(p.json()) == p
