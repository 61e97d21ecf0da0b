"""Publisher factories of event-time rows for the update-mode sink tests (tests/spark/test_sink_update.py).

``events``: the rows of :data:`EVENTS` as ``(t, key)`` tuples, ``t`` in seconds; replayable (``subscribe_at``),
so a query restarted from its checkpoint goes on where Spark committed and reads nothing new after the end.
Read four rows per micro-batch (``maxRecordsPerTrigger`` 4), they make the five batches below; the comments
say what a 10-second window count with a 5-second watermark makes of them."""

from __future__ import annotations

from rs_spark import streams as rs

SCHEMA = "t LONG, key STRING"

EVENTS = [
    # batch 0: window [0,10) a=3, b=1; the watermark stays 0 (max 4 - 5 s)
    (1, "a"), (2, "a"), (3, "b"), (4, "a"),
    # batch 1: [0,10) a=4, b=2; [10,20) a=1, b=1; watermark 8 (max 13)
    (12, "a"), (5, "a"), (13, "b"), (6, "b"),
    # batch 2: [0,10) b=3 (9 is late but its window still open); [10,20) a=2; [20,30) a=1, b=1; watermark 21
    (25, "a"), (9, "b"), (14, "a"), (26, "b"),
    # batch 3: Spark drops rows late for the watermark of the batch before (8 s): 8 and 15 still count,
    # [0,10) a=5, [10,20) b=2; [20,30) a=2; [40,50) a=1; at its end [0,10) and [10,20) are evicted (21 s)
    (8, "a"), (15, "b"), (27, "a"), (40, "a"),
    # batch 4: 7 and 16 are late for closed windows (dropped, against 21 s); [20,30) b=2; [40,50) a=2
    (7, "a"), (16, "b"), (28, "b"), (45, "a"),
]  # fmt: skip


def events(options):
    return rs.from_iterable(list(EVENTS))


def keys(options):
    """``publisher.count`` rows ``(t, key)``: ``t`` = i, ``key`` = ``k<i>`` (every row its own group)."""
    n = int(options.get("count", 100))
    return rs.from_iterable([(i, f"k{i}") for i in range(n)])
