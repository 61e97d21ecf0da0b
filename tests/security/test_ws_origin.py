"""A web page the user visits opens ws://127.0.0.1:PORT from the browser (which always sends Origin):
the upgrade is refused unless the origin is allowed; non-browser clients (no Origin) still connect."""

from __future__ import annotations

import base64
import os
import socket

import pytest

from rs_spark import net
from rs_spark import streams as rs


@pytest.fixture
def ws_server():
    server = net.Server("ws://127.0.0.1:0", token="t0k3n", allowed_origins=["https://dashboard.example"])
    server.add_publisher("numbers", rs.range_(5))
    yield server
    server.stop()


def _upgrade(server, origin):
    host, port = server.base_address.split("//")[1].split(":")
    key = base64.b64encode(os.urandom(16)).decode()
    req = (
        f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: rsocket\r\n"
        + (f"Origin: {origin}\r\n" if origin else "")
        + "\r\n"
    )
    with socket.create_connection((host, int(port.rstrip("/"))), timeout=10) as s:
        s.sendall(req.encode())
        return s.recv(4096).decode("latin-1").split("\r\n", 1)[0]


def test_an_upgrade_from_a_web_page_of_another_origin_is_refused_with_403(ws_server):
    assert " 403 " in _upgrade(ws_server, "https://evil.example")
    assert " 403 " in _upgrade(ws_server, "null")  # sandboxed frames and file:// pages


def test_an_allowed_origin_and_a_client_without_origin_are_upgraded(ws_server):
    assert " 101 " in _upgrade(ws_server, "https://dashboard.example")
    assert " 101 " in _upgrade(ws_server, None)
    assert rs.to_list(net.connect(ws_server.address_of("numbers") + "?token=t0k3n"), timeout=10) == [0, 1, 2, 3, 4]
