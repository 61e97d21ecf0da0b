"""Before SETUP is accepted a connection may make the server hold only a small fixed amount, and it
counts against max_connections until its socket is closed: attacked with many cheap connections,
measured in the server's own process (RSS and threads)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_CONNECTIONS = 8
ATTACKERS = 40


def _rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS:")).split()[1]) / 1024


def _threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


@pytest.fixture(params=["tcp", "ws"])
def victim(request):
    p = subprocess.Popen(
        [sys.executable, "-m", "tests.security.net_victim", request.param, str(MAX_CONNECTIONS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    base = p.stdout.readline().strip()
    host, port = base.split("//")[1].split(":")
    yield request.param, p.pid, int(port.rstrip("/"))
    p.stdin.close()
    p.wait(30)


def _ws_upgrade(sock, port):
    sock.sendall(
        (
            f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)


def _attack(kind, port):
    """What one attacker sends: tcp, a 9-byte malformed frame (then stays); ws, a 14-byte header of a
    masked binary message declaring 16 MiB before any SETUP, and all but its last byte (then stays)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if kind == "tcp":
        s.sendall(b"\x00\x00\x06" + b"\x00\x00\x00\x00" + b"\xfc\x00")  # frame type 63: no such frame
    else:
        _ws_upgrade(s, port)
        s.sendall(bytes([0x82, 0x80 | 127]) + (16 * 2**20 - 16).to_bytes(8, "big") + b"\x00\x00\x00\x00")
        try:  # and nearly all of it, so a server that allocated the declared size also touches those pages
            s.sendall(b"\x01" * (16 * 2**20 - 17))  # all but the last byte: the message never completes
        except OSError:  # the server refused the message and closed: what it should do
            pass
    return s


def _closed_by_server(s):
    """True (and ``s`` closed) once the server has closed its side, so the attacker opens another."""
    try:
        s.setblocking(False)
        closed = s.recv(65536) == b""
    except BlockingIOError:
        return False
    except OSError:
        closed = True
    if closed:
        s.close()
    return closed


def test_cheap_connections_before_setup_hold_little_memory_and_few_threads(victim):
    kind, pid, port = victim
    time.sleep(0.5)  # not synchronisation: let the fresh interpreter settle before the baseline is read
    rss0, threads0 = _rss_mb(pid), _threads(pid)
    socks = []
    try:
        peak_rss, peak_threads = rss0, threads0
        deadline = time.monotonic() + 6  # past the server's close deadlines: refused peers come back
        while time.monotonic() < deadline:  # keep ATTACKERS attacks going, sampling the server between them
            if len(socks) < ATTACKERS:
                try:
                    socks.append(_attack(kind, port))
                except OSError:  # refused at max_connections: what the bound is for
                    pass
            peak_rss, peak_threads = max(peak_rss, _rss_mb(pid)), max(peak_threads, _threads(pid))
            socks = [s for s in socks if not _closed_by_server(s)]
            time.sleep(0.02)  # not synchronisation: the attack's pace and sampling interval
    finally:
        for s in socks:
            s.close()
    assert peak_rss - rss0 < 64, f"{kind}: RSS grew {peak_rss - rss0:.0f} MB under {ATTACKERS} pre-SETUP connections"
    # Per counted connection: reader + writer, and for WebSocket the pump's two threads (close deadlines
    # share one thread); a socket counts against max_connections until it is closed, so threads follow
    # the bound, not the attackers (a25ca5c..e630cf3: a timer thread per refused WebSocket, 86 threads).
    per_conn = 2 if kind == "tcp" else 4
    assert peak_threads - threads0 <= per_conn * MAX_CONNECTIONS + 2, (kind, peak_threads, threads0)
