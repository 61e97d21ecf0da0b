"""Reactive Streams across processes and hosts, over RSocket.

Serve any Publisher or Subscriber from a Python process; reach it from another process or host
with a plain address string::

    from rs_spark import net, streams as rs
    server = net.serve(rs.range_(1_000_000), name="numbers")      # tcp://127.0.0.1:<port>/numbers
    # elsewhere:
    for x in rs.iterate(net.connect(server.address), prefetch=256): ...

Publishers are read with RSocket request-stream, Subscribers fed with request-channel;
``request(n)`` travels as REQUEST_N, ``cancel()`` as CANCEL, ``on_error`` as ERROR with the
error's type name and message.

Layers, bottom up:

* :mod:`.frames` (the RSocket frame codec), :mod:`.metadata` (routing, authentication) and
  :mod:`.auth` (the SETUP token check);
* :mod:`.transport` (dialing and listening: TCP, Unix sockets), :mod:`.tls` (TLS on a thread
  of its own), :mod:`.websocket` (``ws://``, ``wss://``), :mod:`.framing` (length-prefixed
  frames in and out of a socket), :mod:`.refuser` (closing refused connections without a reset);
* :mod:`.connection` (multiplexing, keepalive, limits) with :mod:`.worker` (its signal thread);
* :mod:`.bridge` (frames in: the Subscription of a remote Publisher) and :mod:`.outbound` (frames
  out: the Subscriber of a local Publisher), :mod:`.channel` (both at once: a Processor),
  :mod:`.codecs` (elements <-> payloads), :mod:`.conventions` (what a channel's first frame carries);
* resumable streams: :mod:`.retention` (rows kept until acknowledged), :mod:`.resume` (the wire
  conventions), :mod:`.resume_server` / :mod:`.resume_client` (each side), :mod:`.spill` (kept rows
  on disk, across a restart of the serving process);
* :mod:`.server` and :mod:`.client`, the API; :mod:`.errors`, what it raises; :mod:`.address`,
  the address strings.

:mod:`.batch_fetch` (Arrow batches fetched by Spark executors) is a separate, smaller protocol.
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
from .errors import ConnectionLost, NetError, ProtocolError, Refused, RemoteError, ResumeRejected
from .resume_client import ResumablePublisher, ResumableSubscription
from .retention import Retention
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
    "Retention",
    "ResumablePublisher",
    "ResumableSubscription",
    "ResumeRejected",
]
