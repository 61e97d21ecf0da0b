"""JVM Publisher -> Python Arrow batches: elements/s through rs_spark.jvm, next to a naive bridge
that makes one py4j call per element, in one run.

    .venv/bin/python benchmarks/jvm.py [--n 3000000] [--naive-n 20000] [--repeat 1]

Publishers: the JDK's SubmissionPublisher fed by a producer thread (Longs, and Strings "s-<i>").
Columns: the same publisher drained inside the JVM by a subscriber that only counts (no bridge:
what the publisher costs by itself; an idle consumer makes SubmissionPublisher hand over element
by element, so the bridge can come out faster); rs_spark.jvm with the /dev/shm file hand-off (and its CPU per element:
JVM process + this Python process, which tells the bridge's cost apart from the machine's load);
rs_spark.jvm with py4j byte[]; the naive bridge (one py4j call per element). Every path is warmed
up first (class loading, JIT) and measured in this run, on this machine.
Targets (issue 7): >= 1M Long elements/s, and >= 50x the naive bridge.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The baselines (rsspark.bench: NaiveBridge, Drain) are benchmark code: they ship in the fixtures
# jar jvm-shim/build makes, not in the product jar.
FIXTURES = os.path.join(ROOT, "jvm-shim", "target", "rs-spark-jvm-fixtures.jar")
sys.path.insert(0, ROOT)


class Cpu:
    """CPU seconds used by the standalone JVM (from /proc) and by this process."""

    def __init__(self, pid):
        self._stat = f"/proc/{pid}/stat"
        self._tick = os.sysconf("SC_CLK_TCK")

    def now(self):
        try:
            with open(self._stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            jvm = (int(fields[11]) + int(fields[12])) / self._tick
        except OSError:
            jvm = float("nan")
        t = os.times()
        return jvm + t.user + t.system


def bridged(jvm, make, n, transfer, batch_rows, cpu=None):
    from rs_spark.jvm import JvmPublisher
    from rs_spark.streams.subscribers import BlockingIterator

    it = BlockingIterator(prefetch=16)
    c = cpu.now() if cpu else 0.0
    t = time.perf_counter()
    JvmPublisher(make(n), jvm, elements="batches", batch_rows=batch_rows, transfer=transfer).subscribe(it)
    rows = sum(b.num_rows for b in it)
    dt = time.perf_counter() - t
    assert rows == n, (rows, n)
    return n / dt, ((cpu.now() - c) / n * 1e9 if cpu else float("nan"))


def naive(jvm, make, n):
    b = jvm.rsspark.bench.NaiveBridge.of(make(n), 1024)
    t = time.perf_counter()
    got = 0
    nxt = b.next
    while nxt() is not None:
        got += 1
    dt = time.perf_counter() - t
    assert got == n, (got, n)
    return n / dt


def ceiling(jvm, make, n):
    t = time.perf_counter()
    got = jvm.rsspark.bench.Drain.count(make(n))
    dt = time.perf_counter() - t
    assert got == n, (got, n)
    return n / dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3_000_000)
    ap.add_argument("--naive-n", type=int, default=20_000)
    ap.add_argument("--batch-rows", type=int, default=65536)
    ap.add_argument("--repeat", type=int, default=1, help="measure each cell this many times, print the median")
    a = ap.parse_args()
    subprocess.run(
        ["bash", os.path.join(ROOT, "jvm-shim", "build")], check=True, env=dict(os.environ, PYTHON=sys.executable)
    )  # no-op when built; PYTHON: the compile classpath is this interpreter's pyspark jars
    from rs_spark.jvm import launch

    with launch(extra_jars=[FIXTURES]) as g:
        jvm = g.jvm
        cpu = Cpu(g.pid) if g.pid is not None else None
        S = jvm.rsspark.jvm.Sources
        kinds = {"Long": S.submissionLongs, "String": S.submissionStrings}
        for make in kinds.values():  # warm up every path (class loading, JIT)
            ceiling(jvm, make, 500_000)
            bridged(jvm, make, 1_000_000, "file", a.batch_rows)
            bridged(jvm, make, 300_000, "bytes", a.batch_rows)
            naive(jvm, make, 3000)
        load = os.getloadavg()[0]
        print(
            f"cpus={os.cpu_count()} load(1m)={load:.1f} n={a.n:,} naive_n={a.naive_n:,} "
            f"batch_rows={a.batch_rows:,} repeat={a.repeat}"
        )
        print(
            f"{'elements':8} | {'JVM, counting only':>19} | {'arrow batches, file':>20} | {'CPU/el':>8} | "
            f"{'arrow, py4j bytes':>18} | {'naive, 1 call/el':>17} | {'speed-up':>8}"
        )
        print("-" * 118)

        def med(measure, *args):
            return statistics.median(measure(*args) for _ in range(a.repeat))

        def bytes_rate(make):
            return bridged(jvm, make, a.n, "bytes", a.batch_rows)[0]

        for name, make in kinds.items():
            top = med(ceiling, jvm, make, a.n)
            runs = [bridged(jvm, make, a.n, "file", a.batch_rows, cpu) for _ in range(a.repeat)]
            f = statistics.median(r[0] for r in runs)
            ns = statistics.median(r[1] for r in runs)
            b = med(bytes_rate, make)
            nv = med(naive, jvm, make, a.naive_n)
            print(
                f"{name:8} | {top:>14,.0f} el/s | {f:>15,.0f} el/s | {ns:>5,.0f} ns | {b:>13,.0f} el/s | "
                f"{nv:>12,.0f} el/s | {f / nv:>7,.0f}x"
            )


if __name__ == "__main__":
    main()
