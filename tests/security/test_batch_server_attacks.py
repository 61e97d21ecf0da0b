"""The source's batch server, attacked on 127.0.0.1: idle and oversized connections, a replayed
credential, and a malicious server answering an executor's fetch."""

from __future__ import annotations

import json
import socket
import threading
import time

import pyarrow as pa
import pytest

from rs_spark.spark.source.single.batch_fetch import BatchServer, FetchError, FetchGrant, fetch

from ..waits import wait_until

TABLE = pa.table({"id": pa.array(range(1000), pa.int64())})
HANDLERS = 4


@pytest.fixture
def server():
    s = BatchServer(
        lambda k, lo, hi: (TABLE.schema, TABLE.slice(lo, hi - lo).to_batches()),
        binds=("127.0.0.1",),
        max_handlers=HANDLERS,
        auth_timeout=0.5,
    )
    yield s
    s.close()


def _handlers():
    return sum(1 for t in threading.enumerate() if t.name == "rs-spark-batch-fetch")


def test_400_idle_connections_hold_at_most_max_handlers_threads_and_are_closed(server):
    idle = []
    for _ in range(400):  # non-blocking connects: past the listen backlog the kernel holds them back
        c = socket.socket()
        c.setblocking(False)
        c.connect_ex(("127.0.0.1", server.address.port))
        idle.append(c)
    try:
        peak = 0
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:  # sample while the attack is on
            peak = max(peak, _handlers())
            time.sleep(0.01)  # not synchronisation: the sampling interval of the bound under test
        assert 0 < peak <= HANDLERS
        first = idle[0]
        first.setblocking(True)
        first.settimeout(5)
        assert first.recv(1) == b""  # closed by the server after the authentication deadline
    finally:
        for c in idle:
            c.close()
    wait_until(lambda: _handlers() == 0, "the handler threads to end")
    assert pa.Table.from_batches(fetch(server.grant(1, 0, 10), 1, 0, 10)).num_rows == 10  # still serving


def test_a_huge_declared_request_is_closed_without_being_read(server):
    with socket.create_connection(("127.0.0.1", server.address.port), timeout=5) as c:
        c.sendall((2**31).to_bytes(4, "big"))
        c.settimeout(5)
        assert c.recv(1) == b""


def test_a_sniffed_credential_does_not_fetch_another_range(server):
    granted = server.grant(1, 0, 10)
    assert pa.Table.from_batches(fetch(granted, 1, 0, 10)).num_rows == 10
    for key, lo, hi in [(1, 0, 1000), (1, 10, 20), (2, 0, 10)]:
        with pytest.raises(FetchError):
            fetch(granted, key, lo, hi, read_timeout=5)


class _LyingServer:
    def __init__(self, header):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.header = header
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        conn, _ = self.sock.accept()
        with conn:
            n = int.from_bytes(conn.recv(4), "big")
            conn.recv(n)
            h = json.dumps(self.header).encode() if isinstance(self.header, dict) else self.header
            try:
                conn.sendall(len(h).to_bytes(4, "big") + h)
                conn.recv(1)  # hold the connection open until the client gives up: it must not wait for 4 GiB
            except OSError:  # the client refused and closed: what the test wants
                pass


@pytest.mark.parametrize("header", [{"ok": True, "bytes": 4 * 2**30}, b"x" * (2**20)], ids=["4GiB-body", "1MiB-header"])
def test_a_malicious_server_cannot_make_an_executor_allocate_what_it_declares(header):
    liar = _LyingServer(header)
    addr = FetchGrant("not-this-host", ["127.0.0.1"], liar.port, b"\0" * 32)
    with pytest.raises(FetchError, match="declared"):
        fetch(addr, 1, 0, 10, read_timeout=5)
    liar.sock.close()
