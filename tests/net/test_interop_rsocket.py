"""Interop with the ``rsocket`` package (rsocket-py), both ways, over loopback TCP."""

from __future__ import annotations

import asyncio
import json

import pytest

from rs_spark import net
from rs_spark import streams as rs

rsocket = pytest.importorskip("rsocket")

from rsocket.awaitable.awaitable_rsocket import AwaitableRSocket  # noqa: E402
from rsocket.extensions.helpers import authenticate_bearer, composite, route  # noqa: E402
from rsocket.extensions.mimetypes import WellKnownMimeTypes  # noqa: E402
from rsocket.helpers import single_transport_provider  # noqa: E402
from rsocket.payload import Payload  # noqa: E402
from rsocket.rsocket_client import RSocketClient  # noqa: E402
from rsocket.transports.tcp import TransportTCP  # noqa: E402

from ..subscribers import Recorder  # noqa: E402
from ._rsocket_py import RsocketPyServer  # noqa: E402

pytestmark = pytest.mark.timeout(60)


async def _read_with_rsocket_py(host, port, name, token, limit_rate):
    reader, writer = await asyncio.open_connection(host, port)
    setup = Payload(metadata=composite(authenticate_bearer(token))) if token else None
    async with RSocketClient(
        single_transport_provider(TransportTCP(reader, writer)),
        metadata_encoding=WellKnownMimeTypes.MESSAGE_RSOCKET_COMPOSITE_METADATA,
        data_encoding=WellKnownMimeTypes.APPLICATION_JSON,
        setup_payload=setup,
    ) as client:
        payloads = await AwaitableRSocket(client).request_stream(
            Payload(metadata=composite(route(name))), limit_rate=limit_rate
        )
    return [json.loads(p.data) for p in payloads]


@pytest.mark.parametrize("token", [None, "tok"])
def test_rsocket_py_client_reads_our_served_publisher(token):
    server = net.serve(rs.range_(300), name="numbers", token=token)
    try:
        a = net.parse_address(server.address)
        got = asyncio.run(asyncio.wait_for(_read_with_rsocket_py(a.host, a.port, "numbers", token, 16), 30))
        assert got == list(range(300))
    finally:
        server.stop()


def test_rsocket_py_client_with_wrong_token_is_refused():
    server = net.serve(rs.range_(3), name="numbers", token="right")
    try:
        a = net.parse_address(server.address)
        from rsocket.exceptions import RSocketError

        # An RSocket error, not a timeout: a server that hung instead of refusing fails here.
        with pytest.raises(RSocketError):
            asyncio.run(asyncio.wait_for(_read_with_rsocket_py(a.host, a.port, "numbers", "wrong", 16), 10))
    finally:
        server.stop()


def test_our_client_reads_from_an_rsocket_py_server():
    srv = RsocketPyServer(500)
    try:
        got = rs.to_list(net.connect(f"tcp://127.0.0.1:{srv.port}/numbers"), timeout=30, request_size=32)
        assert got == list(range(500))
    finally:
        srv.stop()


def test_an_rsocket_py_error_arrives_as_remote_error():
    srv = RsocketPyServer(1)
    try:
        got = []
        with pytest.raises(net.RemoteError, match="rsocket-py side failed") as ei:
            for x in rs.iterate(net.connect(f"tcp://127.0.0.1:{srv.port}/fails"), timeout=30):
                got.append(x)
        assert got == [1, 2]
        assert f"127.0.0.1:{srv.port}/fails" in str(ei.value)
    finally:
        srv.stop()


def test_our_route_only_channel_feeds_an_rsocket_py_responder_every_element():
    """The rsocket package reads REQUEST_CHANNEL data as request parameters: route_only matches it."""
    srv = RsocketPyServer(0)
    try:
        sub = net.connect_subscriber(f"tcp://127.0.0.1:{srv.port}/sink", channel_open="route_only")
        rs.range_(40).subscribe(sub)
        assert srv.channel_done.wait(30)
        assert srv.received == list(range(40)) and srv.request_data == [b""]
    finally:
        srv.stop()


async def _feed_with_rsocket_py(port, name, data, count, done):
    from rsocket.streams.stream_from_generator import StreamFromGenerator

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    async with RSocketClient(
        single_transport_provider(TransportTCP(reader, writer)),
        metadata_encoding=WellKnownMimeTypes.MESSAGE_RSOCKET_COMPOSITE_METADATA,
        data_encoding=WellKnownMimeTypes.APPLICATION_JSON,
    ) as client:

        def gen():
            for i in range(count):
                yield Payload(json.dumps(i).encode()), i == count - 1

        await AwaitableRSocket(client).request_channel(
            Payload(data=data, metadata=composite(route(name))), StreamFromGenerator(gen)
        )
        # keep the connection until the served subscriber has everything (its own direction ended at once)
        await asyncio.get_running_loop().run_in_executor(None, done.wait, 30)


@pytest.mark.parametrize("channel_data,data", [("auto", b""), ("parameters", b'{"from": 0}')])
def test_an_rsocket_py_channel_feeds_a_served_subscriber_without_losing_or_inventing(channel_data, data):
    """rsocket-py's request payload is parameters: empty data is no element under auto; non-empty
    parameters need channel_data='parameters' on the server (documented)."""
    sub = Recorder(batch=3)
    server = net.Server(channel_data=channel_data)
    server.add_subscriber("sink", sub)
    try:
        a = net.parse_address(server.address_of("sink"))
        asyncio.run(asyncio.wait_for(_feed_with_rsocket_py(a.port, "sink", data, 50, sub.done), 40))
        assert sub.done.is_set() and sub.error is None and sub.items == list(range(50))
    finally:
        server.stop()
