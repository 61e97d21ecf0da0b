"""Elements/s through range -> map -> filter -> subscriber, measured in one run.

    .venv/bin/python benchmarks/streams.py [--n 1000000] [--repeat 5]

Rows: rs_spark with fusion (what ``range_(n).pipe(map, filter)`` builds), rs_spark with every
operator a separate Processor (no fusion), a plain generator pipeline doing the same work
(the ceiling for Python), a plain loop handing each element of the same map/filter to the same
subscriber's ``on_next`` (the ceiling for any Publisher that calls a Python ``on_next`` per
element), and the equivalent ReactiveX pipeline (no backpressure at all).
The subscriber requests ``k`` elements and asks for ``k`` more after each ``k`` received.
Every row is measured ``--repeat`` times, the rows interleaved (a noisy moment of the shared
machine hits one run of each, not all of one); the table shows the median [range] and the
median of the per-run ratios to the generator; elements/s counts source elements.
"""

from __future__ import annotations

import argparse
import builtins
import gc
import statistics
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


def run_loop(n: int, k: int) -> int:
    """The same map/filter, each element handed to the subscriber's on_next by a bare loop."""
    s = BatchRequester(k)
    s.on_subscribe(_NoDemand())
    on_next = s.on_next
    for y in builtins.filter(p, builtins.map(f, range(n))):
        on_next(y)
    return s.count


class _NoDemand:
    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


def run_reactivex(n: int) -> int:
    import reactivex
    from reactivex import operators as ops

    box = [0]

    def on_next(_):  # type: ignore[no-untyped-def]
        box[0] += 1

    reactivex.range(n).pipe(ops.map(f), ops.filter(p)).subscribe(on_next)
    return box[0]


def rate(fn: Callable[[], int], n: int) -> float:
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return n / (time.perf_counter() - t0)


def cases(n: int) -> list[tuple[str, str, Callable[[], int]]]:
    out: list[tuple[str, str, Callable[[], int]]] = []
    for k in (1, 64, 1024):
        for fused in (True, False):
            assert run_rs(min(n, 1000), k, fused) == run_generator(min(n, 1000))
            name = f"rs_spark {'fused' if fused else 'unfused (3 Processors)'}"
            out.append((name, f"request({k})", lambda k=k, fused=fused: run_rs(n, k, fused)))
    out.append(("plain loop calling on_next", "request(1024)", lambda: run_loop(n, 1024)))
    out.append(("plain generator pipeline (ceiling)", "-", lambda: run_generator(n)))
    try:
        assert run_reactivex(1000) == run_generator(1000)
        out.append(("reactivex 4 (no backpressure)", "-", lambda: run_reactivex(n)))
    except ImportError:
        pass
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000, help="source elements per run")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n, rep = args.n, args.repeat
    expected = run_generator(n)
    rows = cases(n)
    rates: list[list[float]] = [[] for _ in rows]
    for _ in range(rep):
        for i, (_, _, fn) in enumerate(rows):
            rates[i].append(rate(fn, n))
    gen = rates[[name for name, _, _ in rows].index("plain generator pipeline (ceiling)")]
    print(f"range({n:,}) -> map(x*2) -> filter(x%3) -> subscriber; {expected:,} elements delivered; {rep} runs")
    print(f"{'pipeline':<40} {'demand':<14} {'elements/s, median [range]':>36} {'vs generator':>13}")
    print("-" * 107)
    for (name, demand, _), rs_ in zip(rows, rates, strict=True):
        med = statistics.median(rs_)
        spread = f"{med:,.0f} [{min(rs_):,.0f}-{max(rs_):,.0f}]"
        vs = statistics.median(x / g for x, g in zip(rs_, gen, strict=True))
        print(f"{name:<40} {demand:<14} {spread:>36} {vs:>12.0%}")


if __name__ == "__main__":
    main()
