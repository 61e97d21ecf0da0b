"""Reactive Streams across processes and hosts, over RSocket.

Serve any Publisher or Subscriber from a Python process; reach it from another process or host
with a plain address string::

    from rs_spark import net, streams as rs
    server = net.serve(rs.range_(1_000_000), name="numbers")      # tcp://127.0.0.1:<port>/numbers
    # elsewhere:
    for x in rs.iterate(net.connect(server.address), prefetch=256): ...

Publishers are read with RSocket request-stream, Subscribers fed with request-channel;
``request(n)`` travels as REQUEST_N, ``cancel()`` as CANCEL, ``on_error`` as ERROR with the
error's type name and message. Layers: :mod:`.frames` (codec), :mod:`.metadata` (routing,
auth), :mod:`.transport` (sockets), :mod:`.connection` (multiplexing, keepalive, limits),
:mod:`.bridge` (the two stream directions), :mod:`.server`, :mod:`.client`, :mod:`.codecs`.
Never imports pyspark.
"""

from .address import Address
from .address import parse as parse_address
from .client import (
    Client,
    RemoteProcessor,
    RemotePublisher,
    RemoteSubscriber,
    connect,
    connect_processor,
    connect_subscriber,
)
from .codecs import ARROW_MIME, MIMES
from .connection import Limits
from .conventions import ChannelData, ChannelOpen
from .errors import ConnectionLost, NetError, ProtocolError, Refused, RemoteError
from .server import Server, serve

__all__ = [
    "ChannelData",
    "ChannelOpen",
    "serve",
    "Server",
    "connect",
    "connect_subscriber",
    "connect_processor",
    "RemoteProcessor",
    "Client",
    "RemotePublisher",
    "RemoteSubscriber",
    "Limits",
    "Address",
    "parse_address",
    "NetError",
    "ConnectionLost",
    "Refused",
    "ProtocolError",
    "RemoteError",
    "MIMES",
    "ARROW_MIME",
]
