"""Update-mode rows/s into a Subscriber: rs_spark.write_stream(output_mode="update") next to a hand-written
foreachBatch doing the same, in one run.

    .venv/bin/python benchmarks/sink_update.py [--batches 6] [--rows 200000] [--keys 50000] [--runs 3]

One table; with ``--runs N`` every row is measured N times, interleaved, and shows the median [range]. Every row
runs the same query: the input of benchmarks/sink.py (a minimal Python source yielding RecordBatches of long,
double, string; ``batches`` micro-batches of ``rows`` rows, Trigger.AvailableNow), grouped by ``id % keys``
(count and sum), in output mode update: each micro-batch updates ``keys`` groups. It writes them to:
(u) rs_spark.write_stream(output_mode="update") -> a Subscriber of RecordBatches in this process (requests 16 at
    a time; foreachBatch collects each micro-batch as Arrow and sends it through the delivery hub);
(v) the same into a per-row Subscriber (dicts, requests 1024 at a time);
(f) a hand-written foreachBatch: ``df.toArrow()``, its RecordBatches handed to the same counting callback
    (no hub, no ledger: nothing kept across restarts, no demand);
(g) a hand-written foreachBatch: ``df.collect()``, each Row handed to the same per-row callback.
updated rows/s = updated rows / (sum of trigger times of micro-batches 2..n): the first pays for start-up.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [HERE, os.environ.get("PYTHONPATH")] if p)

from sink import Counting, _NoDemand  # noqa: E402  (benchmarks/ is on the path above)


def steady(progress, keys: int) -> float:
    """Updated rows per second over micro-batches 2..n (each updates ``keys`` groups)."""
    progress = [p for p in progress if p["numInputRows"]][1:]
    return keys * len(progress) / (sum(p["durationMs"]["triggerExecution"] for p in progress) / 1000.0)


def print_results(rates: dict[str, list[float]], b: int, r: int, keys: int, runs: int) -> None:
    print(
        f"{b} micro-batches of {r} rows grouped into {keys} keys (count, sum), output mode update, local[2], "
        f"Trigger.AvailableNow; updated rows/s over trigger time of micro-batches 2..n; median [range] of {runs} run(s)"
    )
    print(f"{'sink':<58} {'updated rows/s':>30}")
    print("-" * 89)
    for name, xs in rates.items():
        med = statistics.median(xs)
        print(f"{name:<58} {f'{med:,.0f} [{min(xs):,.0f}-{max(xs):,.0f}]':>30}")
    v = {name[:3]: xs for name, xs in rates.items()}
    for a, c in (("(u)", "(f)"), ("(v)", "(g)")):
        if a in v and c in v:
            each = ", ".join(f"{x / y:.0%}" for x, y in zip(v[a], v[c], strict=True))
            print(f"{a}/{c} = {statistics.median(v[a]) / statistics.median(v[c]):.0%} [{each}]")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=50_000)
    ap.add_argument("--runs", type=int, default=1, help="measure every row this many times (median and range)")
    args = ap.parse_args()

    import _baselines as base
    from pyspark.sql import functions as F

    import rs_spark
    from rs_spark.examples.spark_log import quiet_conf
    from rs_spark.spark import local_session

    tmp = tempfile.mkdtemp(prefix="rs-bench-sink-update-")
    spark = local_session("rs_spark-bench-sink-update", **quiet_conf(tmp, "ERROR"))
    spark.dataSource.register(base.HandArrowSource)
    b, r, keys = args.batches, args.rows, args.keys
    runs = iter(range(100))

    def counts():
        df = spark.readStream.format("hand_arrow").option("batches", b).option("rows", r).load()
        return df.groupBy((F.col("id") % keys).alias("key")).agg(F.count("*").alias("n"), F.sum("price").alias("s"))

    def finish(q, sub) -> float:
        assert q.awaitTermination(900), "benchmark query did not finish"
        assert q.exception() is None, q.exception()
        assert sub.rows == b * keys, f"the Subscriber saw {sub.rows} rows, expected {b * keys}"
        return steady(q.recentProgress, keys)

    def reactive(sub, elements: str) -> float:
        q = rs_spark.write_stream(
            counts(),
            sub,
            elements=elements,
            checkpoint=f"{tmp}/ck{next(runs)}",
            trigger={"availableNow": True},
            output_mode="update",
        )
        return finish(q, sub)

    def by_hand(each_of) -> float:
        sub = Counting(1024, lambda x: getattr(x, "num_rows", 1))
        sub.on_subscribe(_NoDemand())

        def each(df, batch_id):
            for x in each_of(df):
                sub.on_next(x)

        q = (
            counts()
            .writeStream.foreachBatch(each)
            .outputMode("update")
            .option("checkpointLocation", f"{tmp}/ck{next(runs)}")
            .trigger(availableNow=True)
            .start()
        )
        return finish(q, sub)

    cases = [
        (
            "(u) write_stream update -> RecordBatch Subscriber",
            lambda: reactive(Counting(16, lambda x: x.num_rows), "batches"),
        ),
        ("(v) write_stream update -> per-row Subscriber (dicts)", lambda: reactive(Counting(1024), "dicts")),
        ("(f) foreachBatch + toArrow() by hand, RecordBatches", lambda: by_hand(lambda df: df.toArrow().to_batches())),
        ("(g) foreachBatch + collect() by hand, per row", lambda: by_hand(lambda df: df.collect())),
    ]
    rates: dict[str, list[float]] = {name: [] for name, _ in cases}
    for _ in range(args.runs):  # interleaved: a noisy moment hits one run of each row, not all of one
        for name, fn in cases:
            rates[name].append(fn())
    print_results(rates, b, r, keys, args.runs)
    shutil.rmtree(tmp, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
