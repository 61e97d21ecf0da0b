"""End-to-end latency through Spark: publisher on_next -> subscriber on_next, in micro-batches and in
Spark's real-time mode, next to Spark's own rate source into foreachBatch; and, with --max-rate,
the highest rate each path sustains.

    .venv/bin/python benchmarks/latency.py [--seconds 30] [--warmup 10] [--runs 3] [--rates 20,10000]
        [--paths ...] [--elements dicts,batches] [--emit batches,dicts] [--publishers here|process]
        [--max-rate [--start-rate 25000]]

A Publisher in this process emits rows {"id", "t"} at a steady rate (``--rates``, rows per second;
one row per tick up to 1000/s, then ticks of 1 ms carrying rate/1000 rows), stamped with
time.time() when emitted, as Arrow record batches (``--emit dicts``: one dict a row, for the paths
that give it to ``read_stream``: real-time, real-time 10s batches, micro-batch and floor; the rows
are then converted to Arrow in this process), and logs what it emitted. The Subscriber takes
its rows as ``--elements`` (``dicts``: one row an on_next; ``batches``: a record batch an on_next).
Paths, each run ``--runs`` times per rate and element form:

* ``real-time``: format("reactive-rt") -> the shim's ForeachWriter -> a Subscriber here
  (rs_spark.spark.realtime), one real-time batch longer than the run (warmup + seconds + 5 s):
  no batch boundary falls in a run;
* ``real-time 10s batches``: the same with 10 s batches, boundaries included;
* ``real-time 2 partitions``: two publishers (half the rate each, each ticking every millisecond)
  served on two endpoints, read as two partitions (option endpoint ``p0=...,p1=...``: two
  long-running tasks, both of local[2]'s slots) into the same Subscriber through the hub's two
  lanes, one batch as for ``real-time``;
* ``real-time TLS``: ``real-time`` with both hops over tls:// (the publisher's server and the
  Subscriber's hub; a throwaway self-signed certificate in a private temporary directory, removed
  after the run, trusted by the JVM through option tlsCaFile);
* ``real-time TLS 2 partitions``: ``real-time 2 partitions`` with every hop over tls://;
* ``real-time TLS source hop``, ``real-time TLS sink hop``: only that hop over tls://, to tell what
  each costs (not in the default ``--paths``);
* ``micro-batch``: format("reactive") -> format("reactive") (processingTime 0, pollTimeout 50ms);
* ``rate -> foreachBatch``: Spark's rate source (rowsPerSecond) into a Python foreachBatch that
  takes now - timestamp per row (Spark's own micro-batch floor, no rs_spark involved);
* ``floor``: the publisher straight into the subscriber, no Spark.

Each query ends at the end of a batch (rs_spark.spark.batch_end), so Spark aborts nothing. The
first ``--warmup`` seconds of each run are not counted; the rows emitted in the ``--seconds`` after
them are the run's window, and each of them is waited for (2 s at most) and measured. The table
shows, per path and rate, the median over runs of the rows offered in the window, the rows
measured (n), the most a run missed, p50, p90, p99 and max, with the spread of p50 and p99 across
runs [min-max], then each target's verdict: issue 29's latency, TLS within 20% of plain TCP, two
partitions within 1.5x of one. local[2]; the machine's other load shows in the spread: say so when
quoting it.

``--publishers process``: the real-time paths' publishers are served by a spawned process of their
own (_publishers.py), as a deployment serves its sources, instead of this one, where they share the
Subscriber's GIL; ``real-time`` and ``real-time TLS`` then read their one publisher as a partition
too (option endpoint). Each endpoint keeps a whole run's rows (Retention sized by the rate): a run
is one real-time batch, whose rows are kept until it commits.

``--max-rate``: per path and element form, from ``--start-rate``, the rate doubles while a run
sustains it (every row offered measured, the publisher kept its rate, p99 <= 50 ms over
``--seconds``), then two halvings of the gap to the first rate not sustained (_max_rate.py).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _max_rate import Trial, find_max_rate  # noqa: E402
from _rows import Emitted, Lat, percentiles, ticking  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Issue 29's targets on this machine: p50 <= 5 ms and p99 <= 20 ms at 10,000 rows/s; p99 <= 50 ms at 100,000.
RT_TARGETS: dict[float, tuple[float | None, float]] = {10_000.0: (0.005, 0.020), 100_000.0: (None, 0.050)}


def realtime_trigger(a: argparse.Namespace) -> str:
    """One real-time batch longer than a run (its start-up included): no batch boundary falls in it."""
    return f"{max(5, math.ceil(a.warmup + a.seconds) + 5)} seconds"


def retention_for(rate: float, a: argparse.Namespace) -> Any:
    """Retention that keeps a whole run's rows: a real-time batch keeps its rows until it commits,
    and a run is one batch (at 175,000 rows/s the default 4,000,000 rows filled before it ended)."""
    from rs_spark.net.zero_loss.retention import Retention

    rows, default = math.ceil(rate * (a.warmup + a.seconds + 15) * 1.25), Retention()
    return Retention(max_records=max(default.max_records, rows), max_bytes=max(default.max_bytes, rows * 64))


def end_realtime(q: Any, sub: Lat, longest_batch: float) -> None:
    """End a real-time query at the end of the batch it runs, so Spark has nothing to abort.

    ``stop()`` in the middle of a real-time batch kills its long-running tasks: Spark logs the write
    as aborting at ERROR level and the tasks' reads end in InterruptedIOException. Marked terminated
    while its tasks deliver rows (rows reached ``sub`` just now), the query finishes that batch,
    commits it, starts no other and ends by itself (rs_spark.spark.batch_end).
    """
    from rs_spark.spark.batch_end import mark_terminated

    sub.recording = False
    deadline = time.monotonic() + 30
    while time.time() - sub.last_arrival > 0.05 and time.monotonic() < deadline and q.isActive:
        time.sleep(0.005)  # polling for a moment when rows flow: the batch's tasks then run
    if q.isActive and mark_terminated(q):
        try:
            q.awaitTermination(longest_batch + 60)
        except Exception as exc:  # a failed query: say so, the run's figures stay
            print(f"the query failed while ending: {exc}", file=sys.stderr)
    q.stop()


def run_realtime(spark: Any, rate: float, a: argparse.Namespace, batch: str | None = None) -> Lat:
    """The publisher given to ``realtime.read_stream``, which serves it in this process."""
    from rs_spark.spark import realtime

    emitted = Emitted()
    sub = Lat(time.time() + a.warmup, emitted)
    checkpoint = tempfile.mkdtemp(prefix="rs-bench-rt-")
    df = realtime.read_stream(
        spark, ticking(rate, emitted, a.emit == "dicts"), schema="id LONG, t DOUBLE", retention=retention_for(rate, a)
    )
    run_window(df, sub, a, checkpoint, batch)
    realtime.stop_served()
    shutil.rmtree(checkpoint, ignore_errors=True)
    return sub


def run_realtime_partitions(
    spark: Any, rate: float, a: argparse.Namespace, parts: int = 2, source_tls: bool = False, sink_tls: bool = False
) -> Lat:
    """``parts`` publishers at rate/parts each, served on their own endpoints (in this process or,
    with ``--publishers process``, in one of their own) and read as partitions. ``source_tls`` /
    ``sink_tls``: the publishers' servers / the Subscriber's hub on tls://, with a throwaway
    self-signed certificate that the JVM client trusts through option tlsCaFile."""
    from _publishers import PublisherProcess, PublishersHere

    from rs_spark.spark import realtime

    private = tempfile.mkdtemp(prefix="rs-bench-rt-")  # mode 0700: a TLS key stays private
    try:
        cert, key, context = tls_material(private) if source_tls or sink_tls else (None, None, None)
        kind = PublisherProcess if a.publishers == "process" else PublishersHere
        tls_files = (cert, key) if source_tls and cert and key else None
        publishers = kind(rate, parts, retention_for(rate / parts, a), tls_files)
        try:
            sub = Lat(time.time() + a.warmup, publishers)
            trust = {"tlsCaFile": cert} if cert else {}
            df = realtime.read_stream(
                spark, endpoint=publishers.endpoints, schema="id LONG, t DOUBLE", options=trust if source_tls else {}
            )
            sink = {"ssl": context, "options": trust} if sink_tls else {}
            run_window(df, sub, a, os.path.join(private, "chk"), **sink)
        finally:
            publishers.stop()
    finally:
        shutil.rmtree(private, ignore_errors=True)
    return sub


def run_window(
    df: Any, sub: Lat, a: argparse.Namespace, checkpoint: str, trigger: str | None = None, **write: Any
) -> None:
    """Write ``df`` into ``sub`` as a real-time query (``write``: more of write_stream's arguments),
    through the warm-up and the measured window, and end it at the end of its batch."""
    from rs_spark.spark import realtime

    trigger = trigger or realtime_trigger(a)
    q = realtime.write_stream(df, sub, trigger=trigger, checkpoint=checkpoint, elements=a.elements, **write)
    time.sleep(a.warmup + a.seconds)
    sub.close_window()
    end_realtime(q, sub, float(trigger.split()[0]))


def tls_material(private: str) -> tuple[str, str, Any]:
    """A throwaway self-signed certificate and its key in ``private``, and a server context holding them."""
    import ssl

    sys.path.insert(0, ROOT)
    from tests.certs import make_self_signed

    cert, key = make_self_signed(Path(private))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return str(cert), str(key), context


def run_microbatch(spark: Any, rate: float, a: argparse.Namespace) -> Lat:
    import rs_spark
    from rs_spark.examples.stopping import Brake, stop_at_batch_end

    emitted = Emitted()
    sub = Lat(time.time() + a.warmup, emitted)
    brake = Brake(sub)  # to stop at the end of a micro-batch: Spark then has nothing to abort
    # dicts: read_stream's default codec (ab88d32's: json)
    codec: dict[str, Any] = {} if a.emit == "dicts" else {"codec": "arrow"}
    df = rs_spark.read_stream(
        spark,
        ticking(rate, emitted, a.emit == "dicts"),
        schema="id LONG, t DOUBLE",
        options={"pollTimeout": "50ms"},
        **codec,
    )
    checkpoint = tempfile.mkdtemp(prefix="rs-bench-latency-")
    q = rs_spark.write_stream(
        df, brake, checkpoint=checkpoint, trigger={"processingTime": "0 seconds"}, elements=a.elements
    )
    time.sleep(a.warmup + a.seconds)
    sub.close_window()
    sub.recording = False
    stop_at_batch_end(q, brake)
    rs_spark.stop_served()
    shutil.rmtree(checkpoint, ignore_errors=True)
    return sub


def run_rate(spark: Any, rate: float, a: argparse.Namespace) -> Lat:
    from rs_spark.spark.batch_end import mark_terminated

    sub = Lat(time.time() + a.warmup)
    warmup_until = sub.warmup_until
    stopping, held, gate = threading.Event(), threading.Event(), threading.Event()

    def each(batch: Any, _batch_id: int) -> None:
        ts = [r[0].timestamp() for r in batch.select("timestamp").collect()]
        now = time.time()
        if stopping.is_set():  # the last batch: held inside its write while the query is marked to end
            held.set()
            gate.wait()
            return
        for t in ts:
            if t >= warmup_until:
                sub.on_next({"t": t}, now)

    df = spark.readStream.format("rate").option("rowsPerSecond", int(rate)).load()
    q = df.writeStream.foreachBatch(each).trigger(processingTime="0 seconds").start()
    time.sleep(a.warmup + a.seconds)
    stopping.set()
    if held.wait(60) and mark_terminated(q):  # inside a batch's write: it ends, and no other starts
        gate.set()
        q.awaitTermination(60)
    gate.set()
    q.stop()
    return sub


def run_floor(rate: float, a: argparse.Namespace) -> Lat:
    emitted = Emitted()
    sub = Lat(time.time() + 1, emitted)
    ticking(rate, emitted, a.emit == "dicts").subscribe(sub)
    time.sleep(1 + min(a.seconds, 6))
    sub.close_window()
    sub.s.cancel()
    return sub


PATHS = {
    "real-time": run_realtime,
    "real-time 10s batches": lambda spark, rate, a: run_realtime(spark, rate, a, "10 seconds"),
    "real-time 2 partitions": run_realtime_partitions,
    "real-time TLS": lambda spark, rate, a: run_realtime_partitions(spark, rate, a, 1, True, True),
    "real-time TLS 2 partitions": lambda spark, rate, a: run_realtime_partitions(spark, rate, a, 2, True, True),
    "real-time TLS source hop": lambda spark, rate, a: run_realtime_partitions(spark, rate, a, 1, source_tls=True),
    "real-time TLS sink hop": lambda spark, rate, a: run_realtime_partitions(spark, rate, a, 1, sink_tls=True),
    "micro-batch": run_microbatch,
    "rate -> foreachBatch": run_rate,
    "floor (no Spark)": lambda spark, rate, a: run_floor(rate, a),
}


def measure(sub: Lat) -> dict[str, float]:
    """A run's figures: n, p50, p90, p99, max (seconds), and the rows offered inside its window (NaN: not counted)."""
    p = percentiles(sub.latencies())
    p["offered"] = float("nan") if sub.offered is None else sub.offered
    return p


def summarize(runs: list[dict[str, float]]) -> dict[str, Any]:
    """Median over runs of each figure, the spread (min, max) of p50 and p99, and the most rows a run missed."""
    out: dict[str, Any] = {
        k: statistics.median(r[k] for r in runs) for k in ("n", "offered", "p50", "p90", "p99", "max")
    }
    out["missed"] = max(r["offered"] - r["n"] for r in runs)
    out["p50_spread"] = (min(r["p50"] for r in runs), max(r["p50"] for r in runs))
    out["p99_spread"] = (min(r["p99"] for r in runs), max(r["p99"] for r in runs))
    return out


def where_publishers(a: argparse.Namespace) -> str:
    return "in a process of their own" if a.publishers == "process" else "in the Subscriber's process"


def print_table(results: list[tuple[str, float, dict[str, Any]]], a: argparse.Namespace) -> None:
    print(
        f"\nend-to-end latency, local[2], {a.runs} runs x {a.seconds:g} s per row (first {a.warmup:g} s of each not "
        f"counted); median over runs, [min-max] across runs; ms; real-time publishers {where_publishers(a)}"
    )
    head = f"{'path':<36} {'rate/s':>7} {'offered':>8} {'n':>8} {'missed':>6} {'p50':>7} {'p50 spread':>15}"
    print(head + f" {'p90':>8} {'p99':>8} {'p99 spread':>17} {'max':>8}")
    print("-" * 140)
    for name, rate, s in results:
        ms = {k: s[k] * 1000 for k in ("p50", "p90", "p99", "max")}
        p50s = f"[{s['p50_spread'][0] * 1000:.2f}-{s['p50_spread'][1] * 1000:.2f}]"
        p99s = f"[{s['p99_spread'][0] * 1000:.2f}-{s['p99_spread'][1] * 1000:.2f}]"
        offered, missed = ("-", "-") if math.isnan(s["offered"]) else (f"{s['offered']:.0f}", f"{s['missed']:.0f}")
        print(
            f"{name:<36} {rate:>7g} {offered:>8} {int(s['n']):>8} {missed:>6} {ms['p50']:>7.2f} {p50s:>15}"
            f" {ms['p90']:>8.2f} {ms['p99']:>8.2f} {p99s:>17} {ms['max']:>8.1f}"
        )
    for name, rate, s in results:
        target = RT_TARGETS.get(rate)
        if name.startswith("real-time") and "batches" not in name and "hop" not in name and target is not None:
            p50, p99 = target
            met = (p50 is None or s["p50"] <= p50) and s["p99"] <= p99
            want = ("" if p50 is None else f"p50 <= {p50 * 1000:g} ms, ") + f"p99 <= {p99 * 1000:g} ms"
            print(
                f"{name} at {rate:g}/s: p50 {s['p50'] * 1000:.2f} ms, p99 {s['p99'] * 1000:.2f} ms (target {want}): "
                f"{'met' if met else 'NOT met'}"
            )
    print_tls_overhead(results)


def print_tls_overhead(results: list[tuple[str, float, dict[str, Any]]]) -> None:
    """TLS against plain TCP at each rate both were measured at (target: within 20%)."""
    by = {(name, rate): s for name, rate, s in results}
    for (name, rate), tls in by.items():
        plain = by.get(("real-time", rate))
        if name != "real-time TLS" or plain is None:
            continue
        parts = [
            f"{k} {tls[k] / plain[k] - 1:+.0%} ({plain[k] * 1000:.2f} -> {tls[k] * 1000:.2f} ms)"
            for k in ("p50", "p99")
        ]
        met = all(tls[k] <= 1.2 * plain[k] for k in ("p50", "p99"))
        print(
            f"TLS against plain TCP at {rate:g}/s: {', '.join(parts)} (target within 20%): "
            f"{'met' if met else 'NOT met'}"
        )


def print_partitions_cost(results: list[tuple[str, float, dict[str, Any]]]) -> None:
    """Two partitions against one at the same total rate (target: within 1.5x at p50 and p99)."""
    by = {(name, rate): s for name, rate, s in results}
    for (name, rate), two in by.items():
        one = by.get((name.replace(" 2 partitions", ""), rate))
        if " 2 partitions" not in name or one is None:
            continue
        parts = [f"{k} {two[k] / one[k]:.2f}x ({one[k] * 1000:.2f} -> {two[k] * 1000:.2f} ms)" for k in ("p50", "p99")]
        met = all(two[k] <= 1.5 * one[k] for k in ("p50", "p99"))
        print(
            f"{name} against one partition at {rate:g}/s: {', '.join(parts)} (target within 1.5x): "
            f"{'met' if met else 'NOT met'}"
        )


EMITS = ("real-time", "real-time 10s batches", "micro-batch", "floor (no Spark)")
"""The paths whose publisher ``--emit`` shapes (the others serve record batches, or are Spark's own)."""


def shown(name: str, elements: str, emit: str = "batches") -> str:
    """A path's name in the table: ``<- dicts`` when its publisher emits dicts, and the Subscriber's
    element form when it takes batches."""
    name = f"{name} <- dicts" if emit == "dicts" and name in EMITS else name
    return name if elements == "dicts" else f"{name} [{elements}]"


APART: dict[str, Callable[[Any, float, argparse.Namespace], Lat]] = {
    "real-time": lambda spark, rate, a: run_realtime_partitions(spark, rate, a, parts=1),
    "real-time 2 partitions": run_realtime_partitions,
    **{name: PATHS[name] for name in PATHS if name.startswith("real-time TLS")},
}
"""The real-time paths ``--publishers process`` runs: the publishers read as partitions, one or two
(the other paths run as without it)."""


def one_run(spark: Any, name: str, rate: float, a: argparse.Namespace) -> dict[str, float]:
    """Run path ``name`` once at ``rate`` with ``a.elements``; its figures, also printed to stderr."""
    p = measure((APART if a.publishers == "process" and name in APART else PATHS)[name](spark, rate, a))
    print(
        f"{shown(name, a.elements, a.emit)} @ {rate:g}/s: offered={p['offered']:.0f} n={p['n']} "
        f"p50={p['p50'] * 1000:.2f} p90={p['p90'] * 1000:.2f} p99={p['p99'] * 1000:.2f} max={p['max'] * 1000:.1f} ms",
        file=sys.stderr,
        flush=True,
    )
    return p


def fixed_rates(spark: Any, a: argparse.Namespace) -> None:
    """Every path at every rate, ``a.runs`` times each: the latency table."""
    results = []
    for rate in (float(r) for r in a.rates.split(",")):
        for elements in a.elements_list:
            a.elements = elements
            for emit in a.emit_list:
                a.emit = emit
                for name in a.paths.split(","):
                    if emit == "dicts" and name not in EMITS:
                        continue  # its publisher is served as record batches: measured with emit batches
                    runs = [one_run(spark, name, rate, a) for _ in range(a.runs)]
                    results.append((shown(name, elements, emit), rate, summarize(runs)))
    print_table(results, a)
    print_partitions_cost(results)


def max_rates(spark: Any, a: argparse.Namespace) -> None:
    """Per path and element form, the highest rate sustained for ``a.seconds`` (see _max_rate)."""
    found = []
    for elements in a.elements_list:
        a.elements = elements
        for name in a.paths.split(","):

            def trial(rate: float, name: str = name) -> Trial:
                p = one_run(spark, name, rate, a)
                return Trial(rate, a.seconds, int(p["offered"]), int(p["n"]), p["p99"])

            best, failed = find_max_rate(trial, a.start_rate)
            found.append((shown(name, elements, a.emit), best, failed))
    print(
        f"\nhighest rate sustained for {a.seconds:g} s: every row offered measured, p99 <= 50 ms; local[2]; "
        f"publishers {where_publishers(a)}"
    )
    print(f"{'path':<36} {'rows/s':>10} {'p99 ms':>8}   first rate not sustained, and why")
    print("-" * 110)
    for name, best, failed in found:
        rate, p99 = (f"{best.rate:,.0f}", f"{best.p99 * 1000:.1f}") if best else ("none", "-")
        why = f"{failed.rate:,.0f}: {failed.why_not}" if failed else "none up to the most tried"
        print(f"{name:<36} {rate:>10} {p99:>8}   {why}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30, help="measured seconds per run")
    ap.add_argument("--warmup", type=float, default=10, help="seconds not counted at the start of each run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rates", default="20,10000,100000", help="comma-separated rows per second")
    default = [p for p in PATHS if not p.endswith(" hop")]  # the one-hop TLS rows are for diagnosis
    ap.add_argument("--paths", default=",".join(default), help="comma-separated, of: " + ", ".join(PATHS))
    ap.add_argument("--elements", default="dicts", help="Subscriber element forms: dicts,batches")
    ap.add_argument(
        "--publishers",
        choices=("here", "process"),
        default="here",
        help="where the real-time paths' publishers run: here (beside the Subscriber) or in a process of their own",
    )
    ap.add_argument(
        "--emit",
        default="batches",
        help="what the publisher of the paths read_stream serves emits: batches (a record batch a tick), dicts "
        "(one dict a row), or both (batches,dicts)",
    )
    ap.add_argument("--max-rate", action="store_true", help="find each path's highest sustained rate instead")
    ap.add_argument("--start-rate", type=float, default=25_000, help="--max-rate: the first rate tried")
    a = ap.parse_args()
    a.elements_list = a.elements.split(",")
    a.emit_list = a.emit.split(",")
    if set(a.emit_list) - {"batches", "dicts"}:
        ap.error(f"--emit {a.emit}: batches, dicts or batches,dicts")
    a.emit = a.emit_list[0]
    unknown = [p for p in a.paths.split(",") if p not in PATHS]
    if unknown:
        ap.error(f"--paths {','.join(unknown)}: not one of {', '.join(PATHS)}")
    here_only = [
        p for p in a.paths.split(",") if a.publishers == "process" and p.startswith("real-time") and p not in APART
    ]
    if here_only:
        ap.error(f"--publishers process runs the real-time paths {', '.join(APART)}; not {','.join(here_only)}")

    from pyspark.sql import SparkSession

    from rs_spark.spark.jvm import configure
    from rs_spark.spark.session import ensure_worker_python, register

    ensure_worker_python()
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("rs_spark-latency")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.pollingDelay", "5ms")
    )
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    (max_rates if a.max_rate else fixed_rates)(spark, a)
    spark.stop()


if __name__ == "__main__":
    main()
