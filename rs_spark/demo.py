"""The demo pipeline: a bursty sensor Publisher -> Spark (windowed average) -> a slow Subscriber.

Backpressure made visible at both ends. The source asks the publisher for at most
``--max-records-per-trigger`` records per micro-batch, so bursts wait in the publisher's bounded
buffer and drain over the following batches instead of flooding Spark. The sink is a deliberately
slow Subscriber (a "dashboard" taking ``--subscriber-ms`` per row, requesting 8 rows at a time):
each commit waits for its demand, so micro-batches get longer and the source's next request gets
bigger. A one-line live display shows rows/s, demand outstanding, buffered elements, batch time
and rows delivered; at the end a summary table and a PNG chart of demand and delivered elements
per micro-batch (``--chart``; needs matplotlib, the ``demo`` extra).

It runs the exactly-once configuration: a checkpoint and a replay log (option ``logPath``) in a
temporary folder, removed at the end. It runs until it has something to show (``--batches``
micro-batches and ``--deliveries`` window averages delivered) or for ``--seconds`` at most, then
stops the query at the end of a micro-batch (:mod:`rs_spark.examples.stopping`), so Spark has
nothing to abort. Spark's log goes through a log4j2 configuration at ``--spark-log-level``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from typing import Any


def _metrics(progress: dict[str, Any]) -> dict[str, Any]:
    lo = progress["sources"][0].get("latestOffset") or "{}"
    return json.loads(lo) if isinstance(lo, str) else dict(lo)


class SlowDashboard:
    """A Subscriber that takes ``delay`` seconds per row and requests ``chunk`` rows at a time."""

    def __init__(self, delay: float, chunk: int = 8) -> None:
        self.delay, self.chunk = delay, chunk
        self.delivered = 0
        self.latest: dict[Any, dict[str, Any]] = {}
        self.done = threading.Event()
        self.error: BaseException | None = None
        self._left = 0

    def on_subscribe(self, s: Any) -> None:
        self.s = s
        self._left = self.chunk
        s.request(self.chunk)

    def on_next(self, row: dict[str, Any]) -> None:
        time.sleep(self.delay)  # "rendering": the slow part
        self.latest[(row["window"]["start"], row["sensor"])] = row
        self.delivered += 1
        self._left -= 1
        if self._left == 0:
            self._left = self.chunk
            self.s.request(self.chunk)

    def on_error(self, e: BaseException) -> None:
        self.error = e
        self.done.set()

    def on_complete(self) -> None:
        self.done.set()


def run_demo(args: Any) -> int:
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="rs-demo-")  # checkpoint, replay log, log4j2 configuration
    try:
        spark = _session(args, work)
        try:
            return _run(spark, args, work, started)
        finally:
            spark.stop()
    finally:  # also on Ctrl-C: leave nothing behind in the temp directory
        shutil.rmtree(work, ignore_errors=True)


def _session(args: Any, work: str) -> Any:
    """A local SparkSession logging at ``--spark-log-level`` from its JVM's start (so the start-up
    messages that ``setLogLevel`` would come too late for are quiet too)."""
    from .examples.spark_log import quiet_conf
    from .spark import local_session

    print(f"starting Spark ({args.master}); its log: {args.spark_log_level} and above", flush=True)
    # One shuffle partition: 8 sensors' windows need no more, and each partition costs the first
    # micro-batch a Python worker (the sink's write()) and a state store.
    conf = {**quiet_conf(work, args.spark_log_level), "spark.sql.shuffle.partitions": "1"}
    return local_session("rs_spark-demo", master=args.master, **conf)


def _start(spark: Any, args: Any, work: str) -> tuple[Any, SlowDashboard, Any]:
    """Start the query: the sensor feed (or ``--endpoint``) -> windowed averages -> the dashboard."""
    from pyspark.sql import functions as F

    from .examples.sensors import SCHEMA
    from .examples.stopping import Brake
    from .spark.sink.write_stream import write_stream

    reader = (
        spark.readStream.format("reactive")
        .schema(SCHEMA)
        .option("maxRecordsPerTrigger", args.max_records_per_trigger)
        .option("pollTimeout", "200ms")
        .option("logPath", os.path.join(work, "replay-log"))  # exactly once across restarts
    )
    if args.endpoint:
        reader = reader.option("endpoint", args.endpoint)
    else:
        reader = (
            reader.option("publisher", args.publisher)
            .option("publisher.rate", args.rate)
            .option("publisher.burst", args.burst)
            # The feed's records follow from its options; pinning the origin to now gives
            # timestamps near now, the same in every process that builds the feed.
            .option("publisher.origin", datetime.now(UTC).isoformat())
        )
    # Append mode (Spark's Python sinks support append and complete, not update): a window is
    # delivered once, when the watermark passes its end.
    averages = (
        reader.load()
        .withWatermark("ts", "2 seconds")
        .groupBy(F.window("ts", "1 second"), "sensor")
        .agg(F.count("*").alias("n"), F.round(F.avg("temperature"), 2).alias("avg_temp"))
    )
    dashboard = SlowDashboard(args.subscriber_ms / 1000.0)
    brake = Brake(dashboard)  # lets the demo stop the query at the end of a micro-batch
    query = write_stream(
        averages,
        brake,
        checkpoint=os.path.join(work, "checkpoint"),
        trigger={"processingTime": args.trigger},
        output_mode="append",
    )
    return query, dashboard, brake


def _row(p: dict[str, Any], dashboard: SlowDashboard, hub: Any) -> dict[str, Any]:
    m = _metrics(p)
    return {
        "batch": p["batchId"],
        "rows": p["numInputRows"],
        "rows_per_s": p.get("processedRowsPerSecond") or 0.0,
        "outstanding": m.get("outstandingDemand", 0),
        "buffered": m.get("bufferedElements", 0),
        "received": m.get("receivedElements", 0),
        "ms": p["durationMs"].get("triggerExecution", 0),
        "delivered": dashboard.delivered,
        "sink_demand": hub.outstanding,
    }


def _show(row: dict[str, Any]) -> None:
    sys.stdout.write(
        f"\rbatch {row['batch']:>4}  rows {row['rows']:>6}  "
        f"{row['rows_per_s']:>8,.0f} rows/s  "
        f"demand outstanding {row['outstanding']:>6}  buffered {row['buffered']:>6}  "
        f"batch {row['ms']:>5} ms  delivered {row['delivered']:>6}   "
    )
    sys.stdout.flush()


class _Watch:
    """The live display, until the demo has something to show or reaches its time cap."""

    def __init__(self, query: Any, dashboard: SlowDashboard, args: Any, started: float) -> None:
        from .spark.sink.state import sink_state

        self.query, self.dashboard, self.args, self.started = query, dashboard, args, started
        self.hub = sink_state(query).hub  # the delivery hub: demand outstanding, buffered, delivered
        self.rows: list[dict[str, Any]] = []
        self.first_batch_s: float | None = None  # seconds from the demo's start to batch 0's end
        self._shown = -1

    def enough(self) -> bool:
        return len(self.rows) >= self.args.batches and self.dashboard.delivered >= self.args.deliveries

    def run(self) -> None:
        seen = -1
        while not self.enough() and time.monotonic() - self.started < self.args.seconds and self.query.isActive:
            for p in self.query.recentProgress:
                if p["batchId"] > seen:
                    seen = p["batchId"]
                    if self.first_batch_s is None:
                        self.first_batch_s = time.monotonic() - self.started
                    self.rows.append(_row(p, self.dashboard, self.hub))
                    _show(self.rows[-1])
            if not self.rows:
                self._waiting()
            time.sleep(0.2)

    def _waiting(self) -> None:
        """Before batch 0: the seconds so far, updated once a second (the first batch takes longest:
        Spark starts the reader process and its Python workers, and compiles the query)."""
        s = int(time.monotonic() - self.started)
        if s != self._shown:
            self._shown = s
            sys.stdout.write(f"\rwaiting for the first micro-batch: {s:4d} s")
            sys.stdout.flush()


def _run(spark: Any, args: Any, work: str, started: float) -> int:
    from .examples.stopping import stop_at_batch_end

    query, dashboard, brake = _start(spark, args, work)
    watch = _Watch(query, dashboard, args, started)
    try:
        watch.run()
    except BaseException:  # Ctrl-C (Spark's JVM got it too): stop where it is, if it still can
        with contextlib.suppress(Exception):
            query.stop()
        raise
    # At the end of a micro-batch that delivers rows (or while idle): Spark has nothing to abort.
    # At the time cap before anything was delivered there may be no such batch soon: a shorter wait.
    stop_at_batch_end(query, brake, timeout=30 if watch.enough() else 10)
    failed = query.exception()
    dashboard.done.wait(30)
    print()
    if failed:
        print(f"query failed: {failed}", file=sys.stderr)
        return 1
    _summary(watch, dashboard, args)
    if args.chart:
        print(chart(watch.rows, args.chart) if watch.rows else "chart skipped: no micro-batch finished")
    return 0


def _summary(watch: _Watch, dashboard: SlowDashboard, args: Any) -> None:
    rows = watch.rows
    print(f"{'batch':>5} {'rows':>7} {'rows/s':>10} {'outstanding':>12} {'buffered':>9} {'ms':>6} {'delivered':>10}")
    for r in rows:
        print(
            f"{r['batch']:>5} {r['rows']:>7} {r['rows_per_s']:>10,.0f} {r['outstanding']:>12} "
            f"{r['buffered']:>9} {r['ms']:>6} {r['delivered']:>10}"
        )
    total = sum(r["rows"] for r in rows)
    ended = "on_complete" if dashboard.done.is_set() and dashboard.error is None else dashboard.error
    print(
        f"{total} sensor records in {len(rows)} micro-batches (none above {args.max_records_per_trigger}); "
        f"{dashboard.delivered} window averages delivered to a Subscriber taking {args.subscriber_ms} ms per row; "
        f"Subscriber signalled: {ended}"
    )
    if watch.first_batch_s is not None:
        print(f"first micro-batch done {watch.first_batch_s:.1f} s after the start (Spark's start-up included)")
    if not watch.enough():
        print(
            f"stopped at the time cap (--seconds {args.seconds:g}) before {args.batches} micro-batches and "
            f"{args.deliveries} deliveries: this machine is slow or busy; raise --seconds to see more"
        )


def chart(rows: list[dict[str, Any]], path: str) -> str:
    """Write a PNG of demand and delivered elements per micro-batch; return what was done."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return (
            "chart skipped: matplotlib is not installed (pip install 'rs-spark[demo]'); "
            "the table above has the same numbers"
        )
    batches = [r["batch"] for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    top.bar(batches, [r["rows"] for r in rows], color="#4c72b0", label="records read (demand met)")
    top.plot(batches, [r["outstanding"] for r in rows], color="#dd8452", marker=".", label="demand outstanding")
    top.plot(batches, [r["buffered"] for r in rows], color="#55a868", marker=".", label="buffered in rs_spark")
    top.set_ylabel("records")
    top.set_title("source: publisher -> Spark, per micro-batch")
    top.legend(loc="upper right", fontsize=8)
    delivered = [r["delivered"] for r in rows]
    per_batch = [b - a for a, b in zip([0] + delivered[:-1], delivered, strict=False)]
    bottom.bar(batches, per_batch, color="#8172b3", label="rows delivered to the Subscriber")
    ax2 = bottom.twinx()
    ax2.plot(batches, [r["ms"] for r in rows], color="#c44e52", marker=".", label="batch time (ms)")
    ax2.set_ylabel("ms")
    bottom.set_xlabel("micro-batch")
    bottom.set_ylabel("rows")
    bottom.set_title("sink: Spark -> slow Subscriber")
    bottom.legend(loc="upper left", fontsize=8)
    ax2.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return f"chart written to {path}"
