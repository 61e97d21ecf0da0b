"""Soak: an infinite fast Publisher into a slow Subscriber through Spark, for minutes.

    .venv/bin/python benchmarks/soak.py [--minutes 10]

The source reads tests' ``endless`` publisher (factory mode, never pauses) with
maxRecordsPerTrigger 5000 and maxBufferedRecords 20000; the sink delivers into a Subscriber in
this process that takes about 3000 rows/s (100 rows per request, 30 ms per request). Every 10 s
it samples the resident memory (RSS, from /proc) of the driver JVM, the source's reader process,
the other Python workers, and this process (the sink's endpoint), and the buffered counts:
elements buffered in the source (<= maxBufferedRecords) and rows held by the sink hub
(<= one record batch). Prints one table of samples and the first-third vs last-third RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_BUFFERED = 20_000


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    return kids


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def _cmd(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def rss_by_role() -> dict[str, float]:
    """RSS in MB: this process (sink endpoint), the driver JVM, the reader process, other workers."""
    kids = _children()
    out = {"endpoint": _rss_mb(os.getpid()), "jvm": 0.0, "reader": 0.0, "workers": 0.0}
    stack = list(kids.get(os.getpid(), []))
    while stack:
        pid = stack.pop()
        stack.extend(kids.get(pid, []))
        cmd = _cmd(pid)
        if "java" in cmd.split(" ")[0]:
            out["jvm"] += _rss_mb(pid)
        elif "streaming_source_runner" in cmd or "python_streaming" in cmd:
            out["reader"] += _rss_mb(pid)
        elif "python" in cmd:
            out["workers"] += _rss_mb(pid)
    return out


class SlowSubscriber:
    def __init__(self, chunk: int = 100, pause: float = 0.03) -> None:
        self.chunk, self.pause = chunk, pause
        self.rows = 0
        self.error = None
        self._left = 0

    def on_subscribe(self, s) -> None:
        self.s = s
        self._left = self.chunk
        s.request(self.chunk)

    def on_next(self, row) -> None:
        self.rows += 1
        self._left -= 1
        if self._left == 0:
            time.sleep(self.pause)
            self._left = self.chunk
            self.s.request(self.chunk)

    def on_error(self, e) -> None:
        self.error = e

    def on_complete(self) -> None:
        pass


def soak(minutes: float, every: float = 10.0, out=sys.stdout) -> dict[str, object]:
    """Run the soak; return samples and the largest buffered counts seen."""
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [ROOT, os.environ.get("PYTHONPATH")] if p)
    import rs_spark
    from rs_spark.examples.spark_log import quiet_conf
    from rs_spark.examples.stopping import Brake, stop_at_batch_end
    from rs_spark.spark import local_session

    work = tempfile.mkdtemp(prefix="rs-bench-soak-")  # Spark's log configuration, the checkpoint
    spark = local_session("rs_spark-soak", **quiet_conf(work, "ERROR"))
    df = (
        spark.readStream.format("reactive")
        .schema("id LONG, name STRING, price DOUBLE")
        .option("publisher", "tests.spark.publishers:endless")
        .option("maxRecordsPerTrigger", "5000")
        .option("maxBufferedRecords", str(MAX_BUFFERED))
        .option("failOnDataLoss", "false")
        .load()
    )
    sub = SlowSubscriber()
    brake = Brake(sub)  # to stop at the end of a micro-batch: Spark then has nothing to abort
    q = rs_spark.write_stream(
        df, brake, checkpoint=os.path.join(work, "checkpoint"), trigger={"processingTime": "500 milliseconds"}
    )
    hub = rs_spark.sink_state(q).hub
    samples: list[dict[str, float]] = []
    max_hub = 0
    stop = threading.Event()

    def watch_hub() -> None:
        nonlocal max_hub
        while not stop.is_set():
            max_hub = max(max_hub, hub.stats().buffered)
            stop.wait(0.05)

    threading.Thread(target=watch_hub, daemon=True).start()
    t0 = time.time()
    print(
        f"{'t (s)':>6} {'rows':>9} {'src buffered':>13} {'hub held':>9} {'endpoint MB':>12} {'jvm MB':>8} "
        f"{'reader MB':>10} {'workers MB':>11}",
        file=out,
    )
    try:
        while time.time() - t0 < minutes * 60:
            time.sleep(every)
            if q.exception() is not None:
                raise RuntimeError(f"the soak query failed: {q.exception()}")
            p = q.lastProgress or {}
            lo = (p.get("sources") or [{}])[0].get("latestOffset") or "{}"
            m = json.loads(lo) if isinstance(lo, str) else dict(lo)
            s = {
                "t": time.time() - t0,
                "rows": sub.rows,
                "src_buffered": m.get("bufferedElements", 0),
                "hub": hub.stats().buffered,
                **rss_by_role(),
            }
            samples.append(s)
            print(
                f"{s['t']:>6.0f} {s['rows']:>9} {s['src_buffered']:>13} {s['hub']:>9} {s['endpoint']:>12.1f} "
                f"{s['jvm']:>8.1f} {s['reader']:>10.1f} {s['workers']:>11.1f}",
                file=out,
                flush=True,
            )
    finally:
        stop.set()
        stop_at_batch_end(q, brake)
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    third = max(1, len(samples) // 3)
    growth = {}
    for role in ("endpoint", "jvm", "reader", "workers"):
        early = sum(x[role] for x in samples[third : 2 * third]) / max(1, len(samples[third : 2 * third]))
        late = sum(x[role] for x in samples[-third:]) / third
        growth[role] = (early, late)
    print(
        "mean RSS, middle third -> last third: "
        + ", ".join(f"{k} {a:.0f} -> {b:.0f} MB" for k, (a, b) in growth.items()),
        file=out,
    )
    print(
        f"most buffered in the source: {max(x['src_buffered'] for x in samples)} (bound {MAX_BUFFERED}); most held "
        f"by the sink hub: {max_hub} rows; {sub.rows} rows delivered",
        file=out,
    )
    return {"samples": samples, "growth": growth, "max_hub": max_hub, "rows": sub.rows, "error": sub.error}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10)
    a = ap.parse_args()
    soak(a.minutes)


if __name__ == "__main__":
    main()
