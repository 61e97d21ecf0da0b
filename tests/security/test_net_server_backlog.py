"""Several clients that never read while provoking ERROR frames cannot make one server queue more than
Limits.max_server_backlog_bytes for sending, all its connections together: each connection's own cap
(max_backlog_bytes) alone lets max_connections such clients multiply it.

These tests turn the reply mark off (``reply_high_water_bytes``): with it, a connection stops being
read long before its ERRORs reach the budget (test_net_replies.py), and the budget is left to bound
what else is queued (stream data)."""

from __future__ import annotations

import logging
import socket
import threading

import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol import metadata as M
from rs_spark.net.protocol.auth import setup_metadata

from ..waits import wait_until

pytestmark = pytest.mark.timeout(240)

TOKEN = "server-backlog-secret-token"
MIB = 1 << 20
CLIENTS = 6
SERVER_BOUND = 3 * MIB
# Per connection up to 2 MiB queued; six connections could queue 12 MiB without the server's bound.
PER_CONNECTION = dict(
    max_frame_bytes=64 * 1024, high_water_bytes=128 * 1024, max_backlog_bytes=2 * MIB, reply_high_water_bytes=1 << 40
)
REQUESTS = 40_000  # per client, each answered by an ERROR frame of about 370 bytes (15 MB in all)


def _raw(parts):
    return b"".join(bytes(p) for p in parts)


def _attack(port: int, stop: threading.Event) -> None:
    """Set up, then ask for a publisher that does not exist, again and again, never reading the answers."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    try:
        s.sendall(_raw(F.encode_setup(60000, 120000, M.COMPOSITE, "application/json", metadata=setup_metadata(TOKEN))))
        route = M.request_metadata(M.COMPOSITE, "n" * 250)  # quoted in each ERROR frame's message
        chunk: list[bytes] = []
        for i in range(REQUESTS):
            chunk.append(_raw(F.encode_request(F.REQUEST_STREAM, 2 * i + 1, 1, metadata=route)))
            if len(chunk) == 500:
                s.sendall(b"".join(chunk))
                chunk.clear()
                if stop.is_set():
                    return
    except OSError:  # closed by the server: allowed
        pass
    finally:
        s.close()


def _run_attack(limits: net.Limits) -> net.Server:
    server = net.Server("tcp://127.0.0.1:0", token=TOKEN, limits=limits)
    server.add_publisher("numbers", rs.range_(10))
    port = int(server.base_address.rsplit(":", 1)[1].rstrip("/"))
    stop = threading.Event()
    clients = [threading.Thread(target=_attack, args=(port, stop), daemon=True) for _ in range(CLIENTS)]
    try:
        for c in clients:
            c.start()
        for c in clients:
            c.join(180)
        assert not any(c.is_alive() for c in clients), "the attacking clients did not finish"
    finally:
        stop.set()
    return server


def test_clients_that_never_read_cannot_queue_more_than_the_server_bound_in_all(caplog):
    limits = net.Limits(**PER_CONNECTION, max_server_backlog_bytes=SERVER_BOUND)
    with caplog.at_level(logging.WARNING, logger="rs_spark.net"):
        server = _run_attack(limits)
        try:
            assert server.outbound.peak <= SERVER_BOUND, f"queued {server.outbound.peak} bytes in all"
            wait_until(lambda: server.outbound.used == 0, lambda: f"{server.outbound.used} bytes still charged")
        finally:
            server.stop()
    closed = [r.getMessage() for r in caplog.records if "Limits.max_server_backlog_bytes" in r.getMessage()]
    assert closed, "no connection was closed for the server's bound"
    # The log line names the peer (its address and the server's), never the token.
    assert all("127.0.0.1:" in m and "reads too slowly or not at all" in m for m in closed), closed
    assert not [r for r in caplog.records if TOKEN in r.getMessage()]


def test_without_the_server_bound_the_same_clients_queue_more_than_it():
    """The attack above does fill a server: with only the per-connection cap, the connections together
    queue more than the server bound that test enforces (so that test can fail)."""
    limits = net.Limits(**PER_CONNECTION, max_server_backlog_bytes=1 << 40)
    server = _run_attack(limits)
    try:
        assert server.outbound.peak > SERVER_BOUND, f"queued only {server.outbound.peak} bytes in all"
    finally:
        server.stop()
