"""Every trigger x mode of format("reactive") in a real Spark session (the planner's table, for real).

Modes: a served endpoint (rs_spark.read_stream), a factory in the reader process (the sensor feed,
replayable), several endpoints as partitions read by executors, a JVM publisher (jvmPublisher) and
a publisher that cannot replay with a replay log (logPath). Triggers: default, processingTime,
availableNow, once. Publishers: finite (every row once; AvailableNow and Once end) and endless and
busy (AvailableNow ends with its target's rows; the others keep reading).

Then the cases a user pays for when they go wrong: minRecordsPerTrigger at an endpoint's retention
bound (never stalls), and an idle query (one release micro-batch, then none).
"""

from __future__ import annotations

import json
import uuid

import pytest

import rs_spark
from rs_spark import streams as rs
from rs_spark.net import Retention
from rs_spark.spark.served import served

from ..waits import wait_until
from .queries import wait_for_rows

FINITE = 600  # rows of a finite publisher (per partition with several)
MAX = 250  # maxRecordsPerTrigger
BUFFERED = 1000  # maxBufferedRecords
RUN = 1500  # availableNowMaxRecords: bounds an AvailableNow run against a publisher that never falls short
ENDLESS = 10**12

TRIGGERS = {
    "default": None,
    "processingTime": {"processingTime": "100 milliseconds"},
    "availableNow": {"availableNow": True},
    "once": {"once": True},
}
MODES = ["endpoint", "factory", "partitions", "jvm", "log"]
# pollTimeout: how long an ask waits for what it asked; AvailableNow takes a shortfall within it as the
# publisher's live edge, so it is long enough here that a loaded machine never cuts a finite publisher.
LIMITS = {
    "maxRecordsPerTrigger": MAX,
    "maxBufferedRecords": BUFFERED,
    "availableNowMaxRecords": RUN,
    "pollTimeout": "5s",
}


def _numbered(n: int, column: str = "id"):
    return rs.range_(n).pipe(rs.map(lambda i: {column: i}))


def _reader(spark, mode: str, finite: bool, tmp_path):
    """The streaming DataFrame of ``mode``, with one LONG column ``id`` (and ``p`` for partitions)."""
    n = FINITE if finite else ENDLESS
    if mode == "endpoint":
        return rs_spark.read_stream(spark, _numbered(n), schema="id LONG", options=LIMITS)
    if mode == "partitions":
        pubs = {p: _numbered(n).pipe(rs.map(lambda r, p=p: {"p": p, **r})) for p in ("a", "b")}
        return rs_spark.read_stream(spark, pubs, schema="p STRING, id LONG", options=LIMITS)
    r = spark.readStream.format("reactive")
    opts: dict[str, object] = dict(LIMITS)
    if mode == "factory":  # the sensor feed: replayable, on its own clock (10,000 records/s: busy), buffering
        # 500,000 records (50 s of it) for a consumer that falls behind: none is dropped during a test
        r = r.schema("sensor STRING, ts TIMESTAMP, temperature DOUBLE, seq LONG")
        opts.update({"publisher": "rs_spark.examples.sensors:readings", "publisher.rate": 10_000})
        if finite:
            opts["publisher.total"] = n
    elif mode == "jvm":
        from tests.jvm.conftest import FIXTURES

        r = r.schema("id LONG")
        opts.update({"jvmPublisher": "rsspark.fixtures.Feeds#longs", "jvmJars": FIXTURES, "publisher.count": n})
    else:  # a publisher that cannot replay, made exactly-once by the replay log
        r = r.schema("id LONG")
        opts.update({"publisher": "tests.spark.publishers:numbers", "publisher.count": n, "logPath": str(tmp_path)})
    for k, v in opts.items():
        r = r.option(k, str(v))
    df = r.load()
    return df.withColumnRenamed("seq", "id") if mode == "factory" else df


@pytest.fixture(scope="module")
def jvm_jars():
    from tests.jvm.conftest import build

    build()


def _start(df, trigger: dict | None):
    name = "t_" + uuid.uuid4().hex[:8]
    w = df.writeStream.format("memory").queryName(name)
    if trigger:
        w = w.trigger(**trigger)
    return w.start(), name


def _ids(spark, name: str, mode: str) -> dict[str, list[int]]:
    """The ids the memory sink holds, per partition ("" with one publisher), in arrival order."""
    cols = "p, id" if mode == "partitions" else "'' as p, id"
    got: dict[str, list[int]] = {}
    for r in spark.sql(f"select {cols} from {name}").collect():
        got.setdefault(r.p, []).append(r.id)
    return got


def _source(progress: dict, key: str):
    v = progress["sources"][0][key]
    return json.loads(v) if isinstance(v, str) else v


def _target_rows(q) -> int:
    """Rows from the first offset to AvailableNow's target, as the source reported it."""
    reported = [_source(p, "latestOffset") for p in q.recentProgress]
    targets = [m["availableNowTarget"] for m in reported if m and "availableNowTarget" in m]
    assert targets, "the source reported no AvailableNow target"
    t = targets[-1]
    return sum(t.values()) if isinstance(t, dict) else t


def _check_once_each(got: dict[str, list[int]]) -> None:
    for ids in got.values():
        assert sorted(ids) == list(range(len(ids))), "a row arrived twice, or one is missing"


@pytest.mark.timeout(180)
@pytest.mark.parametrize("trigger", list(TRIGGERS))
@pytest.mark.parametrize("mode", MODES)
def test_a_finite_publisher_gives_every_row_once_under_every_trigger(spark, jvm_jars, tmp_path, mode, trigger):
    q, name = _start(_reader(spark, mode, True, tmp_path), TRIGGERS[trigger])
    parts = 2 if mode == "partitions" else 1
    try:
        if trigger in ("availableNow", "once"):
            assert q.awaitTermination(150), f"{trigger} did not end"
            assert q.exception() is None
        else:
            wait_for_rows(q, rows=FINITE * parts, timeout=150)
        got = _ids(spark, name, mode)
        batches = [p for p in q.recentProgress if p["numInputRows"]]
    finally:
        q.stop()
    _check_once_each(got)
    total = sum(map(len, got.values()))
    if trigger == "once":
        # One micro-batch: a new endpoint stream's first one only records the stream's key.
        assert total == 0 if mode in ("endpoint", "partitions") else 0 < total <= FINITE
        return
    assert total == FINITE * parts
    if trigger != "once":
        assert all(p["numInputRows"] <= MAX for p in batches)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("trigger", list(TRIGGERS))
@pytest.mark.parametrize("mode", MODES)
def test_an_endless_busy_publisher_ends_available_now_at_its_target_and_the_others_keep_reading(
    spark, jvm_jars, tmp_path, mode, trigger
):
    q, name = _start(_reader(spark, mode, False, tmp_path), TRIGGERS[trigger])
    try:
        if trigger in ("availableNow", "once"):
            assert q.awaitTermination(150), f"{trigger} did not end against an endless publisher"
            assert q.exception() is None
            first = q.recentProgress[0]
        else:
            wait_for_rows(q, batches=4, rows=3 * MAX, timeout=150)
            assert q.isActive
        got = _ids(spark, name, mode)
        target = _target_rows(q) if trigger == "availableNow" else None
        sizes = [p["numInputRows"] for p in q.recentProgress]
    finally:
        q.stop()
    _check_once_each(got)
    total = sum(map(len, got.values()))
    if trigger == "once":  # one micro-batch, with what the reader held: maxRecordsPerTrigger does not apply
        assert len(sizes) == 1 and sizes[0] == total
        if mode in ("endpoint", "partitions"):  # a new endpoint stream's first micro-batch records its key
            assert total == 0 and "stream" in json.dumps(_source(first, "endOffset"))
        else:
            assert 0 < total <= BUFFERED
        return
    # The publisher always has more than maxRecordsPerTrigger: every micro-batch is bounded by it.
    assert max(sizes) <= MAX, f"a micro-batch read more than maxRecordsPerTrigger={MAX}: {sizes}"
    if trigger == "availableNow":
        assert total == target == RUN * (2 if mode == "partitions" else 1)  # it never fell short: the bound
        if mode in ("endpoint", "partitions"):  # the stream's key was recorded before any row was asked for
            assert first["numInputRows"] == 0 and "stream" in json.dumps(_source(first, "endOffset"))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["endpoint", "partitions"])
def test_once_on_an_endless_endpoint_records_its_stream_then_reads_a_batch_run_again(spark, tmp_path, mode):
    """An endpoint stream's first micro-batch only records the stream's key in the checkpoint: Once
    from a new checkpoint reads no row. Run again from that checkpoint, Once reads its batch: what the
    reader held, beyond maxRecordsPerTrigger if it held more (Once reads all available)."""
    df = _reader(spark, mode, False, tmp_path)
    got: list = []

    def once() -> list[int]:
        q = (
            df.writeStream.foreachBatch(lambda batch, _: got.extend(batch.collect()))
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(once=True)
            .start()
        )
        try:
            assert q.awaitTermination(150), "Once did not end against an endless publisher"
            assert q.exception() is None
            return [p["numInputRows"] for p in q.recentProgress]
        finally:
            q.stop()

    assert once() == [0] and got == [], "the first Once records the stream's key only"
    (rows,) = once()
    assert 0 < rows <= BUFFERED * (2 if mode == "partitions" else 1) and len(got) == rows
    per: dict[str, list[int]] = {}
    for r in got:
        per.setdefault(r.p if mode == "partitions" else "", []).append(r.id)
    _check_once_each(per)


@pytest.mark.timeout(180)
def test_min_records_per_trigger_never_stalls_at_an_endpoints_retention_bound(spark):
    """The endpoint keeps at most 200 rows until Spark commits; 300 are wanted per micro-batch. After
    maxTriggerDelay the 200 make a batch, then an empty one lets Spark commit it, the endpoint goes on."""
    df = rs_spark.read_stream(
        spark,
        _numbered(1000),
        schema="id LONG",
        retention=Retention(max_records=200),
        options={"minRecordsPerTrigger": 300, "maxTriggerDelay": "1s", "pollTimeout": "100ms"},
    )
    q, name = _start(df, {"processingTime": "200 milliseconds"})
    try:
        wait_for_rows(q, rows=1000, timeout=150)
        got = _ids(spark, name, "endpoint")[""]
    finally:
        q.stop()
    assert sorted(got) == list(range(1000)) and len(got) == 1000


def _some_then_silent():
    def emit(emitter):  # 300 rows, then silence: the publisher lives on, idle
        for i in range(300):
            emitter.next({"id": i})

    return rs.create(emit, buffer_size=300)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", ["endpoint", "partitions"])
def test_an_idle_query_runs_one_release_micro_batch_then_none(spark, mode):
    """Once every row is read, one empty micro-batch lets Spark commit the last one (the endpoint
    hears it and frees the rows); then the query idles without planning another."""
    pub = _some_then_silent() if mode == "endpoint" else {"a": _some_then_silent(), "b": _some_then_silent()}
    df = rs_spark.read_stream(spark, pub, schema="id LONG", options={"pollTimeout": "100ms"})
    server = served()[-1]
    streams = 1 if mode == "endpoint" else 2
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "50ms")  # idle triggers report progress
    try:
        q, _ = _start(df, {"processingTime": "50 milliseconds"})
        try:
            wait_for_rows(q, rows=300 * streams, timeout=150)
            wait_until(
                lambda: [s.acked_position for s in server.stats().streams] == [300] * streams,
                "the endpoint to hear position 300 of every stream",
            )
            last = max(p["batchId"] for p in q.recentProgress)
            wait_until(lambda: _idle_reports_after(q, last) >= 10, "ten idle triggers after the acknowledgement")
            progress = list(q.recentProgress)
        finally:
            q.stop()
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
    with_rows = [p["batchId"] for p in progress if p["numInputRows"]]
    runs = sorted({p["batchId"] for p in progress if "addBatch" in p.get("durationMs", {})})
    empty_after = [b for b in runs if b > max(with_rows)]
    assert len(empty_after) == 1, f"micro-batches after the last rows: {empty_after}"


def _idle_reports_after(q, batch_id: int) -> int:
    return sum(1 for p in q.recentProgress if p["batchId"] >= batch_id and not p["numInputRows"])
