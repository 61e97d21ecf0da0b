"""Reach served Publishers and Subscribers: :func:`connect`, :func:`connect_subscriber`, :func:`connect_processor`.

Wiring: the protocol's :class:`~.protocol.client.Client` reads a publisher as a resumable stream
through its :class:`~.protocol.client.Resumer`; here the zero-loss room's
:class:`~.zero_loss.resume_client.ResumablePublisher` is that resumer, for the Clients these
functions build and (plugged in once) for those built directly.
"""

from __future__ import annotations

from typing import Any

from .protocol.address import parse
from .protocol.channel import RemoteProcessor
from .protocol.client import Client, RemotePublisher, own_publisher
from .protocol.conventions import ChannelOpen
from .protocol.dialling import Options
from .protocol.remote_subscriber import RemoteSubscriber
from .zero_loss.resume_client import ResumablePublisher

Client.plugged = ResumablePublisher  # net.Client(...) too: its publishers' resumable() is the zero-loss reader


def connect(address: str, **options: Any) -> RemotePublisher[ResumablePublisher]:
    """The Publisher served at ``address`` (e.g. ``'tcp://127.0.0.1:7878/numbers'``).

    Options: ``token`` (or ``?token=`` in the address), ``ssl`` (client ``SSLContext`` for
    ``tls://``) or ``tls`` (:class:`~rs_spark.net.TlsFiles`: CA file, client certificate, host
    name; picklable, so a pickled publisher keeps it),
    ``codec`` (``json`` default, ``text``, ``bytes``, ``arrow``; or ``?codec=``),
    ``batch_rows`` (arrow: most rows per delivered batch, default 65536),
    ``keepalive`` / ``lifetime`` (seconds: a silent server ends the stream with
    ``ConnectionLost`` after ``lifetime``), ``connect_timeout``, ``limits``.
    Each ``subscribe`` opens its own connection.
    """
    return own_publisher(address, ResumablePublisher, **options)


def connect_subscriber(
    address: str, *, channel_open: str | ChannelOpen = "first_element", **options: Any
) -> RemoteSubscriber:
    """The Subscriber served at ``address``: subscribe it to a local Publisher. Same options as
    :func:`connect`. Single use, like any Subscriber. ``channel_open``
    (:class:`~rs_spark.net.ChannelOpen`): ``"first_element"`` sends the first element in the
    REQUEST_CHANNEL frame (rs_spark, rsocket-java, rsocket-js); ``"route_only"`` sends only the
    route there (responders built on the ``rsocket`` Python package)."""
    addr = parse(address)
    return RemoteSubscriber(_client(address, options), addr.name, own=True, channel_open=channel_open)


def connect_processor(address: str, **options: Any) -> RemoteProcessor:
    """The Processor served at ``address`` (:meth:`Server.add_processor`): one two-way channel.
    Subscribe a local Subscriber to it for the answers and subscribe it to a local Publisher for
    what to send. Same options as :func:`connect`."""
    return RemoteProcessor(_client(address, options), parse(address).name, own=True)


def _client(address: str, options: dict[str, Any]) -> Client[ResumablePublisher]:
    addr = parse(address)
    return Client(addr.base + addr.query(with_token=True), resumer=ResumablePublisher, **options)


__all__ = [
    "connect",
    "connect_subscriber",
    "connect_processor",
    "RemoteProcessor",
    "Client",
    "RemotePublisher",
    "RemoteSubscriber",
    "Options",
]
