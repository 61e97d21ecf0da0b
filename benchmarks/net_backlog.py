"""A server next to clients that ask and never read: its memory, measured in its own process, and a
reading client's throughput.

Run: ``.venv/bin/python benchmarks/net_backlog.py [--runs 3] [--clients 64]`` (a few minutes).
Prints one table. Each row is measured for the server as it is (``Limits()``: above
``reply_high_water_bytes`` of unread replies a connection is no longer read) and for the baseline,
in the same run: the same server with ``reply_high_water_bytes`` beyond reach, which reads and
answers everything a peer sends, as rs_spark.net did before that mark. Every measurement starts a
fresh server process (VmHWM is a peak; a server that served before would carry it):

1. one client sends 30,000 REQUEST_STREAMs for routes the server does not serve (each answered by an
   ERROR frame of about 1.1 KB: a 250-byte route of control characters, quoted) and never reads: the
   server's RSS growth (VmHWM at the end minus VmRSS before);
2. ``--clients`` such clients at once: the server's RSS growth and ``Server.outbound.peak``;
3. a client reading Arrow batches (64K int64 rows) from the same server next to them, and from a
   server without them: MB/s (median of 3 reads);
4. for comparison, a client that asks for everything on a data stream (the Arrow batches) and never
   reads: stream data is bounded by credit and ``Limits.high_water_bytes``, not by the reply mark, so
   both settings should show the same.

A client stops sending once the server has taken nothing for 10 s (it stopped reading that client);
the server's memory is read once it is idle (it has answered all it read).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOKEN = "backlog-bench-token"
REQUESTS = 30_000
ROUTE = "\x01" * 250  # quoted with repr() in the ERROR: 4 characters a byte
ROWS = 65536
BATCHES = 400  # 512 KiB each: 200 MiB a read
MIB = 1 << 20
OFF = 1 << 40  # reply_high_water_bytes for the baseline: never reached


# -- the server process ---------------------------------------------------------------------
def serve(limits_json: str) -> None:
    """Serve ``arrow`` (BATCHES batches per subscription); print the base address; answer ``peak``
    on stdin with Server.outbound.peak; stop at EOF."""
    import pyarrow as pa

    from rs_spark import net
    from rs_spark import streams as rs

    batch = pa.record_batch({"x": pa.array(range(ROWS), pa.int64())})
    limits = net.Limits(max_connections=1000, **json.loads(limits_json))
    server = net.Server("tcp://127.0.0.1:0", token=TOKEN, limits=limits)
    server.add_publisher("arrow", rs.defer(lambda: iter([batch] * BATCHES)))
    print(server.base_address, flush=True)
    for line in sys.stdin:
        if line.strip() == "peak":
            print(server.outbound.peak, flush=True)
    server.stop()


class Victim:
    """A server in its own process."""

    def __init__(self, limits: dict) -> None:
        self.p = subprocess.Popen(
            [sys.executable, __file__, "--serve", json.dumps(limits)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        self.base = self.p.stdout.readline().strip()
        self.port = int(self.base.rsplit(":", 1)[1])
        time.sleep(0.5)  # settled: what it holds before any client
        self.rss0 = self.status("VmRSS:")

    def status(self, key: str) -> float:
        with open(f"/proc/{self.p.pid}/status") as f:
            return int(next(line for line in f if line.startswith(key)).split()[1]) / 1024

    def cpu(self) -> float:
        with open(f"/proc/{self.p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def settle(self) -> None:
        """Wait until the server is idle (under 5% of a core for a second): it has done what the
        clients' bytes, already in its socket buffers, make it do."""
        before = self.cpu()
        while True:
            time.sleep(1.0)
            now = self.cpu()
            if now - before < 0.05:
                return
            before = now

    def growth(self) -> float:
        return self.status("VmHWM:") - self.rss0

    def peak(self) -> int:
        self.p.stdin.write("peak\n")
        self.p.stdin.flush()
        return int(self.p.stdout.readline())

    def stop(self) -> None:
        self.p.stdin.close()
        self.p.wait(60)


# -- the clients ----------------------------------------------------------------------------
def _raw(parts) -> bytes:
    return b"".join(bytes(p) for p in parts)


def attack(port: int) -> socket.socket:
    """Set up, ask for REQUESTS unknown routes, never read; returns the socket (still open)."""
    from rs_spark.net.protocol import frames as F
    from rs_spark.net.protocol import metadata as M
    from rs_spark.net.protocol.auth import setup_metadata

    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.settimeout(10.0)
    route = M.request_metadata(M.COMPOSITE, ROUTE)
    try:
        s.sendall(_raw(F.encode_setup(60000, 120000, M.COMPOSITE, "application/json", metadata=setup_metadata(TOKEN))))
        for first in range(0, REQUESTS, 500):
            s.sendall(
                b"".join(
                    _raw(F.encode_request(F.REQUEST_STREAM, 2 * i + 1, 1, metadata=route))
                    for i in range(first, first + 500)
                )
            )
    except OSError:  # TimeoutError: the server stopped reading us; else it closed us
        pass
    return s


def attack_all(port: int, clients: int) -> list[socket.socket]:
    socks: list[socket.socket] = []
    threads = [threading.Thread(target=lambda: socks.append(attack(port))) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return socks


def ask_for_data(port: int) -> socket.socket:
    """Set up (Arrow), ask for every batch of ``arrow``, never read; returns the socket (still open)."""
    from rs_spark.net.protocol import frames as F
    from rs_spark.net.protocol import metadata as M
    from rs_spark.net.protocol.auth import setup_metadata
    from rs_spark.net.protocol.codecs import ARROW_MIME

    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(_raw(F.encode_setup(60000, 120000, M.COMPOSITE, ARROW_MIME, metadata=setup_metadata(TOKEN))))
    s.sendall(
        _raw(F.encode_request(F.REQUEST_STREAM, 1, F.MAX_REQUEST_N, metadata=M.request_metadata(M.COMPOSITE, "arrow")))
    )
    return s


def read_rate(base: str) -> float:
    """MB/s of one read of ``arrow`` (BATCHES batches)."""
    from rs_spark import net
    from rs_spark import streams as rs

    got = [0]
    done = threading.Event()
    sub = rs.CallbackSubscriber(
        lambda b: got.__setitem__(0, got[0] + b.nbytes),
        on_complete=done.set,
        on_error=lambda e: done.set(),
        request_size=8,
    )
    t0 = time.perf_counter()
    net.connect(f"{base}/arrow?token={TOKEN}", codec="arrow", batch_rows=ROWS).subscribe(sub)
    if not done.wait(300):
        raise RuntimeError("the reading client did not finish in 300 s")
    sub.wait(0)
    return got[0] / (time.perf_counter() - t0) / 1e6


def median_read(base: str) -> float:
    read_rate(base)  # warm-up: the connection's first batches
    return statistics.median(read_rate(base) for _ in range(3))


# -- one run --------------------------------------------------------------------------------
def run(limits: dict, clients: int) -> dict[str, float]:
    out: dict[str, float] = {}
    v = Victim(limits)
    try:
        socks = [attack(v.port)]
        v.settle()
        out["one"] = v.growth()
        for s in socks:
            s.close()
    finally:
        v.stop()
    v = Victim(limits)
    try:
        socks = attack_all(v.port, clients)
        v.settle()
        out["many"] = v.growth()
        out["peak"] = v.peak() / MIB
        out["next_to"] = median_read(v.base)
        for s in socks:
            s.close()
    finally:
        v.stop()
    v = Victim(limits)
    try:
        out["alone"] = median_read(v.base)
    finally:
        v.stop()
    v = Victim(limits)
    try:
        s = ask_for_data(v.port)
        v.settle()
        out["data"] = v.growth()
        s.close()
    finally:
        v.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--serve")
    a = ap.parse_args()
    if a.serve is not None:
        serve(a.serve)
        return
    from rs_spark.net import Limits

    ours: list[dict[str, float]] = []
    base: list[dict[str, float]] = []
    for _ in range(a.runs):  # in turn: a noisy moment of the shared machine hits both
        ours.append(run({}, a.clients))
        base.append(run({"reply_high_water_bytes": OFF}, a.clients))
    rows = [
        ("one client that never reads: server RSS growth, MiB", "one", ".1f"),
        (f"{a.clients} such clients at once: server RSS growth, MiB", "many", ".1f"),
        (f"{a.clients} such clients: Server.outbound.peak, MiB", "peak", ".1f"),
        ("a reading client, alone: MB/s", "alone", ".0f"),
        (f"a reading client next to the {a.clients}: MB/s", "next_to", ".0f"),
        ("a client asking for all of a data stream, never reading: RSS growth, MiB", "data", ".1f"),
    ]

    def cell(runs: list[dict[str, float]], key: str, fmt: str) -> str:
        xs = sorted(r[key] for r in runs)
        return f"{statistics.median(xs):{fmt}} [{xs[0]:{fmt}}-{xs[-1]:{fmt}}]"

    print(f"{'measurement':<74} {'ours':>22} {'baseline (no reply mark)':>26}")
    for label, key, fmt in rows:
        print(f"{label:<74} {cell(ours, key, fmt):>22} {cell(base, key, fmt):>26}")
    lim = Limits()
    print(
        f"(median [min-max] of {a.runs} runs, run in turn; ours: Limits() defaults, reply_high_water_bytes="
        f"{lim.reply_high_water_bytes // 1024} KiB, server budget max_server_backlog_bytes="
        f"{lim.max_server_backlog_bytes // MIB} MiB; each client: {REQUESTS} REQUEST_STREAMs for an unknown "
        f"250-byte route, SO_RCVBUF 4096, never reads; reads: {BATCHES} Arrow batches of {ROWS} int64 rows)"
    )


if __name__ == "__main__":
    main()
