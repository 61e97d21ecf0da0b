"""JVM Publisher -> Python Arrow batches: elements/s through rs_spark.jvm, next to a naive bridge
that makes one py4j call per element, in one run.

    .venv/bin/python benchmarks/jvm.py [--n 3000000] [--naive-n 20000]

Publishers: the JDK's SubmissionPublisher fed by a producer thread (Longs, and Strings "s-<i>").
Targets (issue 7): >= 1M Long elements/s, and >= 50x the naive bridge.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def bridged(jvm, make, n, transfer, batch_rows):
    from rs_spark.jvm import JvmPublisher
    from rs_spark.streams.subscribers import BlockingIterator

    it = BlockingIterator(prefetch=16)
    t = time.perf_counter()
    JvmPublisher(make(n), jvm, elements="batches", batch_rows=batch_rows, transfer=transfer).subscribe(it)
    rows = sum(b.num_rows for b in it)
    dt = time.perf_counter() - t
    assert rows == n, (rows, n)
    return n / dt


def naive(jvm, make, n):
    b = jvm.rsspark.jvm.Shim.naive(make(n), 1024)
    t = time.perf_counter()
    got = 0
    nxt = b.next
    while nxt() is not None:
        got += 1
    dt = time.perf_counter() - t
    assert got == n, (got, n)
    return n / dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3_000_000)
    ap.add_argument("--naive-n", type=int, default=20_000)
    ap.add_argument("--batch-rows", type=int, default=65536)
    a = ap.parse_args()
    subprocess.run(["bash", os.path.join(ROOT, "jvm-shim", "build")], check=True)
    from rs_spark.jvm import launch

    with launch() as g:
        jvm = g.jvm
        S = jvm.rsspark.jvm.Sources
        kinds = {"Long": S.submissionLongs, "String": S.submissionStrings}
        bridged(jvm, S.submissionLongs, 100_000, "file", a.batch_rows)  # warm up (class loading, JIT)
        naive(jvm, S.submissionLongs, 2000)
        print(f"cpus={os.cpu_count()} n={a.n:,} naive_n={a.naive_n:,} batch_rows={a.batch_rows:,}")
        print(f"{'elements':8} | {'arrow batches, file':>20} | {'arrow batches, py4j bytes':>26} | "
              f"{'naive, 1 call/element':>22} | {'speed-up':>8}")
        print("-" * 98)
        for name, make in kinds.items():
            f = bridged(jvm, make, a.n, "file", a.batch_rows)
            b = bridged(jvm, make, a.n, "bytes", a.batch_rows)
            nv = naive(jvm, make, a.naive_n)
            print(f"{name:8} | {f:>15,.0f} el/s | {b:>21,.0f} el/s | {nv:>17,.0f} el/s | {f / nv:>7,.0f}x")


if __name__ == "__main__":
    main()
