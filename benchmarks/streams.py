"""Elements/s through range -> map -> filter -> subscriber, measured in one run.

    .venv/bin/python benchmarks/streams.py [--n 1000000] [--repeat 3]

Rows: rs_spark with fusion (what ``range_(n).pipe(map, filter)`` builds), rs_spark with every
operator a separate Processor (no fusion), a plain generator pipeline doing the same work
(the ceiling for Python), and the equivalent ReactiveX pipeline (no backpressure at all).
The subscriber requests ``k`` elements and asks for ``k`` more after each ``k`` received.
Best of ``--repeat`` runs; elements/s counts source elements.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

from rs_spark import streams as rs
from rs_spark.streams.pipeline import PipedPublisher


def f(x: int) -> int:
    return x * 2


def p(x: int) -> bool:
    return x % 3 != 0


class BatchRequester:
    """Requests ``k``, then ``k`` more after each ``k`` elements (request(1) when k == 1)."""

    __slots__ = ("k", "left", "sub", "count", "done")

    def __init__(self, k: int) -> None:
        self.k = k
        self.left = k
        self.count = 0
        self.done = False

    def on_subscribe(self, sub):  # type: ignore[no-untyped-def]
        self.sub = sub
        sub.request(self.k)

    def on_next(self, item):  # type: ignore[no-untyped-def]
        self.count += 1
        left = self.left - 1
        if left == 0:
            self.left = self.k
            self.sub.request(self.k)
        else:
            self.left = left

    def on_error(self, e):  # type: ignore[no-untyped-def]
        raise e

    def on_complete(self):  # type: ignore[no-untyped-def]
        self.done = True


def run_rs(n: int, k: int, fused: bool) -> int:
    if fused:
        pub = rs.range_(n).pipe(rs.map(f), rs.filter(p))
    else:
        pub = PipedPublisher(rs.range_(n), [rs.map(f), rs.filter(p)])
    s = BatchRequester(k)
    pub.subscribe(s)
    assert s.done
    return s.count


def run_generator(n: int) -> int:
    count = 0
    for _ in (y for y in (f(x) for x in range(n)) if p(y)):
        count += 1
    return count


def run_reactivex(n: int) -> int:
    import reactivex
    from reactivex import operators as ops

    box = [0]

    def on_next(_):  # type: ignore[no-untyped-def]
        box[0] += 1

    reactivex.range(n).pipe(ops.map(f), ops.filter(p)).subscribe(on_next)
    return box[0]


def best_rate(fn: Callable[[], int], n: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000, help="source elements per run")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n, rep = args.n, args.repeat
    expected = run_generator(n)

    rows: list[tuple[str, str, float]] = []
    for k in (1, 64, 1024):
        for fused in (True, False):
            assert run_rs(min(n, 1000), k, fused) == run_generator(min(n, 1000))
            rate = best_rate(lambda k=k, fused=fused: run_rs(n, k, fused), n, rep)
            rows.append((f"rs_spark {'fused' if fused else 'unfused (3 Processors)'}", f"request({k})", rate))
    rows.append(("plain generator pipeline (ceiling)", "-", best_rate(lambda: run_generator(n), n, rep)))
    try:
        assert run_reactivex(1000) == run_generator(1000)
        rows.append(("reactivex 4 (no backpressure)", "-", best_rate(lambda: run_reactivex(n), n, rep)))
    except ImportError:
        rows.append(("reactivex (not installed: pip install reactivex)", "-", float("nan")))

    ceiling = rows[-2][2]
    print(f"range({n:,}) -> map(x*2) -> filter(x%3) -> subscriber; {expected:,} elements delivered; best of {rep}")
    print(f"{'pipeline':<40} {'demand':<14} {'elements/s':>14} {'vs generator':>13}")
    print("-" * 84)
    for name, demand, rate in rows:
        print(f"{name:<40} {demand:<14} {rate:>14,.0f} {rate / ceiling:>12.0%}")


if __name__ == "__main__":
    main()
