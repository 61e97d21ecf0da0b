"""Values as pyspark makes them: what it costs (issue 49). One table, every row measured in this run.

    .venv/bin/python benchmarks/conversions.py [--rows 400000] [--batches 4] [--runs 3] [--conversions-only]

Part 1, ``read_stream`` (a Publisher in this process) into ``format("noop")`` with AvailableNow,
``batches`` micro-batches of ``rows`` rows (long, double, string); rows/s over the non-empty
micro-batches after the first (as benchmarks/source.py):
(r1) dicts, converted here and sent as Arrow (the default now);
(r2) dicts sent as JSON, converted in Spark's reader (``codec="json"``: the default until this change);
(r3) the same rows as 65,536-row RecordBatches (Arrow end to end: the ceiling).
Part 2, conversion alone, ``--convert`` rows (long, double, string, timestamp), best of ``runs``:
(c1) rs_spark's element_converter (pyspark's rules); (c2) the ElementConverter without rules
(the conversion until this change: pyarrow's, naive timestamps as UTC); (c3) pyspark's own
``LocalDataToArrowConversion.convert``; (s1)/(s2) the sink's dicts and rows now; (s3)/(s4) the
sink's dicts and rows until this change (``to_pylist`` and ``Row(**d)``); (s5) pyspark's
``ArrowTableToRowsConversion.convert`` (Rows). Then the sink's conversions of one 100-row batch
(what a real-time tick carries at 100,000 rows/s), now and until this change, per batch.
``--conversions-only``: part 2 alone, without a Spark session.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [os.path.dirname(HERE), os.environ.get("PYTHONPATH")] if p)

SCHEMA = "id LONG, x DOUBLE, name STRING"


def steady(progress) -> float:
    progress = [p for p in progress if p["numInputRows"]][1:]
    rows = sum(p["numInputRows"] for p in progress)
    return rows / (sum(p["durationMs"]["triggerExecution"] for p in progress) / 1000.0)


def read_stream_rate(spark, kind: str, rows: int, batches: int) -> float:
    import pyarrow as pa

    import rs_spark
    from rs_spark import streams as rs

    total = rows * batches
    if kind == "batches":
        step = 65_536
        pub = rs.from_iterable(range(0, total, step)).pipe(
            rs.map(
                lambda s: pa.RecordBatch.from_pydict(
                    {
                        "id": pa.array(range(s, min(s + step, total)), pa.int64()),
                        "x": pa.array([i * 0.5 for i in range(s, min(s + step, total))], pa.float64()),
                        "name": pa.array([f"n{i}" for i in range(s, min(s + step, total))], pa.string()),
                    }
                )
            )
        )
    else:
        pub = rs.range_(total).pipe(rs.map(lambda i: {"id": i, "x": i * 0.5, "name": f"n{i}"}))
    opts = {"maxRecordsPerTrigger": rows, "maxBufferedRecords": 2 * rows, "pollTimeout": "10s"}
    opts["availableNowMaxRecords"] = total
    df = rs_spark.read_stream(spark, pub, SCHEMA, options=opts, codec="json" if kind == "json" else "arrow")
    q = df.writeStream.format("noop").trigger(availableNow=True).start()
    assert q.awaitTermination(900), "benchmark query did not finish"
    got = sum(p["numInputRows"] for p in q.recentProgress)
    assert got == total, f"expected {total} rows, got {got}"
    rs_spark.stop_served()
    return steady(q.recentProgress)


def best(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def conversions(n: int, runs: int) -> dict[str, float]:
    import pyarrow as pa
    from pyspark.sql import Row
    from pyspark.sql.conversion import ArrowTableToRowsConversion, LocalDataToArrowConversion
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType, TimestampType

    from rs_spark.arrow.convert import ElementConverter
    from rs_spark.spark.values import arrow_schema, batch_dicts, batch_rows, element_converter

    struct = StructType(
        [
            StructField("id", LongType()),
            StructField("x", DoubleType()),
            StructField("name", StringType()),
            StructField("ts", TimestampType()),
        ]
    )
    t0 = dt.datetime(2026, 12, 2, 9, 45)
    dicts = [{"id": i, "x": i * 0.5, "name": f"n{i}", "ts": t0 + dt.timedelta(seconds=i)} for i in range(n)]
    tuples = [tuple(d.values()) for d in dicts]
    ours, old = element_converter(struct), ElementConverter(arrow_schema(struct))
    batch = ours.convert(dicts, 0).batch
    table = pa.Table.from_batches([batch])
    return {
        "c1": best(lambda: ours.convert(dicts, 0), runs),
        "c2": best(lambda: old.convert(dicts, 0), runs),
        "c3": best(lambda: LocalDataToArrowConversion.convert(tuples, struct, False), runs),
        "s1": best(lambda: batch_dicts(batch), runs),
        "s2": best(lambda: batch_rows(batch), runs),
        "s3": best(lambda: batch.to_pylist(), runs),
        "s4": best(lambda: [Row(**d) for d in batch.to_pylist()], runs),
        "s5": best(lambda: ArrowTableToRowsConversion.convert(table, struct), runs),
    }


def small_batches(runs: int, per: int = 2000) -> dict[str, float]:
    """The sink's conversions of a 100-row (long, double) batch, what a real-time tick carries at
    100,000 rows/s: seconds per batch, best of ``runs`` runs of ``per`` batches."""
    import pyarrow as pa
    from pyspark.sql import Row

    from rs_spark.spark.values import batch_dicts, batch_rows, batch_tuples

    batch = pa.record_batch([pa.array(range(100), pa.int64()), pa.array([0.5] * 100)], names=["id", "t"])

    def each(fn) -> float:
        return best(lambda: [fn() for _ in range(per)], runs) / per

    return {
        "m1": each(lambda: batch_dicts(batch)),
        "m2": each(lambda: batch.to_pylist()),
        "m3": each(lambda: batch_rows(batch)),
        "m4": each(lambda: [Row(**d) for d in batch.to_pylist()]),
        "m5": each(lambda: batch_tuples(batch)),
        "m6": each(lambda: list(zip(*(c.to_pylist() for c in batch.columns), strict=True))),
    }


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):,.0f} [{min(xs):,.0f}-{max(xs):,.0f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--convert", type=int, default=200_000)
    ap.add_argument("--conversions-only", action="store_true", help="part 2 alone (no Spark session)")
    args = ap.parse_args()
    if args.conversions_only:
        print_conversions(conversions(args.convert, args.runs), small_batches(args.runs), args)
        return

    from rs_spark.spark import local_session

    spark = local_session("rs_spark-bench-types")
    kinds = {"r1": "dicts", "r2": "json", "r3": "batches"}
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    for _ in range(args.runs):  # interleaved: a noisy moment hits one measurement of each, not all of one
        for key, kind in kinds.items():
            rates[key].append(read_stream_rate(spark, kind, args.rows, args.batches))
    conv = conversions(args.convert, args.runs)
    small = small_batches(args.runs)
    spark.stop()

    print(
        f"\nread_stream into noop, {args.batches} x {args.rows:,} rows (long, double, string), "
        f"median [range] of {args.runs}"
    )
    print("| row | path | rows/s | of (r3) |")
    print("| --- | --- | ---: | ---: |")
    names = {
        "r1": "dicts, converted here, sent as Arrow (now)",
        "r2": "dicts sent as JSON (until now)",
        "r3": "RecordBatches",
    }
    ceiling = statistics.median(rates["r3"])
    for key in kinds:
        print(f"| ({key}) | {names[key]} | {_spread(rates[key])} | {statistics.median(rates[key]) / ceiling:.0%} |")
    print_conversions(conv, small, args)


def print_conversions(conv: dict[str, float], small: dict[str, float], args: argparse.Namespace) -> None:
    print(f"\nconversion alone, {args.convert:,} rows (long, double, string, timestamp), best of {args.runs}, ms")
    print("| row | conversion | ms |")
    print("| --- | --- | ---: |")
    labels = {
        "c1": "source: element_converter, pyspark's rules (now)",
        "c2": "source: ElementConverter without rules (until now)",
        "c3": "source: pyspark LocalDataToArrowConversion",
        "s1": "sink dicts (now)",
        "s2": "sink rows (now)",
        "s3": "sink dicts (until now: to_pylist)",
        "s4": "sink rows (until now: Row(**d))",
        "s5": "sink: pyspark ArrowTableToRowsConversion",
    }
    for key, label in labels.items():
        print(f"| ({key}) | {label} | {conv[key] * 1000:,.0f} |")
    print(f"\nthe sink, one 100-row batch (long, double), best of {args.runs} runs of 2,000 batches, µs")
    print("| row | conversion | µs a batch |")
    print("| --- | --- | ---: |")
    small_labels = {
        "m1": "sink dicts (now)",
        "m2": "sink dicts (until now: to_pylist)",
        "m3": "sink rows (now)",
        "m4": "sink rows (until now: Row(**d))",
        "m5": "sink tuples (now)",
        "m6": "sink tuples (until now: zip of the columns' to_pylist)",
    }
    for key, label in small_labels.items():
        print(f"| ({key}) | {label} | {small[key] * 1e6:,.1f} |")


if __name__ == "__main__":
    main()
