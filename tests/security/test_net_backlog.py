"""A client that never reads cannot grow a server's outbound queue without bound: KEEPALIVE echo data
is capped, and past Limits.max_backlog_bytes the server closes the connection."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

from rs_spark import net
from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol import metadata as M
from rs_spark.net.protocol.auth import setup_metadata

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS:")).split()[1]) / 1024


def _raw(parts):
    return b"".join(bytes(p) for p in parts)


def test_a_client_that_never_reads_and_floods_keepalive_respond_grows_no_queue(tmp_path):
    victim = subprocess.Popen(
        [sys.executable, "-m", "tests.security.net_victim", "tcp", "8"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    try:
        port = int(victim.stdout.readline().strip().rsplit(":", 1)[1].rstrip("/"))
        rss0 = _rss_mb(victim.pid)
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and never reads what the server sends back
        s.sendall(
            _raw(
                F.encode_setup(60000, 120000, M.COMPOSITE, "application/json", metadata=setup_metadata("victim-token"))
            )
        )
        ping = _raw(F.encode_keepalive(True, 0, b"x" * (2**20 - 64)))  # 1 MiB of data asking to be echoed
        peak = rss0
        try:
            for _ in range(400):  # 400 MiB, as the attack did
                s.sendall(ping)
                peak = max(peak, _rss_mb(victim.pid))
        except OSError:  # closed by the server: allowed
            pass
        s.close()
    finally:
        victim.stdin.close()
        victim.wait(30)
    assert peak - rss0 < 64, f"the server grew {peak - rss0:.0f} MB echoing KEEPALIVE data to a peer that never reads"


class _ClosedWatch:
    """A stream on the connection that only learns when the connection closes."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    def on_frame(self, frame) -> None:
        pass

    def on_connection_closed(self, error) -> None:
        self.closed.set()


def test_the_backlog_cap_closes_a_connection_whose_peer_stopped_reading():
    from rs_spark.net.protocol.connection import Connection

    limits = net.Limits(max_frame_bytes=2 * 2**20, high_water_bytes=2**20, max_backlog_bytes=4 * 2**20)
    a, b = socket.socketpair()
    b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    conn = Connection(a, client=True, label="a peer that never reads", limits=limits)
    watch = _ClosedWatch()
    conn.add_stream(watch)
    conn.start()
    try:
        frame = F.encode_payload(1, [b"y" * (2**20)])
        for _ in range(64):
            if not conn.send(frame):
                break
        assert watch.closed.wait(30), "the connection stayed open with its peer not reading"
        assert conn.closed is not None and "stopped reading" in str(conn.closed)
        assert conn.backlog <= 2 * limits.max_backlog_bytes
    finally:
        conn.close()
        b.close()
