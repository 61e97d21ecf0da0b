"""End-to-end latency through Spark: publisher on_next -> subscriber on_next.

    .venv/bin/python benchmarks/latency.py [--seconds 60] [--rate 20]

A Publisher in this process emits {"id", "t"} at a low steady rate (``--rate`` per second,
stamped with time.time() as it is emitted); Spark reads it with format("reactive") (endpoint
mode), and writes it with format("reactive") into a Subscriber in this process, which computes
now - t per element. One table: p50, p90, p99, max, next to the same Publisher read directly by a
Subscriber in-process (no Spark: the floor). Trigger: as fast as possible (processingTime 0),
pollTimeout 50ms, local[2]. The first 10 s are warm-up and not counted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time


def percentiles(xs):
    xs = sorted(xs)
    if not xs:
        return {}
    q = lambda p: xs[min(len(xs) - 1, int(p * len(xs)))]  # noqa: E731
    return {"n": len(xs), "p50": q(0.50), "p90": q(0.90), "p99": q(0.99), "max": xs[-1], "mean": statistics.fmean(xs)}


def ticking(rate: float):
    from rs_spark.streams import Overflow, create

    def run(emitter):
        stop = threading.Event()
        emitter.on_cancel(stop.set)

        def loop():
            i = 0
            nxt = time.time()
            while not stop.is_set():
                emitter.next({"id": i, "t": time.time()})
                i += 1
                nxt += 1.0 / rate
                time.sleep(max(0.0, nxt - time.time()))

        threading.Thread(target=loop, daemon=True).start()

    return create(run, Overflow.ERROR, buffer_size=100_000)


class Lat:
    def __init__(self, warmup_until: float):
        self.warmup_until = warmup_until
        self.recording = True  # False once the run ends: what the stop holds back is not measured
        self.lat = []

    def on_subscribe(self, s):
        self.s = s
        s.request(2**62)

    def on_next(self, row):
        now = time.time()
        if self.recording and row["t"] >= self.warmup_until:
            self.lat.append(now - row["t"])

    def on_error(self, e):
        print("subscriber error:", e)

    def on_complete(self):
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rate", type=float, default=20)
    a = ap.parse_args()

    import rs_spark
    from rs_spark.examples.spark_log import quiet_conf
    from rs_spark.examples.stopping import Brake, stop_at_batch_end
    from rs_spark.spark import local_session

    # Floor: the same publisher straight into the subscriber.
    floor = Lat(time.time() + 1)
    pub = ticking(a.rate)
    pub.subscribe(floor)
    time.sleep(6)
    floor.s.cancel()

    work = tempfile.mkdtemp(prefix="rs-bench-latency-")  # Spark's log configuration, the checkpoint
    spark = local_session(
        "rs_spark-latency", **quiet_conf(work, "ERROR"), **{"spark.sql.streaming.pollingDelay": "5ms"}
    )
    t0 = time.time()
    sub = Lat(t0 + 10)
    brake = Brake(sub)  # to stop at the end of a micro-batch: Spark then has nothing to abort
    df = rs_spark.read_stream(spark, ticking(a.rate), schema="id LONG, t DOUBLE", pollTimeout="50ms")
    q = rs_spark.write_stream(
        df, brake, checkpoint=os.path.join(work, "checkpoint"), trigger={"processingTime": "0 seconds"}
    )
    time.sleep(a.seconds)
    sub.recording = False
    stop_at_batch_end(q, brake)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    rows = [
        ("Spark: reactive source -> reactive sink", percentiles(sub.lat)),
        ("floor: publisher -> subscriber, no Spark", percentiles(floor.lat)),
    ]
    print(f"end-to-end latency at {a.rate:g} elements/s, local[2], {a.seconds:g} s (first 10 s not counted); ms")
    print(f"{'path':<44} {'n':>6} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8}")
    print("-" * 86)
    for name, p in rows:
        print(f"{name:<44} {p['n']:>6} " + " ".join(f"{p[k] * 1000:>8.1f}" for k in ("p50", "p90", "p99", "max")))
    p50 = rows[0][1]["p50"]
    print(f"p50 through Spark = {p50 * 1000:.0f} ms (target <= 1000 ms)")


if __name__ == "__main__":
    main()
