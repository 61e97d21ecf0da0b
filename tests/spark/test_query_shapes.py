"""Query shapes over ``format("reactive")`` that must keep holding, with real Spark (issue 52's held-out checks):
a union of two reactive sources in one query, that union restarted from one checkpoint (nothing delivered twice,
nothing added by a run with nothing new), a stream-static join, and ``foreachBatch`` over the source. Complete
mode into a Subscriber is in tests/spark/test_sink_update.py.

The sources are the replayable publishers of tests/spark/event_publishers.py: ``events`` (20 rows) and ``keys``
(here 12 rows), ten rows of each per micro-batch in the union (two batches: 20 and 12 rows)."""

from __future__ import annotations

from collections import Counter

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

import rs_spark

from ..subscribers import Recorder
from .event_publishers import EVENTS
from .test_sink_update import AVAILABLE_NOW, events, run

KEYS = [(i, f"k{i}") for i in range(12)]
UNION = Counter([("events", t, k) for t, k in EVENTS] + [("keys", t, k) for t, k in KEYS])


def union(spark):
    """Both sources in one query, each row tagged with the one it came from."""
    a = events(spark, "events", per_batch=10).withColumn("src", F.lit("events"))
    b = events(spark, "keys", per_batch=10, **{"publisher.count": 12}).withColumn("src", F.lit("keys"))
    return a.unionByName(b)


def rows(rec):
    return Counter((r["src"], r["t"], r["key"]) for r in rec.items)


def start_union(spark, rec, ck, ledger=None):
    return rs_spark.write_stream(union(spark), rec, checkpoint=ck, ledger=ledger, trigger=AVAILABLE_NOW)


def test_a_union_of_two_reactive_sources_delivers_every_row_once_and_a_restart_adds_nothing(spark, tmp_path):
    ck = str(tmp_path / "ck")
    rec = Recorder()
    q = run(start_union(spark, rec, ck))
    assert rec.wait_done(30).completed and rec.error is None
    assert rows(rec) == UNION
    assert rec.batch_ids == [0] * 20 + [1] * 12
    assert [p["numInputRows"] for p in q.recentProgress] == [20, 12]

    again = Recorder()  # from the same checkpoint: both sources are at their end
    q = run(start_union(spark, again, ck))
    assert again.wait_done(30).completed and again.items == []
    assert sum(p["numInputRows"] for p in q.recentProgress) == 0


def test_the_union_restarted_after_failing_mid_batch_delivers_nothing_twice(spark, tmp_path):
    """The first Subscriber raises at element 24, the fifth row of micro-batch 1: the query fails there. Run again
    from the same checkpoint and ledger with a new Subscriber, Spark reads batch 1 again (both sources replay from
    its offsets) and the hub resumes it after the rows the first one took."""
    ck, ledger = str(tmp_path / "ck"), str(tmp_path / "ledger.json")
    first = Recorder(raise_at=24)
    with pytest.raises(StreamingQueryException, match="subscriber refuses element 24 in on_next at micro-batch 1"):
        start_union(spark, first, ck, ledger).awaitTermination(120)
    assert len(first.items) == 24 and not first.completed

    second = Recorder()
    run(start_union(spark, second, ck, ledger))
    assert second.wait_done(30).completed and second.error is None
    assert set(second.batch_ids) == {1} and len(second.items) == 8
    assert rows(first) + rows(second) == UNION  # every row once, across both runs


def test_a_stream_static_join_labels_every_row_once(spark, tmp_path):
    labels = spark.createDataFrame([("a", "alpha"), ("b", "beta")], "key STRING, label STRING")
    joined = events(spark, per_batch=20).join(labels, "key")
    rec = Recorder()
    run(rs_spark.write_stream(joined, rec, checkpoint=str(tmp_path / "ck"), trigger=AVAILABLE_NOW))
    assert rec.wait_done(30).completed
    got = Counter((r["t"], r["key"], r["label"]) for r in rec.items)
    assert got == Counter((t, k, {"a": "alpha", "b": "beta"}[k]) for t, k in EVENTS)


def test_foreach_batch_over_the_source_sees_each_micro_batch_once_in_order(spark, tmp_path):
    seen: list[tuple[int, list]] = []

    def each(batch_df, batch_id):
        seen.append((batch_id, [(r.t, r.key) for r in batch_df.collect()]))

    q = events(spark, per_batch=10).writeStream.foreachBatch(each).option("checkpointLocation", str(tmp_path / "ck"))
    run(q.trigger(availableNow=True).start())
    assert [b for b, _ in seen] == [0, 1]
    assert [sorted(r) for _, r in seen] == [sorted(EVENTS[:10]), sorted(EVENTS[10:])]
