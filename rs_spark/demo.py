"""The demo pipeline: a bursty sensor Publisher -> Spark (windowed average) -> a slow Subscriber.

Backpressure made visible at both ends. The source asks the publisher for at most
``--max-records-per-trigger`` records per micro-batch, so bursts wait in the publisher's bounded
buffer and drain over the following batches instead of flooding Spark. The sink is a deliberately
slow Subscriber (a "dashboard" taking ``--subscriber-ms`` per row, requesting 8 rows at a time):
each commit waits for its demand, so micro-batches get longer and the source's next request gets
bigger. A one-line live display shows rows/s, demand outstanding, buffered elements, batch time
and rows delivered; at the end a summary table and a PNG chart of demand and delivered elements
per micro-batch (``--chart``; needs matplotlib, the ``demo`` extra).

It reads with a checkpoint and a replay log (option ``logPath``), in a temporary folder removed at
the end: one run, never restarted (exactly once across restarts also takes them on lasting storage
and the sink's ``ledger=``: docs/guarantees.md). It runs until it has something to show (``--batches``
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
    started = time.monotonic()  # Spark's start: the clock of every "N s" the demo shows
    work = tempfile.mkdtemp(prefix="rs-demo-")  # checkpoint and replay log
    ticker = _Ticker(started)
    try:
        ticker.start(f"starting Spark ({args.master}; its log: {args.spark_log_level} and above)")
        spark = _session(args)
        try:
            return _run(spark, args, work, started, ticker)
        finally:
            ticker.stop()
            spark.stop()
    finally:  # also on Ctrl-C: leave nothing behind in the temp directory
        ticker.stop()
        shutil.rmtree(work, ignore_errors=True)


def _session(args: Any) -> Any:
    """A local SparkSession logging at ``--spark-log-level`` from its JVM's start (so the start-up
    messages that ``setLogLevel`` would come too late for are quiet too)."""
    from .spark import local_session

    # One shuffle partition: 8 sensors' windows need no more, and each partition costs the first
    # micro-batch a Python worker (the sink's write()) and a state store.
    return local_session(
        "rs_spark-demo", master=args.master, log_level=args.spark_log_level, spark__sql__shuffle__partitions="1"
    )


class _Ticker:
    """One status line rewritten in place every second until the first micro-batch: what runs, and
    the seconds since Spark's start, so a slow start (the JVM, the reader process, the first batch's
    Python workers) reads as work, not as a hang."""

    def __init__(self, started: float) -> None:
        self.started = started
        self._phase = ""
        self._width = 0
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="rs-demo-ticker", daemon=True)

    def start(self, phase: str) -> None:
        self.phase(phase)
        self._thread.start()

    def phase(self, text: str) -> None:
        """A new step: the one before stays on screen with its time."""
        with self._lock:
            if self._stopped.is_set():
                return
            if self._phase:
                self._write()
                sys.stdout.write("\n")
            self._phase = text
            self._write()

    def stop(self) -> None:
        """End the status line (it stays on screen); idempotent."""
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
            if self._phase:
                self._write()
                sys.stdout.write("\n")
                sys.stdout.flush()

    def _tick(self) -> None:
        while not self._stopped.wait(1.0):
            with self._lock:
                if not self._stopped.is_set():
                    self._write()

    def _write(self) -> None:
        line = f"{self._phase}: {int(time.monotonic() - self.started):4d} s"
        sys.stdout.write("\r" + line.ljust(self._width))
        self._width = len(line)
        sys.stdout.flush()


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
        .option("logPath", os.path.join(work, "replay-log"))  # planned batches replay from it
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


def _row(p: dict[str, Any], delivered_before: int, hub: Any) -> dict[str, Any]:
    """One micro-batch's numbers. ``delivered``: rows its commit delivered to the Subscriber (Spark's
    ``numOutputRows`` of the sink: the commit returns once the Subscriber took them all)."""
    m = _metrics(p)
    delivered = max(int((p.get("sink") or {}).get("numOutputRows") or 0), 0)
    return {
        "batch": p["batchId"],
        "rows": p["numInputRows"],
        "rows_per_s": p.get("processedRowsPerSecond") or 0.0,
        "outstanding": m.get("outstandingDemand", 0),
        "buffered": m.get("bufferedElements", 0),
        "received": m.get("receivedElements", 0),
        "ms": p["durationMs"].get("triggerExecution", 0),
        "delivered": delivered,
        "delivered_total": delivered_before + delivered,
        "sink_demand": hub.stats().outstanding,
    }


def _show(row: dict[str, Any]) -> None:
    sys.stdout.write(
        f"\rbatch {row['batch']:>4}: read {row['rows']:>5} records ({row['rows_per_s']:>7,.0f}/s), "
        f"demand outstanding {row['outstanding']:>5}, buffered {row['buffered']:>5}; {row['ms']:>5} ms; "
        f"delivered {row['delivered']:>3} averages ({row['delivered_total']:>4} in total)   "
    )
    sys.stdout.flush()


class _Watch:
    """The live display, until the demo has something to show or reaches its time cap."""

    def __init__(self, query: Any, dashboard: SlowDashboard, args: Any, started: float, ticker: _Ticker) -> None:
        from .spark.sink.state import sink_state

        self.query, self.dashboard, self.args, self.started = query, dashboard, args, started
        self.ticker = ticker
        self.hub = sink_state(query).hub  # the delivery hub: demand outstanding, buffered, delivered
        self.rows: list[dict[str, Any]] = []
        self.first_batch_s: float | None = None  # seconds from Spark's start to batch 0's end

    @property
    def delivered(self) -> int:
        """Window averages the table's micro-batches delivered."""
        return int(self.rows[-1]["delivered_total"]) if self.rows else 0

    def enough(self) -> bool:
        return len(self.rows) >= self.args.batches and self.delivered >= self.args.deliveries

    def run(self) -> None:
        self.ticker.phase("waiting for the first micro-batch (Spark starts the reader and its Python workers)")
        while not self.enough() and time.monotonic() - self.started < self.args.seconds and self.query.isActive:
            self.collect(show=True)
            time.sleep(0.2)

    def collect(self, show: bool = False) -> None:
        """Add the micro-batches whose progress Spark recorded since the last look."""
        seen = self.rows[-1]["batch"] if self.rows else -1
        for p in self.query.recentProgress:
            if p["batchId"] <= seen:
                continue
            seen = p["batchId"]
            if self.first_batch_s is None:
                self.first_batch_s = time.monotonic() - self.started
                self.ticker.stop()
            self.rows.append(_row(p, self.delivered, self.hub))
            if show:
                _show(self.rows[-1])


def _run(spark: Any, args: Any, work: str, started: float, ticker: _Ticker) -> int:
    from .examples.stopping import stop_at_batch_end

    ticker.phase("starting the query (Spark looks up its Python data sources)")
    query, dashboard, brake = _start(spark, args, work)
    watch = _Watch(query, dashboard, args, started, ticker)
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
    ticker.stop()
    watch.collect()  # the batches that ended while the query stopped: table, summary and chart agree
    print()
    if failed:
        print(f"query failed: {failed}", file=sys.stderr)
        return 1
    _summary(watch, dashboard, args)
    if args.chart:
        print(chart(watch.rows, args.chart) if watch.rows else "chart skipped: no micro-batch finished")
    return 0


# The table's columns: heading, row key, format.
_COLUMNS = (
    ("batch", "batch", "{:>5}"),
    ("read", "rows", "{:>6}"),
    ("read/s", "rows_per_s", "{:>8,.0f}"),
    ("outstanding", "outstanding", "{:>11}"),
    ("buffered", "buffered", "{:>8}"),
    ("ms", "ms", "{:>6}"),
    ("delivered", "delivered", "{:>9}"),
    ("total", "delivered_total", "{:>6}"),
)
_LEGEND = (
    "read: sensor records the micro-batch read (its request(n)); outstanding, buffered: demand the source had\n"
    "signalled and not yet received, records it held, when the batch was planned; ms: the batch's time;\n"
    "delivered: window averages its commit delivered to the Subscriber; total: delivered so far"
)


def _summary(watch: _Watch, dashboard: SlowDashboard, args: Any) -> None:
    rows = watch.rows
    print(" ".join(f"{h:>{len(f.format(0))}}" for h, _, f in _COLUMNS))
    for r in rows:
        print(" ".join(f.format(r[k]) for _, k, f in _COLUMNS))
    print(_LEGEND)
    total = sum(r["rows"] for r in rows)
    ended = "on_complete" if dashboard.done.is_set() and dashboard.error is None else dashboard.error
    print(
        f"{total} sensor records in {len(rows)} micro-batches (none above {args.max_records_per_trigger}); "
        f"{watch.delivered} window averages delivered to a Subscriber taking {args.subscriber_ms:g} ms per row; "
        f"Subscriber signalled: {ended}"
    )
    if dashboard.delivered != watch.delivered:  # a batch the stop ended without a recorded progress
        print(
            f"the Subscriber counted {dashboard.delivered} window averages: "
            f"{dashboard.delivered - watch.delivered} came in a micro-batch Spark recorded no progress for"
        )
    if watch.first_batch_s is not None:
        print(f"first micro-batch done {watch.first_batch_s:.1f} s after Spark's start")
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
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        return (
            "chart skipped: matplotlib is not installed (pip install matplotlib, or the demo extra); "
            "the table above has the same numbers"
        )
    batches = [r["batch"] for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True)
    top.bar(batches, [r["rows"] for r in rows], color="#4c72b0", label="records read (request(n) met)")
    top.plot(batches, [r["outstanding"] for r in rows], color="#dd8452", marker=".", label="demand outstanding")
    top.plot(batches, [r["buffered"] for r in rows], color="#55a868", marker=".", label="buffered in the source")
    top.set_ylabel("sensor records")
    top.set_title("source: publisher -> Spark, per micro-batch")
    # Legends beside the axes, never over the bars.
    top.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    bottom.bar(batches, [r["delivered"] for r in rows], color="#8172b3", label="window averages delivered")
    ax2 = bottom.twinx()
    ax2.plot(batches, [r["ms"] for r in rows], color="#c44e52", marker=".", label="batch time (ms)")
    ax2.set_ylabel("ms")
    ax2.set_ylim(bottom=0)
    bottom.set_xlabel("micro-batch")
    bottom.set_ylabel("window averages")
    bottom.set_title(f"sink: Spark -> slow Subscriber ({rows[-1]['delivered_total']} window averages in total)")
    handles = [*bottom.get_legend_handles_labels()[0], *ax2.get_legend_handles_labels()[0]]
    bottom.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.08, 1.0), fontsize=8)
    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))  # micro-batch ids, never 2.5
    fig.tight_layout()
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return f"chart written to {path}"
