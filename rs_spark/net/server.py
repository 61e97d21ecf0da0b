"""A server hosting named Publishers (read with request-stream) and Subscribers (fed with
request-channel) on one TCP, TLS or Unix socket."""

from __future__ import annotations

import ssl as _ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..streams.types import Publisher, Subscriber
from .protocol import frames as F
from .protocol.accepting import Acceptor, bind_address, check_setup
from .protocol.budget import OutboundBudget
from .protocol.connection import Connection
from .protocol.conventions import ChannelData
from .protocol.endpoints import Endpoint, Endpoints
from .protocol.limits import Limits
from .protocol.opening import StreamOpener
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
        self.allowed_origins = tuple(allowed_origins)
        self.channel_data = ChannelData.of(channel_data, "Server")
        addr, token = bind_address(bind, token, ssl)
        self._token = token
        self.limits = limits or Limits()
        self._outbound = OutboundBudget(self.limits.max_server_backlog_bytes)  # shared by the connections
        self._acceptor = Acceptor(addr, ssl, self.limits, self.allowed_origins, self._outbound)
        self._addr = addr = self._acceptor.address  # with the port picked
        self._endpoints = Endpoints(addr.base)
        self._resume = ResumeService(
            addr.base,
            retention or Retention(),
            self._endpoints.publisher_named,
            self.limits.max_frame_bytes,
            token=token,
        )
        self._opener = StreamOpener(self._endpoints, self._resume, self.channel_data, self.address_of, addr.base)
        self._acceptor.start(self)

    # -- endpoints ----------------------------------------------------------------------
    def add_publisher(self, name: str, publisher: Publisher[Any]) -> str:
        """Serve ``publisher`` as ``name``; each request-stream subscribes it once. Returns its address."""
        return self._add(name, Endpoint.of("publisher", name, publisher))

    def add_subscriber(self, name: str, subscriber: Subscriber[Any] | SubscriberFactory) -> str:
        """Serve a Subscriber as ``name``: an instance accepts one channel (rule 2.12), a factory
        (a callable returning a new Subscriber) one per channel. Returns its address."""
        return self._add(name, Endpoint.of("subscriber", name, subscriber))

    def add_processor(self, name: str, factory: Callable[[], Any]) -> str:
        """Serve a two-way channel as ``name``: each request-channel gets a new Processor from
        ``factory``; its Subscriber side reads the client's elements, its Publisher side answers
        (:func:`rs_spark.net.connect_processor`). Returns its address."""
        return self._add(name, Endpoint.of("processor", name, factory))

    def remove(self, name: str) -> None:
        """Stop offering ``name`` to new streams (open streams continue)."""
        self._endpoints.remove(name)

    def _add(self, name: str, ep: Endpoint) -> str:
        self._endpoints.add(name, ep)
        return self.address_of(name)

    # -- addresses ----------------------------------------------------------------------
    def address_of(self, name: str) -> str:
        """The address string clients pass to ``connect`` for ``name`` (without the token)."""
        return self._addr.with_name(name).format()

    @property
    def address(self) -> str:
        """The address of the first endpoint added (what :func:`serve` served)."""
        first = self._endpoints.first
        if first is None:
            raise ValueError(f"{self._addr.base} serves no endpoint yet; add_publisher()/add_subscriber() first")
        return self.address_of(first)

    @property
    def base_address(self) -> str:
        """Where the server listens, without an endpoint name: ``tcp://127.0.0.1:40123``."""
        return self._addr.base

    @property
    def token(self) -> str | None:
        """The token every client must present in SETUP (None: any client that reaches it)."""
        return self._token

    @property
    def connection_count(self) -> int:
        """Connections open now (set up or setting up; closed ones are not counted)."""
        return self._acceptor.connection_count

    @property
    def outbound(self) -> OutboundBudget:
        """Bytes queued for sending by all connections (``used``, ``peak``), bounded by
        ``Limits.max_server_backlog_bytes`` (``limit``)."""
        return self._outbound

    def stats(self) -> ServerStats:
        """Resumable streams: per stream its endpoint, state and rows kept, sent, acknowledged,
        sent again and lost; totals of retained rows and bytes, expired streams and lost rows;
        connections open now."""
        return ServerStats(**fields_of(self._resume.stats()), connections=self.connection_count)

    # -- lifecycle ----------------------------------------------------------------------
    def stop(self) -> None:
        """Stop accepting, close every connection (their streams end with an error) and free the socket."""
        conns = self._acceptor.stop_accepting()
        if conns is None:
            return
        readerless = self._resume.readerless()  # before the connections close: which streams had a reader
        self._acceptor.close(conns, f"the server {self._addr.base} was stopped")
        self._resume.stop(readerless)
        self._acceptor.join()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- Handler (reader threads) -------------------------------------------------------
    def on_setup(self, conn: Connection, f: F.Frame) -> None:
        """A client's SETUP (the connection's reader thread): check its version, leases,
        keepalive, data MIME type and token; one that asks for resumption goes to the resume
        service. Raises ``Rejected``, sent to the client as ERROR, when the server cannot serve it."""
        check_setup(conn, f, self._addr.base, self._token, self.limits.max_lifetime)
        if f.flags & F.FLAG_RESUME:
            self._resume.accept_setup(conn, f)

    def on_resume(self, conn: Connection, f: F.Frame) -> None:
        """A connection that starts with RESUME: continue a stream kept for its reader."""
        self._resume.on_resume(conn, f)

    def on_metadata_push(self, conn: Connection, f: F.Frame) -> None:
        """METADATA_PUSH: a reader's acknowledgement (resumable streams)."""
        self._resume.on_metadata_push(conn, f)

    def open_stream(self, conn: Connection, f: F.Frame) -> None:
        """A REQUEST_STREAM or REQUEST_CHANNEL (the connection's reader thread): route it to the
        endpoint its metadata names and open the stream: a publisher's (resumable when the SETUP
        asked for it), a fetch of a resumable stream's kept rows, a processor's or a subscriber's
        channel. Raises ``Rejected``, sent to the client as ERROR, saying why it cannot."""
        self._opener.open(conn, f)


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
