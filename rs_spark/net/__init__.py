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

Two rooms:

* :mod:`.protocol`, the general RSocket layer: frames, metadata and the SETUP token check; the
  transports (TCP, Unix sockets, TLS, WebSocket) and framing; the connection (multiplexing,
  keepalive, limits) with its signal thread; accepting and dialling; a server's protocol side
  (:class:`~.protocol.host.Host`: its endpoints and the streams requests open) and the client
  (:class:`~.protocol.client.Client`, the remote Publisher); a stream's two directions
  (:mod:`.protocol.bridge` frames in, :mod:`.protocol.outbound` frames out), channels, the remote
  Subscriber, codecs, errors, addresses;
* :mod:`.zero_loss`, rows kept until acknowledged and what is built on them: retention, the
  spill to disk, resumption (wire conventions, server and client side) and the batch fetch of
  Spark's executors. It builds on the protocol; the protocol never imports it.

:mod:`.server` and :mod:`.client`, the API, are wiring only: the server's Host gets the resume
service as its :class:`~.protocol.host.ResumeHook`, each Client the resumable reader as its
:class:`~.protocol.client.Resumer`. Never imports pyspark.
"""

from typing import TYPE_CHECKING

from .client import (
    Client,
    RemoteProcessor,
    RemotePublisher,
    RemoteSubscriber,
    connect,
    connect_processor,
    connect_subscriber,
)
from .protocol.address import Address
from .protocol.address import parse as parse_address
from .protocol.codecs import ARROW_MIME, MIMES
from .protocol.conventions import ChannelData, ChannelOpen
from .protocol.errors import ConnectionLost, NetError, ProtocolError, Refused, RemoteError, ResumeRejected
from .protocol.limits import Limits
from .protocol.tls_files import TlsFiles
from .server import Server, ServerStats, StreamStats, serve
from .zero_loss.resume_client import ResumablePublisher, ResumableSubscription
from .zero_loss.retention import Retention

__all__ = [
    "ChannelData",
    "ChannelOpen",
    "serve",
    "Server",
    "ServerStats",
    "StreamStats",
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
    "TlsFiles",
    "ResumablePublisher",
    "ResumableSubscription",
    "ResumeRejected",
]

if not TYPE_CHECKING:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from .._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
