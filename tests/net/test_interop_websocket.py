"""Interop over WebSocket with third-party code on both layers: the ``websockets`` package
speaks RFC 6455 and rsocket-py's ``WebsocketsTransport`` speaks RSocket on top (one frame per
binary message), against our ws:// server and our ws:// client."""

from __future__ import annotations

import asyncio
import json

import pytest

from rs_spark import net
from rs_spark import streams as rs

pytest.importorskip("rsocket")
pytest.importorskip("websockets")

from rsocket.awaitable.awaitable_rsocket import AwaitableRSocket  # noqa: E402
from rsocket.extensions.helpers import composite, route  # noqa: E402
from rsocket.extensions.mimetypes import WellKnownMimeTypes  # noqa: E402
from rsocket.helpers import single_transport_provider  # noqa: E402
from rsocket.payload import Payload  # noqa: E402
from rsocket.rsocket_client import RSocketClient  # noqa: E402
from rsocket.transports.websockets_transport import WebsocketsTransport  # noqa: E402
from websockets.asyncio.client import connect as ws_connect  # noqa: E402

from ._rsocket_py import RsocketPyServer  # noqa: E402

pytestmark = pytest.mark.timeout(60)


async def _read_over_websockets(uri, name, limit_rate):
    transport = WebsocketsTransport()
    async with ws_connect(uri) as ws:
        pump = asyncio.create_task(transport.handler(ws))
        try:
            async with RSocketClient(
                single_transport_provider(transport),
                metadata_encoding=WellKnownMimeTypes.MESSAGE_RSOCKET_COMPOSITE_METADATA,
                data_encoding=WellKnownMimeTypes.APPLICATION_JSON,
            ) as client:
                payloads = await AwaitableRSocket(client).request_stream(
                    Payload(metadata=composite(route(name))), limit_rate=limit_rate
                )
        finally:
            pump.cancel()
    return [json.loads(p.data) for p in payloads]


def test_websockets_and_rsocket_py_client_reads_our_ws_served_publisher():
    server = net.serve(rs.range_(700), name="numbers", bind="ws://127.0.0.1:0")
    try:
        assert server.address.startswith("ws://")
        got = asyncio.run(asyncio.wait_for(_read_over_websockets(server.address, "numbers", 16), 30))
        assert got == list(range(700))
    finally:
        server.stop()


def test_our_ws_client_reads_from_rsocket_py_on_a_websockets_server():
    srv = RsocketPyServer(500, websocket=True)
    try:
        got = rs.to_list(net.connect(f"ws://127.0.0.1:{srv.port}/numbers"), timeout=30, request_size=32)
        assert got == list(range(500))
    finally:
        srv.stop()
