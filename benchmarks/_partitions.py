"""Helpers of benchmarks/source.py for the endpoint rows: publishers served from processes of their
own, and the CPU seconds of a query's driver-side reader process.

A publisher in its own process keeps its CPU (making the batches, serving fetches) out of the
reader process's and out of the benchmark's own; the reader process is Spark's
``python_streaming_source_runner``, a child of the driver JVM, one per running query.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from typing import Any

CTX = mp.get_context("spawn")
TOKEN = "bench"
_TICK = os.sysconf("SC_CLK_TCK")


def serve_batches(conn: Any, name: str, batches: int, rows: int) -> None:
    """The child process: serve ``batches`` RecordBatches of ``rows`` rows as ``name`` (retention on,
    1 GiB), send the address, and serve until told to stop (or the benchmark is gone)."""
    import _baselines as base

    from rs_spark import net
    from rs_spark import streams as rs

    publisher = rs.range_(batches).pipe(rs.map(lambda i: base.make_batch(i, rows)))
    server = net.serve(publisher, name=name, token=TOKEN, retention=net.Retention(max_bytes=1 << 30))
    try:
        conn.send(server.address)
        try:
            conn.recv()
        except EOFError:
            pass
    finally:
        server.stop()


class Publishers:
    """``n`` publisher processes, partition ``p<i>`` serving ``batches`` batches of ``rows`` rows each."""

    def __init__(self, n: int, batches: int, rows: int) -> None:
        self._procs: list[tuple[Any, Any]] = []
        try:
            for i in range(n):
                parent, child = CTX.Pipe()
                p = CTX.Process(target=serve_batches, args=(child, f"p{i}", batches, rows), daemon=True)
                p.start()
                child.close()
                self._procs.append((p, parent))
            self.addresses = [self._address(p, conn) for p, conn in self._procs]
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _address(p: Any, conn: Any) -> str:
        if not conn.poll(120):
            raise RuntimeError(f"publisher process {p.pid} did not report its address in 120 s")
        return f"{conn.recv()}?codec=arrow"

    def endpoint(self) -> str:
        """Option endpoint: one address, or ``p<i>=address`` for each."""
        if len(self.addresses) == 1:
            return self.addresses[0]
        return ",".join(f"p{i}={a}" for i, a in enumerate(self.addresses))

    def stop(self) -> None:
        for _, conn in self._procs:
            try:
                conn.send("stop")
            except OSError:
                pass
        for p, conn in self._procs:
            p.join(20)
            if p.is_alive():
                p.kill()
                p.join(10)
            conn.close()


def _children(pid: int) -> list[int]:
    out = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out += [int(c) for c in f.read().split()]
        except OSError:
            continue
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def readers(jvm: int) -> set[int]:
    """The driver JVM's streaming source reader processes (one per running Python-source query)."""
    return {c for c in _children(jvm) if "python_streaming_source_runner" in _cmdline(c)}


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime: fields 14 and 15 of stat(5)


class ReaderWatch:
    """Samples the reader process's CPU while a query runs: ``cpu`` is what it used from the first
    non-empty micro-batch's end to the last sample (the steady state, as rows/s), ``rows`` the rows
    of the micro-batches after that one."""

    def __init__(self, jvm: int, before: set[int]) -> None:
        self._jvm, self._before = jvm, before
        self.pid: int | None = None
        self._start: float | None = None
        self._last: float | None = None
        self._after_batch = -1

    def sample(self, progress: dict | None) -> None:
        if self.pid is None:
            new = readers(self._jvm) - self._before
            self.pid = min(new) if new else None
        cpu = None if self.pid is None else cpu_seconds(self.pid)
        if cpu is None:
            return
        self._last = cpu
        if self._start is None and progress and progress["numInputRows"]:
            self._start, self._after_batch = cpu, int(progress["batchId"])

    def watch(self, query: Any, interval: float = 0.02) -> None:
        """Sample until the query ends."""
        while query.isActive:
            self.sample(query.lastProgress)
            time.sleep(interval)  # a sampling period: the reader's CPU counters are read from /proc

    def result(self, progress: list[dict]) -> tuple[float, int]:
        """(reader CPU seconds, rows) over the micro-batches after the first non-empty one."""
        if self._start is None or self._last is None:
            raise RuntimeError("the reader process of the query was not found, or no micro-batch was seen")
        rows = sum(p["numInputRows"] for p in progress if int(p["batchId"]) > self._after_batch)
        return self._last - self._start, rows
