"""rsocket-py serving on its own event loop thread, over TCP or (``websocket=True``) on a
``websockets`` server: the third-party RSocket peer of the interop tests."""

from __future__ import annotations

import asyncio
import json
import threading

from rsocket.payload import Payload
from rsocket.routing.request_router import RequestRouter
from rsocket.routing.routing_request_handler import RoutingRequestHandler
from rsocket.rsocket_server import RSocketServer
from rsocket.streams.stream_from_generator import StreamFromGenerator


class _Sink:
    """An rsocket-py channel Subscriber: records the request payload's data and every element."""

    def __init__(self, outer: RsocketPyServer, request_data: bytes) -> None:
        self.outer = outer
        outer.request_data.append(request_data)

    def on_subscribe(self, subscription):
        self.subscription = subscription
        subscription.request(5)

    def on_next(self, value, is_complete=False):
        self.outer.received.append(json.loads(value.data) if value.data else None)
        if len(self.outer.received) % 5 == 0:
            self.subscription.request(5)
        if is_complete:
            self.outer.channel_done.set()

    def on_error(self, exception):
        self.outer.channel_done.set()

    def on_complete(self):
        self.outer.channel_done.set()


class RsocketPyServer:
    """Route 'numbers' (``count`` ints as JSON), route 'fails' (an error after 2 elements) and
    channel route 'sink' (records into ``received`` / ``request_data``, sets ``channel_done``)."""

    def __init__(self, count: int, websocket: bool = False) -> None:
        self.port = None
        self.received: list = []
        self.request_data: list = []
        self.channel_done = threading.Event()
        ready = threading.Event()
        router = RequestRouter()
        outer = self

        @router.stream("numbers")
        async def numbers():
            def gen():
                for i in range(count):
                    yield Payload(json.dumps(i).encode()), i == count - 1

            return StreamFromGenerator(gen)

        @router.stream("fails")
        async def fails():
            def gen():
                yield Payload(b"1"), False
                yield Payload(b"2"), False
                raise RuntimeError("rsocket-py side failed")

            return StreamFromGenerator(gen)

        @router.channel("sink")
        async def sink(payload):
            return None, _Sink(outer, bytes(payload.data or b""))

        def handler():
            return RoutingRequestHandler(router)

        async def serve_tcp():
            from rsocket.transports.tcp import TransportTCP

            async def session(reader, writer):
                RSocketServer(TransportTCP(reader, writer), handler_factory=handler)

            srv = await asyncio.start_server(session, "127.0.0.1", 0)
            return srv, srv.sockets[0].getsockname()[1]

        async def serve_ws():
            from rsocket.transports.websockets_transport import WebsocketsTransport
            from websockets.asyncio.server import serve

            async def session(ws):
                transport = WebsocketsTransport()
                RSocketServer(transport, handler_factory=handler)
                await transport.handler(ws)

            srv = await serve(session, "127.0.0.1", 0)
            return srv, next(iter(srv.sockets)).getsockname()[1]

        async def main():
            srv, outer.port = await (serve_ws() if websocket else serve_tcp())
            outer._stop = asyncio.Event()
            outer._loop = asyncio.get_running_loop()
            ready.set()
            async with srv:
                await outer._stop.wait()

        self._thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
        self._thread.start()
        assert ready.wait(10)

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(5)
