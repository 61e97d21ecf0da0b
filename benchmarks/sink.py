"""Rows/s into Subscribers: format("reactive") next to a bare Arrow writer and foreachBatch.

    .venv/bin/python benchmarks/sink.py [--batches 8] [--rows 500000] [--runs 3] [--only a,c]

One table; with ``--runs N`` every row is measured N times, interleaved, and shows the median
[range]. Every row reads the same input (a minimal Python source yielding
RecordBatches of 3 columns: long, double, string; ``batches`` micro-batches of ``rows`` rows,
Trigger.AvailableNow) and writes it to:
(a) reactive sink -> a Subscriber of RecordBatches in this process (requests 16 at a time; in local
    mode write_stream stages partitions on local disk); (a') the same with partitions inline in the
    commit messages (what a cluster without stagingLocation does);
(b) reactive sink -> a per-row Subscriber in this process (dicts, requests 1024 at a time);
(c) a bare DataSourceStreamArrowWriter that discards the batches (the ceiling for a Python sink);
(d) foreachBatch(df.collect()) handing each Row to the same per-row callback (what people do today).
rows/s = rows / (sum of trigger times of micro-batches 2..n): the first pays for worker start-up.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [HERE, os.environ.get("PYTHONPATH")] if p)


def steady(progress) -> float:
    progress = [p for p in progress if p["numInputRows"]][1:]
    rows = sum(p["numInputRows"] for p in progress)
    return rows / (sum(p["durationMs"]["triggerExecution"] for p in progress) / 1000.0)


class Counting:
    """A Subscriber that counts what it gets, requesting ``chunk`` at a time."""

    def __init__(self, chunk: int, rows_of=lambda x: 1) -> None:
        self.chunk, self.rows_of = chunk, rows_of
        self.rows = 0
        self._left = 0
        self.done = threading.Event()

    def on_subscribe(self, s) -> None:
        self.s = s
        self._left = self.chunk
        s.request(self.chunk)

    def on_next(self, x) -> None:
        self.rows += self.rows_of(x)
        self._left -= 1
        if self._left == 0:
            self._left = self.chunk
            self.s.request(self.chunk)

    def on_error(self, e) -> None:
        self.done.set()

    def on_complete(self) -> None:
        self.done.set()


def print_results(rates: dict[str, list[float]], b: int, r: int, runs: int) -> None:
    print(
        f"{b} micro-batches of {r} rows (long, double, string), local[2], Trigger.AvailableNow; rows/s over "
        f"trigger time of micro-batches 2..n; median [range] of {runs} run(s)"
    )
    print(f"{'sink':<46} {'rows/s':>34}")
    print("-" * 81)
    for name, xs in rates.items():
        med = statistics.median(xs)
        print(f"{name:<46} {f'{med:,.0f} [{min(xs):,.0f}-{max(xs):,.0f}]':>34}")
    v = {name[:4].rstrip(" "): xs for name, xs in rates.items()}

    def ratio(a: str, c: str, fmt: str) -> str:
        runs = ", ".join(format(x / y, fmt) for x, y in zip(v[a], v[c], strict=True))
        return f"{a}/{c} = {format(statistics.median(v[a]) / statistics.median(v[c]), fmt)} [{runs}]"

    if "(a)" in v and "(c)" in v:
        print(ratio("(a)", "(c)", ".0%") + " (target >= 95%)")
    if "(b)" in v and "(d)" in v:
        print(ratio("(b)", "(d)", ".2f") + "x (target >= 2x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--runs", type=int, default=1, help="measure every row this many times (median and range)")
    ap.add_argument("--only", default="", help="comma-separated row keys, e.g. a,c (default: all)")
    args = ap.parse_args()

    import _baselines as base
    import _sink_baselines as sinks

    import rs_spark
    from rs_spark.examples.spark_log import quiet_conf
    from rs_spark.spark import local_session

    tmp = tempfile.mkdtemp(prefix="rs-bench-sink-")
    spark = local_session("rs_spark-bench-sink", **quiet_conf(tmp, "ERROR"))
    spark.dataSource.register(base.HandArrowSource)
    spark.dataSource.register(sinks.DiscardSink)
    b, r = args.batches, args.rows
    runs = iter(range(100))

    def source():
        return spark.readStream.format("hand_arrow").option("batches", b).option("rows", r).load()

    def finish(q, expected: int, got=None) -> float:
        assert q.awaitTermination(900), "benchmark query did not finish"
        assert q.exception() is None, q.exception()
        if got is not None:
            assert got() == expected, f"subscriber saw {got()} rows, expected {expected}"
        return steady(q.recentProgress)

    def reactive(sub, elements: str, **options: str) -> float:
        q = rs_spark.write_stream(
            source(),
            sub,
            elements=elements,
            checkpoint=f"{tmp}/ck{next(runs)}",
            trigger={"availableNow": True},
            options=options,
        )
        return finish(q, b * r, lambda: sub.rows)

    def discard() -> float:
        q = (
            source()
            .writeStream.format("bench_discard")
            .option("checkpointLocation", f"{tmp}/ck{next(runs)}")
            .trigger(availableNow=True)
            .start()
        )
        return finish(q, b * r)

    def foreach_batch() -> float:
        sub = Counting(1024)
        sub.on_subscribe(_NoDemand())

        def each(df, batch_id):
            for row in df.collect():
                sub.on_next(row)

        q = (
            source()
            .writeStream.foreachBatch(each)
            .option("checkpointLocation", f"{tmp}/ck{next(runs)}")
            .trigger(availableNow=True)
            .start()
        )
        return finish(q, b * r, lambda: sub.rows)

    cases = [
        ("(a) reactive -> RecordBatch Subscriber", lambda: reactive(Counting(16, lambda x: x.num_rows), "batches")),
        (
            "(a') same, inline in commit messages",
            lambda: reactive(Counting(16, lambda x: x.num_rows), "batches", inlineMaxBytes="1g"),
        ),
        ("(b) reactive -> per-row Subscriber (dicts)", lambda: reactive(Counting(1024), "dicts")),
        ("(c) bare DataSourceStreamArrowWriter", discard),
        ("(d) foreachBatch + collect() per row", foreach_batch),
    ]
    cases = [c for c in cases if not args.only or c[0][1:3].strip(")") in args.only.split(",")]
    rates: dict[str, list[float]] = {name: [] for name, _ in cases}
    for _ in range(args.runs):  # interleaved: a noisy moment hits one run of each row, not all of one
        for name, fn in cases:
            rates[name].append(fn())
    print_results(rates, b, r, args.runs)
    shutil.rmtree(tmp, ignore_errors=True)
    spark.stop()


class _NoDemand:
    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


if __name__ == "__main__":
    main()
