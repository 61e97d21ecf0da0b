"""What TLS costs per hop in Python: round trips of a small message over loopback.

    .venv/bin/python benchmarks/tls_hop.py [--messages 20000] [--runs 3]

An echo server in a child process and a client here exchange ``--messages`` messages of 100 bytes
(a real-time row or two, as frames carry them), one at a time; a round trip is two hops. Rows:
plain TCP (the baseline), rs_spark's :class:`~rs_spark.net.protocol.tls.TlsSocket` (TLS in memory on
the caller's threads, both ends), and the standard library's ``ssl.SSLSocket`` (both ends); then the
JVM's side of a real-time hop (``benchmarks/java/TlsHop.java``, run with ``java``: a JDK ``Socket``
against the plain server, a JDK ``SSLSocket`` made as the shim's ``Transport`` makes it against the
``TlsSocket`` server; ``--no-jvm`` leaves them out). Each runs ``--runs`` times in turn; the table shows
the median over runs of each run's p50 and p99, with the spread. TLS's cost per hop is half the
difference of the round trips (the JVM rows against the JVM's plain row).

On this machine a round trip between idle processes is mostly the wake-up of an idle core (about
30 µs); run it with another process keeping one core busy to see TLS's own cost.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZE = 100
KINDS = ("plain TCP", "rs_spark TlsSocket", "ssl.SSLSocket")
# The JVM client against the Python server, as a real-time hop runs: (row, the server's kind, the client's)
JVM_KINDS = (("JDK Socket", "plain TCP", "tcp"), ("JDK SSLSocket", "rs_spark TlsSocket", "tls"))
JAR = ROOT / "rs_spark" / "jvm" / "jars" / "rs-spark-jvm.jar"


def _contexts(cert: str, key: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    return server, ssl.create_default_context(cafile=cert)


def echo_server(conn: Any, cert: str, key: str) -> None:
    from rs_spark.net.protocol.tls import Sock, tls_server

    sctx, _ = _contexts(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    conn.send(listener.getsockname()[1])
    for kind in iter(conn.recv, None):
        raw, _ = listener.accept()
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock: Sock
        if kind == "rs_spark TlsSocket":
            sock = tls_server(raw, sctx, "client", 10.0)
        elif kind == "ssl.SSLSocket":
            sock = sctx.wrap_socket(raw, server_side=True)
        else:
            sock = raw
        buf = bytearray(4096)
        while n := sock.recv_into(buf):
            sock.sendall(bytes(buf[:n]))
        sock.close()


def _client(kind: str, port: int, cctx: ssl.SSLContext) -> Any:
    from rs_spark.net.protocol.tls import tls_client

    raw = socket.create_connection(("127.0.0.1", port))
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if kind == "rs_spark TlsSocket":
        return tls_client(raw, cctx, "127.0.0.1", "server", 10.0)
    if kind == "ssl.SSLSocket":
        return cctx.wrap_socket(raw, server_hostname="127.0.0.1")
    return raw


def round_trips(sock: Any, messages: int) -> tuple[float, float]:
    """p50 and p99 of the round trips, in microseconds (the first 10% not counted)."""
    msg, buf = b"x" * SIZE, bytearray(4096)
    rtts = []
    for _ in range(messages):
        t0 = time.perf_counter_ns()
        sock.sendall(msg)
        got = 0
        while got < SIZE:
            got += sock.recv_into(buf)
        rtts.append(time.perf_counter_ns() - t0)
    rtts = sorted(rtts[messages // 10 :])
    return rtts[len(rtts) // 2] / 1000, rtts[int(len(rtts) * 0.99)] / 1000


def jvm_round_trips(port: int, kind: str, cafile: str, messages: int) -> tuple[float, float]:
    """p50 and p99 of the JVM client's round trips (benchmarks/java/TlsHop.java), in microseconds."""
    cmd = ["java", "-cp", str(JAR), str(ROOT / "benchmarks" / "java" / "TlsHop.java")]
    out = subprocess.run(
        [*cmd, str(port), kind, cafile, str(messages), str(SIZE)], check=True, capture_output=True, text=True
    )
    p50, p99, suite = out.stdout.split(maxsplit=2)
    if kind == "tls":
        print(f"JVM client's TLS: {suite.strip()}")
    return float(p50), float(p99)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-jvm", action="store_true", help="only the Python clients")
    a = ap.parse_args()
    from tests.certs import make_self_signed

    cert, key = make_self_signed(Path(tempfile.mkdtemp(prefix="rs-bench-tls-")))
    _, cctx = _contexts(cert, key)
    parent, child = mp.get_context("spawn").Pipe()
    server = mp.get_context("spawn").Process(target=echo_server, args=(child, cert, key), daemon=True)
    server.start()
    port = parent.recv()
    jvm = () if a.no_jvm else JVM_KINDS
    results: dict[str, list[tuple[float, float]]] = {k: [] for k in (*KINDS, *(row for row, _, _ in jvm))}
    for _ in range(a.runs):
        for kind in KINDS:
            parent.send(kind)
            sock = _client(kind, port, cctx)
            results[kind].append(round_trips(sock, a.messages))
            sock.close()
        for row, server_kind, client_kind in jvm:
            parent.send(server_kind)
            results[row].append(jvm_round_trips(port, client_kind, cert, a.messages))
    parent.send(None)
    server.join(10)
    print(f"round trips of one {SIZE}-byte message over loopback, {a.messages} per run, {a.runs} runs; microseconds")
    print(f"{'transport':<22} {'p50':>8} {'p50 spread':>16} {'p99':>8} {'p99 spread':>16} {'TLS per hop, p50':>17}")
    bases = {k: statistics.median(p50 for p50, _ in results[k]) for k in ("plain TCP", "JDK Socket") if results.get(k)}
    for kind, runs in results.items():
        p50s, p99s = [r[0] for r in runs], [r[1] for r in runs]
        p50 = statistics.median(p50s)
        base = bases["JDK Socket" if kind.startswith("JDK") else "plain TCP"]
        hop = f"{(p50 - base) / 2:+.1f}" if kind not in bases else "-"
        print(
            f"{kind:<22} {p50:>8.1f} {f'[{min(p50s):.1f}-{max(p50s):.1f}]':>16} {statistics.median(p99s):>8.1f}"
            f" {f'[{min(p99s):.1f}-{max(p99s):.1f}]':>16} {hop:>17}"
        )


if __name__ == "__main__":
    main()
