"""Code that runs in spawned child processes for the cross-process tests (importable by spawn)."""

from __future__ import annotations

import os
import threading
import time

from rs_spark import net
from rs_spark import streams as rs


def serve_publishers(bind, conn, produced, cancelled, three_produced, token=None):
    """Serve several publishers; report the address through ``conn``; run until killed.

    ``produced`` (a shared int) counts elements the 'counted' publisher generated;
    ``three_produced`` (an Event) is set once it has generated three;
    ``cancelled`` (an Event) is set when its generator is closed before its end.
    """
    import pyarrow as pa

    def counted():
        try:
            for i in range(10**9):
                produced.value = i + 1
                if i == 2:
                    three_produced.set()
                yield i
        finally:
            cancelled.set()

    def failing():
        yield 1
        yield 2
        yield 3
        raise ValueError("boom at element 3")

    ints = pa.record_batch(
        {"x": pa.array(range(10_000), pa.int64()), "s": pa.array([f"row {i}" for i in range(10_000)])}
    )
    server = net.Server(bind, token=token)
    server.add_publisher("numbers", rs.range_(1000))
    server.add_publisher("counted", rs.defer(counted))
    server.add_publisher("failing", rs.defer(failing))
    server.add_publisher("arrow", rs.just(*[ints] * 5))
    server.add_publisher("forever", rs.defer(lambda: iter(int, 1)))
    conn.send(server.base_address)
    threading.Event().wait()  # serve until killed


def serve_subscriber(bind, conn, results):
    """Serve a subscriber factory; each subscriber puts ('next', x) / ('error', text) / ('complete',)."""

    class Recorder:
        def on_subscribe(self, s):
            self.s = s
            s.request(4)

        def on_next(self, x):
            results.put(("next", x))
            self.s.request(1)

        def on_error(self, e):
            results.put(("error", f"{type(e).__name__}: {e}"))

        def on_complete(self):
            results.put(("complete",))

    server = net.Server(bind)
    server.add_subscriber("sink", Recorder)
    conn.send(server.base_address)
    threading.Event().wait()  # serve until killed


def push_to_subscriber(address, count, delay, keepalive, lifetime):
    """Connect to a served subscriber and push ``count`` ints, ``delay`` s apart (client side)."""

    def slow():
        for i in range(count):
            time.sleep(delay)  # not synchronisation: the client's pace
            yield i

    sub = net.connect_subscriber(address, keepalive=keepalive, lifetime=lifetime)
    rs.defer(slow).subscribe(sub)
    sub.wait(600)


def read_forever(address, keepalive, lifetime):
    """Read a served publisher one element at a time, slowly, until killed."""
    it = rs.iterate(net.connect(address, keepalive=keepalive, lifetime=lifetime), prefetch=1)
    for _ in it:
        time.sleep(0.05)  # not synchronisation: a slow reader's pace


def serve_spilling(port, spill, counter_file, conn, token):
    """Serve 'counter' with retention spilled to ``spill`` on a fixed ``port``: ids continue from
    the number in ``counter_file`` (as a broker's offset moves once it handed a record out)."""
    from rs_spark.net.zero_loss.retention import Retention

    def ids():
        n = int(open(counter_file).read()) if os.path.exists(counter_file) else 0
        while True:
            with open(counter_file, "w") as f:
                f.write(str(n + 1))
            yield n
            n += 1

    server = net.serve(
        rs.defer(ids), name="counter", bind=f"tcp://127.0.0.1:{port}", token=token, retention=Retention(spill=spill)
    )
    conn.send(server.address)
    threading.Event().wait()  # serve until killed


def serve_backlogs(bind, conn, backlogs, token):
    """Serve each of ``backlogs`` (name -> (first id, rows)) as a finite backlog, every row ready at
    once: ``from_iterable`` of ``{"id": i}``; report the base address; run until killed."""
    server = net.Server(bind, token=token)
    for name, (first, rows) in backlogs.items():
        server.add_publisher(name, rs.from_iterable([{"id": i} for i in range(first, first + rows)]))
    conn.send(server.base_address)
    threading.Event().wait()  # serve until killed
