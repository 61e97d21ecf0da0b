"""A server hosting named Publishers (read with request-stream) and Subscribers (fed with
request-channel) on one TCP, TLS or Unix socket.

Wiring: the protocol's :class:`~.protocol.host.Host` (binding, accepting, endpoints, streams) with
the zero-loss room's :class:`~.zero_loss.resume_server.ResumeService` as its resume hook.
"""

from __future__ import annotations

import ssl as _ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..streams.types import Publisher, Subscriber
from .protocol.budget import OutboundBudget
from .protocol.conventions import ChannelData
from .protocol.host import Host
from .protocol.limits import Limits
from .zero_loss.resume_server import ResumeService, ResumeServiceStats, StreamStats, fields_of
from .zero_loss.retention import Retention

SubscriberFactory = Callable[[], Subscriber[Any]]


@dataclass(frozen=True, slots=True)
class ServerStats(ResumeServiceStats):
    """What :meth:`Server.stats` shows: the resumable streams it keeps (:class:`ResumeServiceStats`:
    ``streams``, one :class:`StreamStats` each, and the totals) and its connections."""

    # Connections open now (set up or setting up).
    connections: int

    def as_dict(self) -> dict[str, Any]:
        """The old mapping (camelCase keys, streams as dicts) plus ``connections``."""
        return {**ResumeServiceStats.as_dict(self), "connections": self.connections}


class Server:
    """Serve Publishers and Subscribers by name. Binds ``127.0.0.1`` unless told otherwise.

    ``bind`` is an address without a name (``tcp://HOST:PORT``, ``tls://HOST:PORT``,
    ``ws://HOST:PORT``, ``wss://HOST:PORT``, ``unix:///path.sock``; port 0 picks a free one).
    Binding anything but loopback or a Unix socket requires ``token``; ``ssl`` (a server
    ``ssl.SSLContext``) turns on TLS.
    ``allowed_origins``: web origins (``"https://app.example"``) whose pages may open a ``ws://`` or
    ``wss://`` connection; a browser's upgrade from any other origin is refused with 403.
    ``channel_data``: what a REQUEST_CHANNEL frame's data is (:class:`~rs_spark.net.ChannelData`):
    by default non-empty data is the channel's first element (rsocket-java, rsocket-js).
    ``retention``: how a stream opened for resumption keeps what it sent until its reader
    acknowledges it, and how long it waits for a reader after its connection drops
    (:class:`~rs_spark.net.Retention`; on by default, ``Retention.off()`` turns it off). Streams of
    readers that do not ask for resumption (other RSocket peers) are not affected.
    """

    def __init__(
        self,
        bind: str = "tcp://127.0.0.1:0",
        *,
        token: str | None = None,
        ssl: _ssl.SSLContext | None = None,
        limits: Limits | None = None,
        allowed_origins: Sequence[str] = (),
        channel_data: str | ChannelData = "auto",
        retention: Retention | None = None,
    ) -> None:
        def resume(host: Host[ResumeService]) -> ResumeService:
            named, frames = host.endpoints.publisher_named, host.limits.max_frame_bytes
            return ResumeService(host.addr.base, retention or Retention(), named, frames, token=host.token)

        h = Host(
            bind,
            token=token,
            ssl=ssl,
            limits=limits,
            allowed_origins=allowed_origins,
            channel_data=channel_data,
            resume=resume,
        )
        self._host = h
        self.allowed_origins, self.channel_data, self.limits = h.allowed_origins, h.channel_data, h.limits

    def add_publisher(self, name: str, publisher: Publisher[Any]) -> str:
        """Serve ``publisher`` as ``name``; each request-stream subscribes it once. Returns its address."""
        return self._host.add("publisher", name, publisher)

    def add_subscriber(self, name: str, subscriber: Subscriber[Any] | SubscriberFactory) -> str:
        """Serve a Subscriber as ``name``: an instance accepts one channel (rule 2.12), a factory
        (a callable returning a new Subscriber) one per channel. Returns its address."""
        return self._host.add("subscriber", name, subscriber)

    def add_processor(self, name: str, factory: Callable[[], Any]) -> str:
        """Serve a two-way channel as ``name``: each request-channel gets a new Processor from
        ``factory``; its Subscriber side reads the client's elements, its Publisher side answers
        (:func:`rs_spark.net.connect_processor`). Returns its address."""
        return self._host.add("processor", name, factory)

    def remove(self, name: str) -> None:
        """Stop offering ``name`` to new streams (open streams continue)."""
        self._host.endpoints.remove(name)

    def address_of(self, name: str) -> str:
        """The address string clients pass to ``connect`` for ``name`` (without the token)."""
        return self._host.address_of(name)

    @property
    def address(self) -> str:
        """The address of the first endpoint added (what :func:`serve` served)."""
        return self._host.first_address()

    @property
    def base_address(self) -> str:
        """Where the server listens, without an endpoint name: ``tcp://127.0.0.1:40123``."""
        return self._host.addr.base

    @property
    def token(self) -> str | None:
        """The token every client must present in SETUP (None: any client that reaches it)."""
        return self._host.token

    @property
    def connection_count(self) -> int:
        """Connections open now (set up or setting up; closed ones are not counted)."""
        return self._host.connection_count

    @property
    def outbound(self) -> OutboundBudget:
        """Bytes queued for sending by all connections (``used``, ``peak``), bounded by
        ``Limits.max_server_backlog_bytes`` (``limit``)."""
        return self._host.outbound

    def stats(self) -> ServerStats:
        """Resumable streams: per stream its endpoint, state and rows kept, sent, acknowledged,
        sent again and lost; totals of retained rows and bytes, expired streams and lost rows;
        connections open now."""
        return ServerStats(**fields_of(self._host.resume.stats()), connections=self.connection_count)

    def stop(self) -> None:
        """Stop accepting, close every connection (their streams end with an error) and free the socket."""
        self._host.stop()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve(
    target: Any,
    name: str = "default",
    *,
    bind: str = "tcp://127.0.0.1:0",
    token: str | None = None,
    ssl: _ssl.SSLContext | None = None,
    limits: Limits | None = None,
    allowed_origins: Sequence[str] = (),
    channel_data: str | ChannelData = "auto",
    retention: Retention | None = None,
) -> Server:
    """Serve one Publisher (or Subscriber, or factory of Subscribers) as ``name``; returns the
    running :class:`Server`, whose ``address`` is the string to give :func:`connect` and whose
    ``stop()`` ends it. Add more endpoints with ``add_publisher``/``add_subscriber``.

    Without ``token`` anyone who can reach ``bind`` may subscribe: on 127.0.0.1 that is every local
    user (the port is listed in /proc/net/tcp). Pass a token (``secrets.token_urlsafe()``) unless
    every local user may read the stream; ``rs_spark.read_stream`` always does.

    ``retention`` (:class:`~rs_spark.net.Retention`): a reader that asks for resumption (the
    ``reactive`` source does) gets its rows kept until it acknowledges them, so a restarted reader
    continues without loss; on by default, within bounds; ``Retention.off()`` turns it off."""
    server = Server(
        bind,
        token=token,
        ssl=ssl,
        limits=limits,
        allowed_origins=allowed_origins,
        channel_data=channel_data,
        retention=retention,
    )
    try:
        if hasattr(target, "subscribe"):
            server.add_publisher(name, target)
        else:
            server.add_subscriber(name, target)
    except BaseException:
        server.stop()
        raise
    return server


__all__ = ["Server", "ServerStats", "StreamStats", "serve"]
