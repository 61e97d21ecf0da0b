"""rs_spark.net throughput over loopback TCP, publisher and subscriber in separate processes.

Run: ``.venv/bin/python benchmarks/net.py [--no-rsocket]`` (about a minute). Prints one table,
measured in this run (Arrow and ceiling rows: the median of ``REPEAT`` runs of ``BATCHES`` batches
each, since one run of a few hundred milliseconds on a shared 2-core machine is mostly noise; each
rs_spark run is followed by a raw-socket run and the ratio of each pair is printed too, so a load
change between the two halves of the benchmark does not make the ratio):

* rs_spark.net per-element payloads (JSON ints), and Arrow-batch payloads (int64 column; string
  column) at 64K rows per batch;
* the ceiling: a raw socket carrying the same Arrow IPC bytes (serialize in the sender process,
  length prefix, decode in the receiver, exactly as rs_spark.net does) with no flow control;
* the ``rsocket`` package (rsocket-py) client and server carrying the same per-element JSON and
  the same Arrow IPC bytes, for the own-frames-or-package decision.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import os  # noqa: E402
import resource  # noqa: E402
from collections.abc import Callable  # noqa: E402

import pyarrow as pa  # noqa: E402

ROWS = 65536
BATCHES = int(os.environ.get("RS_NET_BENCH_BATCHES", "1000"))  # 512 KiB each for int64: 0.5 GB per run
REPEAT = int(os.environ.get("RS_NET_BENCH_REPEAT", "5"))
RSOCKET_BATCHES = 200  # the rsocket package is ~10x slower: fewer batches, same rate
ELEMENTS = 200_000


def make_batch(kind: str) -> pa.RecordBatch:
    if kind == "int64":
        return pa.record_batch({"x": pa.array(range(ROWS), pa.int64())})
    return pa.record_batch({"s": pa.array([f"sensor-{i % 1000}-reading-{i}" for i in range(ROWS)])})


# -- child processes ---------------------------------------------------------------------
def rs_server(conn) -> None:
    from rs_spark import net
    from rs_spark import streams as rs

    server = net.Server()
    server.add_publisher("ints", rs.range_(ELEMENTS))
    for kind in ("int64", "string"):
        b = make_batch(kind)
        server.add_publisher(kind, rs.defer(lambda b=b: iter([b] * BATCHES)))
    conn.send(server.base_address)
    conn.recv()  # until the parent is done
    server.stop()


def raw_sender(conn, kind: str) -> None:
    b = make_batch(kind)
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    conn.send(lsock.getsockname()[1])
    schema = b.schema.serialize()
    for _ in range(REPEAT + 1):  # one connection per measurement (the first is a warm-up)
        c, _ = lsock.accept()
        for _ in range(BATCHES):
            body = b.serialize()  # the same per-batch work as rs_spark.net's Arrow codec
            n = len(schema) + body.size + 8
            c.sendmsg([n.to_bytes(4, "big"), schema, body, b"\xff\xff\xff\xff\x00\x00\x00\x00"])
        c.sendall((0).to_bytes(4, "big"))
        c.close()


def rsocket_py_server(conn, what: str) -> None:
    from rsocket.payload import Payload
    from rsocket.routing.request_router import RequestRouter
    from rsocket.routing.routing_request_handler import RoutingRequestHandler
    from rsocket.rsocket_server import RSocketServer
    from rsocket.streams.stream_from_generator import StreamFromGenerator
    from rsocket.transports.tcp import TransportTCP

    router = RequestRouter()

    @router.stream("ints")
    async def ints():
        def gen():
            for i in range(ELEMENTS):
                yield Payload(json.dumps(i).encode()), i == ELEMENTS - 1

        return StreamFromGenerator(gen)

    @router.stream("arrow")
    async def arrow():
        b = make_batch(what)
        schema = b.schema.serialize().to_pybytes()

        def gen():
            for i in range(RSOCKET_BATCHES):
                yield (
                    Payload(schema + b.serialize().to_pybytes() + b"\xff\xff\xff\xff\x00\x00\x00\x00"),
                    i == RSOCKET_BATCHES - 1,
                )

        return StreamFromGenerator(gen)

    async def main():
        async def session(reader, writer):
            RSocketServer(TransportTCP(reader, writer), handler_factory=lambda: RoutingRequestHandler(router))

        srv = await asyncio.start_server(session, "127.0.0.1", 0)
        conn.send(srv.sockets[0].getsockname()[1])
        async with srv:
            await asyncio.get_running_loop().run_in_executor(None, conn.recv)

    asyncio.run(main())


# -- measurements (this process is the subscriber) ----------------------------------------
def measure_rs(address: str, codec: str, request: int):
    from rs_spark import net
    from rs_spark import streams as rs

    count = [0, 0]  # elements (rows), bytes
    done = threading.Event()

    def on_next(x):
        if codec == "arrow":
            count[0] += x.num_rows
            count[1] += x.nbytes
        else:
            count[0] += 1

    t0 = time.perf_counter()
    sub = rs.CallbackSubscriber(on_next, on_complete=done.set, on_error=lambda e: done.set(), request_size=request)
    net.connect(address, codec=codec, batch_rows=ROWS).subscribe(sub)
    done.wait(300)
    sub.wait(0)
    dt = time.perf_counter() - t0
    return count[0], count[1], dt


def measure_raw(port: int):
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb", buffering=0)
    rows = nbytes = 0
    t0 = time.perf_counter()
    while True:
        hdr = f.read(4)
        n = int.from_bytes(hdr, "big")
        if n == 0:
            break
        buf = bytearray(n)
        mv = memoryview(buf)
        got = 0
        while got < n:
            got += s.recv_into(mv[got:])
        b = pa.ipc.open_stream(pa.py_buffer(buf)).read_next_batch()
        rows += b.num_rows
        nbytes += b.nbytes
    return rows, nbytes, time.perf_counter() - t0


def measure_rsocket_py(port: int, route_name: str, arrow: bool):
    from rsocket.awaitable.awaitable_rsocket import AwaitableRSocket
    from rsocket.extensions.helpers import composite, route
    from rsocket.extensions.mimetypes import WellKnownMimeTypes
    from rsocket.helpers import single_transport_provider
    from rsocket.payload import Payload
    from rsocket.rsocket_client import RSocketClient
    from rsocket.transports.tcp import TransportTCP

    async def run():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        async with RSocketClient(
            single_transport_provider(TransportTCP(reader, writer)),
            metadata_encoding=WellKnownMimeTypes.MESSAGE_RSOCKET_COMPOSITE_METADATA,
        ) as client:
            t0 = time.perf_counter()
            payloads = await AwaitableRSocket(client).request_stream(
                Payload(metadata=composite(route(route_name))), limit_rate=4096 if not arrow else 4
            )
            rows = nbytes = 0
            for p in payloads:
                if arrow:
                    b = pa.ipc.open_stream(pa.py_buffer(p.data)).read_next_batch()
                    rows += b.num_rows
                    nbytes += b.nbytes
                else:
                    json.loads(p.data)
                    rows += 1
            return rows, nbytes, time.perf_counter() - t0

    return asyncio.run(run())


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _with_cpu(sender_pid: int, measure: Callable[[], tuple]) -> tuple:
    """``measure()``'s (rows, bytes, seconds), and the receiver's and the sender's CPU seconds."""
    c0, s0 = _own_cpu(), _cpu_of(sender_pid)
    n, nb, dt = measure()
    return n, nb, dt, _own_cpu() - c0, _cpu_of(sender_pid) - s0


def _median(label: str, runs):
    """The run with the median rate (rows/s) of ``runs`` ((rows, bytes, seconds) each)."""
    n, nb, dt = sorted(runs, key=lambda r: r[0] / r[2])[len(runs) // 2][:3]
    return (label, n, nb, dt)


def arrow_paired(base: str, server_pid: int) -> tuple[list[tuple], dict[str, list[float]], list[str]]:
    """rs_spark.net and the raw socket, run after run in turn (a noisy moment of the shared machine hits
    one pair, not every run of one side): the median rows and each pair's ratio per kind."""
    ctx = mp.get_context("spawn")
    rows: list[tuple] = []
    ratios: dict[str, list[float]] = {}
    cpu: list[str] = []
    for kind in ("int64", "string"):
        parent, child = ctx.Pipe()
        p = ctx.Process(target=raw_sender, args=(child, kind), daemon=True)
        p.start()
        port = parent.recv()
        measure_rs(base + "/" + kind, "arrow", 8)  # warm-ups
        measure_raw(port)
        ours, raw = [], []
        for _ in range(REPEAT):
            ours.append(_with_cpu(server_pid, lambda kind=kind: measure_rs(base + "/" + kind, "arrow", 8)))
            raw.append(_with_cpu(p.pid, lambda port=port: measure_raw(port)))
        p.join(10)
        ratios[kind] = [(a[0] / a[2]) / (b[0] / b[2]) for a, b in zip(ours, raw, strict=True)]
        cpu += [_cpu_line(f"rs_spark.net, Arrow {kind}", ours), _cpu_line(f"raw socket, Arrow {kind}", raw)]
        rows.append(_median(f"rs_spark.net, Arrow {kind}, 64K-row batches", ours))
        rows.append(_median(f"ceiling: raw socket, same Arrow {kind} IPC bytes", raw))
    return rows, ratios, cpu


def _cpu_line(label: str, runs: list[tuple]) -> str:
    """CPU seconds per GB moved, receiver and sender, medians over ``runs``."""
    recv = statistics.median(r[3] / (r[1] / 1e9) for r in runs)
    send = statistics.median(r[4] / (r[1] / 1e9) for r in runs)
    return f"{label:<30} CPU s/GB: receiver {recv:.3f}, sender {send:.3f}, both {recv + send:.3f}"


def rsocket_rows() -> list[tuple]:
    ctx = mp.get_context("spawn")
    rows = []
    for what, route_name, arrow in (("int64", "ints", False), ("int64", "arrow", True), ("string", "arrow", True)):
        parent, child = ctx.Pipe()
        p = ctx.Process(target=rsocket_py_server, args=(child, what), daemon=True)
        p.start()
        port = parent.recv()
        try:
            n, nb, dt = measure_rsocket_py(port, route_name, arrow)
            label = (
                "rsocket package, per-element JSON ints" if not arrow else f"rsocket package, Arrow {what} IPC payloads"
            )
            rows.append((label, n, nb if arrow else None, dt))
        finally:
            parent.send("stop")
            p.join(10)
    return rows


def main() -> None:
    ctx = mp.get_context("spawn")
    rows = []

    parent, child = ctx.Pipe()
    p = ctx.Process(target=rs_server, args=(child,), daemon=True)
    p.start()
    base = parent.recv()
    measure_rs(base + "/ints", "json", 4096)  # warm-up (imports, first connection)
    n, _, dt = measure_rs(base + "/ints", "json", 4096)
    rows.append(("rs_spark.net, per-element JSON ints", n, None, dt))
    arrow, ratios, cpu = arrow_paired(base, p.pid)
    rows += arrow
    parent.send("stop")
    p.join(10)
    if "--no-rsocket" not in sys.argv:
        rows += rsocket_rows()

    ceiling = {("int64" if "int64" in r[0] else "string"): r for r in rows if r[0].startswith("ceiling")}
    print(f"{'case':<52} {'elements/s':>14} {'MB/s':>9} {'% of ceiling':>13}")
    for label, n, nb, dt in rows:
        mbs = f"{nb / dt / 1e6:9.1f}" if nb else f"{'-':>9}"
        pct = ""
        if nb and not label.startswith("ceiling"):
            kind = "int64" if "int64" in label else "string"
            c = ceiling[kind]
            pct = f"{100 * (n / dt) / (c[1] / c[3]):12.0f}%"
        print(f"{label:<52} {n / dt:14,.0f} {mbs} {pct:>13}")
    for kind, rs_ in ratios.items():
        runs = ", ".join(f"{x:.0%}" for x in rs_)
        print(
            f"Arrow {kind}: rs_spark.net / raw socket, each run against the raw run right after it: "
            f"median {statistics.median(rs_):.0%} [{runs}] (target >= 90%)"
        )
    print("\n".join(cpu))
    print(
        f"(loopback TCP; Arrow rows: median of {REPEAT} runs of {BATCHES} batches of {ROWS} rows, each rs_spark "
        f"run followed by a raw-socket run; rsocket package {RSOCKET_BATCHES} batches, one run; {ELEMENTS} JSON "
        "elements, one run; MB/s counts Arrow buffer bytes)"
    )


if __name__ == "__main__":
    main()
