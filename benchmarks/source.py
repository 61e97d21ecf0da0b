"""Rows/s into a noop sink: format("reactive") next to hand-written Python sources and `rate`.

    .venv/bin/python benchmarks/source.py [--batches 8] [--rows 1000000] [--runs 3] [--only f,g,h] [--cluster]

Each row runs a streaming query with Trigger.AvailableNow over ``batches`` micro-batches of
``rows`` rows (3 columns: long, double, string) into ``format("noop")``; rows/s = rows / (sum of
trigger times of the non-empty micro-batches), excluding each query's first micro-batch (JVM and
Python worker warm-up, 3-6 s here). With ``--runs N`` every row is measured N times (rows
interleaved, so a noisy moment of the shared machine hits one measurement of each, not all of
one row) and the table shows the median and the range. Rows:
(a) reactive, a Publisher of 1M-row pyarrow RecordBatches;  (b) reactive, a Publisher of dicts;
(c) a minimal hand-written Python source yielding the same RecordBatches (the ceiling);
(d) the same source yielding tuples (what people write by hand today);  (e) Spark's `rate`;
(f) reactive, endpoint mode: the RecordBatch publisher served by rs_spark.net in this process and read
with option endpoint (Arrow codec), the endpoint keeping what it sent until Spark commits
(retention, the default), next to (f') the same with option resumable=false (no retention);
(g) the single-reader path: one endpoint served from a process of its own, its rows through the
driver-side reader process (executorFetch=false); (h1), (h2), (h4): the same rows from 1, 2 and 4
endpoints, each served from a process of its own, read as partitions by executors straight from
the endpoints (executorFetch=true; ``batches`` batches of ``rows / n`` rows per endpoint). For
(g) and (h) the table adds the reader process's CPU seconds (Spark's python_streaming_source_runner
of the query, utime + stime from /proc, sampled from the end of the first non-empty micro-batch to
the end of the query) and its rowBytesThroughReader (progress JSON), both per million rows.
``--cluster`` measures (g) and (h) again on a local standalone cluster (a master and two workers
of one core each; tests/cluster/standalone.py).
The reactive queries use pollTimeout=10s: the publishers here are finite and complete, so the
timeout never delays a micro-batch, but a short one ended AvailableNow early when a loaded
machine took longer than it to build the next 1M-row batch (a run then read 1 of 8 batches), and
availableNowMaxRecords = every row (AvailableNow reads at most 1,000,000 rows a run by default).
(f), (f') and (g) use maxBufferedRecords = 2 x rows: at 1 x, Arrow elements arrive cut into
65,536-row frames, the buffer bound holds 15 of them (983,040 rows), and the first micro-batches
wait the whole pollTimeout for the 1,000,000th row.
Without logPath, micro-batches above 1 MiB go to executors outside Spark's tasks (batchTransport=auto):
here, on one host, as private files the reader process writes and executors map (elsewhere fetched
from the reader process over TCP); ``--transport inline`` measures the old way, inside Spark's tasks.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [HERE, os.environ.get("PYTHONPATH")] if p)


@dataclass
class Result:
    """One measurement: rows/s, and for the endpoint rows the reader process's share per million rows."""

    rate: float
    reader_cpu: float | None = None  # CPU seconds of the reader process per million rows
    row_bytes: float | None = None  # rowBytesThroughReader per million rows


def steady(progress) -> float:
    """Rows/s over the non-empty micro-batches after the first (JVM and worker warm-up)."""
    progress = [p for p in progress if p["numInputRows"]][1:]
    rows = sum(p["numInputRows"] for p in progress)
    return rows / (sum(p["durationMs"]["triggerExecution"] for p in progress) / 1000.0)


def measure(query, expected_rows: int) -> float:
    assert query.awaitTermination(600), "benchmark query did not finish"
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    assert rows == expected_rows, f"expected {expected_rows} rows, got {rows}"
    return steady(query.recentProgress)


def row_bytes_through_reader(progress) -> int:
    """The source's last reported rowBytesThroughReader (cumulative over the query)."""
    for p in reversed(progress):
        m = p["sources"][0].get("latestOffset")
        m = json.loads(m) if isinstance(m, str) else m
        if isinstance(m, dict) and "rowBytesThroughReader" in m:
            return int(m["rowBytesThroughReader"])
    raise AssertionError("no progress reported rowBytesThroughReader")


class Bench:
    """The queries of the table, on one SparkSession."""

    def __init__(self, spark, args: argparse.Namespace, work: str) -> None:
        self.spark, self.args, self.work = spark, args, work

    def reactive(self, factory: str, rows: int, **extra: str) -> Result:
        import _baselines as base

        b = self.args.batches
        extra.setdefault("batchTransport", self.args.transport)
        df = (
            self.spark.readStream.format("reactive")
            .schema(base.SCHEMA)
            .options(**extra)
            .option("publisher", f"_baselines:{factory}")
            .option("publisher.batches", b)
            .option("publisher.rows", rows)
            .option("maxRecordsPerTrigger", rows)
            .option("maxBufferedRecords", max(rows, 2))
            .option("pollTimeout", "10s")
            .option("availableNowMaxRecords", b * rows)
            .load()
        )
        return Result(measure(df.writeStream.format("noop").trigger(availableNow=True).start(), b * rows))

    def endpoint(self, rows: int, resumable: bool) -> Result:
        import _baselines as base

        from rs_spark import net
        from rs_spark import streams as rs

        b = self.args.batches
        server = net.serve(
            rs.range_(b).pipe(rs.map(lambda i: base.make_batch(i, rows))),
            name="batches",
            token="bench",
            retention=net.Retention(max_bytes=1 << 30),
        )
        try:
            df = (
                self.spark.readStream.format("reactive")
                .schema(base.SCHEMA)
                .option("endpoint", server.address + "?codec=arrow")
                .option("token", "bench")
                .option("resumable", str(resumable).lower())
                .option("maxRecordsPerTrigger", rows)
                .option("maxBufferedRecords", 2 * rows)
                .option("pollTimeout", "10s")
                .option("availableNowMaxRecords", b * rows)
                .option("batchTransport", self.args.transport)
                .load()
            )
            return Result(measure(df.writeStream.format("noop").trigger(availableNow=True).start(), b * rows))
        finally:
            server.stop()

    def served(self, n: int, executor_fetch: bool) -> Result:
        """``n`` endpoints, each in a process of its own, read by the reader process or by executors."""
        import _baselines as base
        from _partitions import TOKEN, Publishers

        b, r = self.args.batches, self.args.rows
        pubs = Publishers(n, b, r // n)
        try:
            reader = (
                self.spark.readStream.format("reactive")
                .schema(base.SCHEMA)
                .option("endpoint", pubs.endpoint())
                .option("token", TOKEN)
                .option("executorFetch", str(executor_fetch).lower())
                .option("maxRecordsPerTrigger", r)
                .option("maxBufferedRecords", 2 * r)
                .option("pollTimeout", "10s")
                .option("availableNowMaxRecords", b * r)  # per partition: more than each has
            )
            if not executor_fetch:
                reader = reader.option("batchTransport", self.args.transport)
            return self.watched(reader.load(), b * (r // n) * n)
        finally:
            pubs.stop()

    def watched(self, df, expected_rows: int) -> Result:
        """Run ``df`` into noop, sampling its reader process's CPU."""
        from _partitions import ReaderWatch, readers

        jvm = self.spark.sparkContext._gateway.proc.pid
        watch = ReaderWatch(jvm, readers(jvm))
        q = df.writeStream.format("noop").trigger(availableNow=True).start()
        watch.watch(q)
        rate = measure(q, expected_rows)
        cpu, rows = watch.result(q.recentProgress)
        through = row_bytes_through_reader(q.recentProgress)
        return Result(rate, cpu / rows * 1e6, through / expected_rows * 1e6)

    def hand(self, fmt: str, rows: int) -> Result:
        b = self.args.batches
        df = self.spark.readStream.format(fmt).option("batches", b).option("rows", rows).load()
        return Result(measure(df.writeStream.format("noop").trigger(availableNow=True).start(), b * rows))

    def rate(self, rows: int) -> Result:
        from rs_spark.examples.stopping import stop_when_idle

        b = self.args.batches
        df = self.spark.readStream.format("rate").option("rowsPerSecond", rows * 4).load()
        q = df.writeStream.format("noop").trigger(processingTime="1 second").start()
        t0 = time.time()
        while len([p for p in q.recentProgress if p["numInputRows"]]) < b and time.time() - t0 < 120:
            time.sleep(0.2)  # the rate source runs on a timer: wait for its batches
        stop_when_idle(q)  # between two batches (they take far less than the trigger's second)
        return Result(steady(q.recentProgress))

    def cases(self) -> list[tuple[str, str, int, Callable[[], Result]]]:
        """(key, label, rows per micro-batch, measure) of every row of the table."""
        r, dr = self.args.rows, self.args.dict_rows
        logs = iter(range(1_000_000))

        def log() -> str:  # a new replay log per run: a second run reading the first's would plan nothing
            return f"{self.work}/replay-log-{next(logs)}"

        return [
            ("a", "(a) reactive: RecordBatch publisher", r, lambda: self.reactive("batch_publisher", r)),
            (
                "a'",
                "(a') same, with logPath (local disk)",
                r,
                lambda: self.reactive("batch_publisher", r, logPath=log()),
            ),
            ("b", "(b) reactive: dict publisher", dr, lambda: self.reactive("dict_publisher", dr)),
            ("c", "(c) hand-written source, RecordBatches", r, lambda: self.hand("hand_arrow", r)),
            ("d", "(d) hand-written source, tuples", dr, lambda: self.hand("hand_tuples", dr)),
            ("e", "(e) Spark rate source", 0, lambda: self.rate(r)),
            ("f", "(f) reactive: endpoint, retention on", r, lambda: self.endpoint(r, resumable=True)),
            ("f'", "(f') same, retention off (resumable=false)", r, lambda: self.endpoint(r, resumable=False)),
            *self.endpoint_cases(),
        ]

    def endpoint_cases(self) -> list[tuple[str, str, int, Callable[[], Result]]]:
        r = self.args.rows
        return [
            ("g", "(g) 1 endpoint, single reader", r, lambda: self.served(1, executor_fetch=False)),
            ("h1", "(h1) 1 endpoint, executorFetch", r, lambda: self.served(1, executor_fetch=True)),
            ("h2", "(h2) 2 endpoints as partitions", r, lambda: self.served(2, executor_fetch=True)),
            ("h4", "(h4) 4 endpoints as partitions", r, lambda: self.served(4, executor_fetch=True)),
        ]


def run(cases, runs: int) -> dict[str, tuple[str, int, list[Result]]]:
    """Every case ``runs`` times, interleaved."""
    out: dict[str, tuple[str, int, list[Result]]] = {key: (label, rows, []) for key, label, rows, _ in cases}
    for _ in range(runs):
        for key, _, _, fn in cases:
            out[key][2].append(fn())
    return out


def _spread(values: list[float], fmt: str) -> str:
    med = statistics.median(values)
    if len(values) == 1:
        return format(med, fmt)
    return f"{format(med, fmt)} [{format(min(values), fmt)}-{format(max(values), fmt)}]"


def print_table(title: str, results: dict[str, tuple[str, int, list[Result]]]) -> None:
    print(title)
    print(f"{'source':<42} {'rows/batch':>10} {'rows/s':>32} {'reader CPU s/M rows':>26} {'reader bytes/M rows':>20}")
    print("-" * 134)
    for label, rows, rs in results.values():
        rate = _spread([x.rate for x in rs], ",.0f")
        cpu = _spread([x.reader_cpu for x in rs], ".4f") if rs[0].reader_cpu is not None else "-"
        nb = _spread([x.row_bytes for x in rs], ",.0f") if rs[0].row_bytes is not None else "-"
        print(f"{label:<42} {rows if rows else '-':>10} {rate:>32} {cpu:>26} {nb:>20}")


def print_targets(results: dict[str, tuple[str, int, list[Result]]]) -> None:
    """The ratios the targets name, from the medians (and, in brackets, per run)."""

    def ratio(a: str, b: str, attr: str = "rate", fmt: str = ".0%") -> str:
        xs = [getattr(x, attr) for x in results[a][2]]
        ys = [getattr(y, attr) for y in results[b][2]]
        runs = ", ".join(format(x / y, fmt) for x, y in zip(xs, ys, strict=True))
        return f"({a})/({b}) = {format(statistics.median(xs) / statistics.median(ys), fmt)} [{runs}]"

    have = results.keys()
    lines = []
    if {"a", "a'", "c"} <= have:
        lines.append(ratio("a", "c") + ", " + ratio("a'", "c") + " (target >= 95%)")
    if {"b", "d"} <= have:
        lines.append(f"{ratio('b', 'd', fmt='.2f')}x (target >= 1.5x)")
    if {"f", "f'"} <= have:
        lines.append(ratio("f", "f'") + " (target >= 90%)")
    for h in ("h1", "h2", "h4"):
        if {h, "g"} <= have:
            cpu = ratio(h, "g", "reader_cpu", ".1%")
            lines.append(f"rows/s {ratio(h, 'g')} (target >= 100%); reader CPU per row {cpu} (target < 5%)")
    print("\n".join(lines))


def on_cluster(args: argparse.Namespace, work: str) -> None:
    """(g) and (h) on a standalone cluster of two one-core workers on this machine."""
    from pathlib import Path

    from rs_spark.spark import local_session

    sys.path.insert(0, ROOT)
    from tests.cluster.standalone import start_cluster

    cluster = start_cluster(Path(work) / "cluster")
    try:
        conf = {"spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.ui.showConsoleProgress": "false"}
        spark = local_session("rs_spark-bench-source-cluster", master=cluster.url, **conf)
        bench = Bench(spark, args, work)
        results = run(bench.endpoint_cases(), args.runs)
        print_table(f"\nthe same on a standalone cluster ({cluster.url}, 2 workers x 1 core)", results)
        print_targets(results)
        spark.stop()
    finally:
        cluster.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dict-rows", type=int, default=1_000_000, help="rows per batch for (b) and (d)")
    ap.add_argument(
        "--transport",
        default="auto",
        choices=["auto", "inline", "fetch"],
        help="batchTransport of the reactive queries without logPath",
    )
    ap.add_argument("--runs", type=int, default=1, help="measure every row this many times (median and range)")
    ap.add_argument("--only", default="", help="comma-separated row keys, e.g. f,f',g,h1,h2,h4 (default: all)")
    ap.add_argument("--cluster", action="store_true", help="also (g) and (h) on a 2-worker standalone cluster")
    args = ap.parse_args()

    import shutil
    import tempfile

    import _baselines as base

    from rs_spark.examples.spark_log import quiet_conf
    from rs_spark.spark import local_session

    work = tempfile.mkdtemp(prefix="rs-bench-source-")  # Spark's log configuration, the replay log of (a')
    spark = local_session("rs_spark-bench-source", **quiet_conf(work, "ERROR"))
    spark.dataSource.register(base.HandArrowSource)
    spark.dataSource.register(base.HandTupleSource)
    cases = Bench(spark, args, work).cases()
    only = {k.strip() for k in args.only.split(",") if k.strip()}
    cases = [c for c in cases if not only or c[0] in only]
    results = run(cases, args.runs)
    print_table(
        f"{args.batches} micro-batches into format('noop'), local[2], Trigger.AvailableNow; rows/s over trigger "
        f"time of micro-batches 2..n; median [range] of {args.runs} run(s)",
        results,
    )
    print_targets(results)
    spark.stop()
    if args.cluster:
        on_cluster(args, work)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
