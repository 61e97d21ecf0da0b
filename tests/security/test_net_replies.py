"""Clients that ask and never read cost a server little, measured in the server's own process (its
peak RSS, VmHWM): each asks for 30,000 (or, 64 at once, 5,000) routes the server does not serve,
each answered by an ERROR of about 1.1 KB (a 250-byte route of control characters, quoted), with a
4 KiB receive buffer it never reads. Past ``Limits.reply_high_water_bytes`` of unread replies the
server reads nothing more from such a client, so it holds about that much for it, and a client
reading next to them is served. Before that mark one such client grew the server by about 35 MiB,
64 of them with 5,000 requests each by about 210 MiB, and with 30,000 each past its 256 MiB budget
(about 450 MiB; benchmarks/net_backlog.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol import metadata as M
from rs_spark.net.protocol.auth import setup_metadata
from rs_spark.net.protocol.budget import FRAME_OVERHEAD

from ..waits import wait_until

pytestmark = pytest.mark.timeout(300)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKEN = "victim-token"
MIB = 1 << 20
ROUTE = "\x01" * 250  # the ERROR quotes it with repr(): 4 characters a byte
LARGEST_ERROR = 1200  # bytes of the ERROR frame answering one such request


class Victim:
    """``tests.security.net_victim`` in its own process; its log lines go to ``log``."""

    def __init__(self, log_path, max_connections: int = 8, **limits) -> None:
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.p = subprocess.Popen(
            [sys.executable, "-m", "tests.security.net_victim", "tcp", str(max_connections), json.dumps(limits)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=ROOT),
        )
        self.base = self.p.stdout.readline().strip()
        self.port = int(self.base.rsplit(":", 1)[1].rstrip("/"))
        self.rss0 = self.status("VmRSS:")

    def status(self, key: str) -> float:
        """``VmRSS:`` or ``VmHWM:`` of the server's process, in MiB."""
        with open(f"/proc/{self.p.pid}/status") as f:
            return int(next(line for line in f if line.startswith(key)).split()[1]) / 1024

    def growth(self) -> float:
        """MiB the server's peak RSS grew past what it held before the attack."""
        return self.status("VmHWM:") - self.rss0

    def peak(self) -> int:
        """``Server.outbound.peak``: the most bytes its connections ever had queued, together."""
        self.p.stdin.write("peak\n")
        self.p.stdin.flush()
        return int(self.p.stdout.readline())

    def cpu(self) -> float:
        with open(f"/proc/{self.p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def idle(self) -> bool:
        """Whether it used under 2% of a core while this looked, for half a second: it has answered
        all it read (a measurement window, not a wait: callers poll this until it holds)."""
        before = self.cpu()
        time.sleep(0.5)
        return self.cpu() - before < 0.01

    def said(self) -> str:
        """What the server logged so far."""
        with open(self.log_path) as f:
            return f.read()

    def stop(self) -> None:
        self.p.stdin.close()
        self.p.wait(60)
        self._log.close()


def _raw(parts) -> bytes:
    return b"".join(bytes(p) for p in parts)


def _ask_and_never_read(port: int, requests: int, socks: list[socket.socket]) -> None:
    """Set up, then ask for ``requests`` routes the server does not serve, never reading; stops
    sending once the server takes nothing for 5 s (it stopped reading us). The socket stays open."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    socks.append(s)
    s.settimeout(5)
    route = M.request_metadata(M.COMPOSITE, ROUTE)
    try:
        s.sendall(_raw(F.encode_setup(60000, 120000, M.COMPOSITE, "application/json", metadata=setup_metadata(TOKEN))))
        for first in range(0, requests, 500):
            last = min(requests, first + 500)
            s.sendall(
                b"".join(
                    _raw(F.encode_request(F.REQUEST_STREAM, 2 * i + 1, 1, metadata=route)) for i in range(first, last)
                )
            )
    except OSError:  # timed out (the server stopped reading us) or closed by the server: both allowed
        pass


def _closed_by_server(s: socket.socket) -> bool:
    """Read what the server sent until it closed (EOF, or a reset: it closed with our requests
    unread); False if it still sends nothing more after 30 s."""
    s.settimeout(30)
    try:
        while s.recv(1 << 16):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def _attack(port: int, clients: int, requests: int) -> list[socket.socket]:
    socks: list[socket.socket] = []
    threads = [threading.Thread(target=_ask_and_never_read, args=(port, requests, socks)) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "the attacking clients did not finish"
    return socks


def test_one_client_asking_30000_unknown_routes_and_never_reading_costs_the_server_under_8_mib(tmp_path):
    v = Victim(tmp_path / "server.log")
    try:
        socks = _attack(v.port, 1, 30_000)
        wait_until(v.idle, "the server to answer what it read", timeout=120)
        grew = v.growth()
        assert grew < 8, f"the server's RSS grew {grew:.1f} MiB for one client that never reads"
        most = net.Limits().reply_high_water_bytes + LARGEST_ERROR + FRAME_OVERHEAD
        assert v.peak() <= most, f"{v.peak()} bytes queued for one client that never reads"
        for s in socks:
            s.close()
    finally:
        v.stop()


def test_64_such_clients_at_once_stay_within_the_server_budget_and_a_reading_client_is_served(tmp_path):
    clients = 64
    v = Victim(tmp_path / "server.log", max_connections=clients + 4)
    try:
        socks = _attack(v.port, clients, 5_000)
        wait_until(v.idle, "the server to answer what it read", timeout=120)
        grew = v.growth()
        budget = net.Limits().max_server_backlog_bytes / MIB
        assert grew < 1.5 * clients < budget, (
            f"the server's RSS grew {grew:.0f} MiB for {clients} clients (its outbound budget: {budget:.0f} MiB)"
        )
        per_client = net.Limits().reply_high_water_bytes + LARGEST_ERROR + FRAME_OVERHEAD
        assert v.peak() <= clients * per_client, f"{v.peak()} bytes queued for {clients} clients that never read"
        got = rs.to_list(net.connect(f"{v.base}/numbers?token={TOKEN}"), timeout=60)
        assert got == list(range(10)), "the reading client next to them was not served"
        for s in socks:
            s.close()
    finally:
        v.stop()
    assert "Limits.max_server_backlog_bytes" not in v.said(), "a connection was closed for the server's budget"


def test_the_server_closes_a_client_that_never_reads_after_the_stall_timeout_naming_it(tmp_path):
    v = Victim(tmp_path / "server.log", reply_stall_timeout=2.0)
    try:
        socks = _attack(v.port, 1, 30_000)
        me = f"127.0.0.1:{socks[0].getsockname()[1]}"
        said = wait_until(
            lambda: "Limits.reply_stall_timeout" in v.said() and v.said(), "the server to say why it closed the client"
        )
        line = next(x for x in said.splitlines() if "Limits.reply_stall_timeout" in x)
        assert f"closing {me} on {v.base}: it did not read what was sent to it" in line, line
        assert TOKEN not in said
        assert _closed_by_server(socks[0])
        socks[0].close()
    finally:
        v.stop()
