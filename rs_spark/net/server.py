"""A server hosting named Publishers (read with request-stream) and Subscribers (fed with
request-channel) on one TCP, TLS or Unix socket."""

from __future__ import annotations

import logging
import os
import socket
import ssl as _ssl
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..streams.types import Publisher, Subscriber
from .opening import Endpoint, Endpoints, StreamOpener
from .protocol import frames as F
from .protocol.address import Address, parse
from .protocol.auth import check_token
from .protocol.budget import OutboundBudget
from .protocol.codecs import make_codec
from .protocol.connection import Connection
from .protocol.conventions import ChannelData
from .protocol.errors import Rejected
from .protocol.limits import Limits
from .protocol.refuser import refuse
from .protocol.tls import Sock, tls_server
from .protocol.transport import listen
from .protocol.websocket import ws_server
from .zero_loss.resume_server import ResumeService, ResumeServiceStats, StreamStats, fields_of
from .zero_loss.retention import Retention

log = logging.getLogger("rs_spark.net")

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
        addr, token = _bind_address(bind, token, ssl)
        self._token = token
        self._ssl = ssl
        self.limits = limits or Limits()
        self._outbound = OutboundBudget(self.limits.max_server_backlog_bytes)  # shared by the connections
        self._lock = threading.Lock()
        self._conns: set[Connection] = set()
        self._open_sockets = 0  # accepted network sockets not yet closed: what max_connections bounds
        self._stopped = False
        self._sock = listen(addr)
        if addr.scheme != "unix":
            addr = Address(addr.scheme, addr.host, self._sock.getsockname()[1])
        self._addr = addr
        self._endpoints = Endpoints(addr.base)
        self._resume = ResumeService(
            addr.base,
            retention or Retention(),
            self._endpoints.publisher_named,
            self.limits.max_frame_bytes,
            token=token,
        )
        self._opener = StreamOpener(self._endpoints, self._resume, token, self.channel_data, self.address_of, addr.base)
        self._thread = threading.Thread(target=self._accept_loop, name=f"rs-net-accept {addr.base}", daemon=True)
        self._thread.start()

    # -- endpoints ----------------------------------------------------------------------
    def add_publisher(self, name: str, publisher: Publisher[Any]) -> str:
        """Serve ``publisher`` as ``name``; each request-stream subscribes it once. Returns its address."""
        if publisher is None or not hasattr(publisher, "subscribe"):
            raise TypeError(
                f"add_publisher({name!r}, ...) needs a Publisher (an object with subscribe()), "
                f"got {type(publisher).__name__}"
            )
        return self._add(name, Endpoint("publisher", publisher))

    def add_subscriber(self, name: str, subscriber: Subscriber[Any] | SubscriberFactory) -> str:
        """Serve a Subscriber as ``name``: an instance accepts one channel (rule 2.12), a factory
        (a callable returning a new Subscriber) one per channel. Returns its address."""
        if subscriber is None or not (hasattr(subscriber, "on_subscribe") or callable(subscriber)):
            raise TypeError(
                f"add_subscriber({name!r}, ...) needs a Subscriber or a factory of Subscribers, "
                f"got {type(subscriber).__name__}"
            )
        return self._add(name, Endpoint("subscriber", subscriber))

    def add_processor(self, name: str, factory: Callable[[], Any]) -> str:
        """Serve a two-way channel as ``name``: each request-channel gets a new Processor from
        ``factory``; its Subscriber side reads the client's elements, its Publisher side answers
        (:func:`rs_spark.net.connect_processor`). Returns its address."""
        if not callable(factory) or hasattr(factory, "on_subscribe"):
            raise TypeError(
                f"add_processor({name!r}, ...) needs a factory (a callable returning a new Processor "
                f"per channel), got {type(factory).__name__}"
            )
        return self._add(name, Endpoint("processor", factory))

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
        return len(self._conns)

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
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            conns = list(self._conns)
        readerless = self._resume.readerless()  # before the connections close: which streams had a reader
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes accept() on Linux
        except OSError:
            pass
        self._sock.close()
        for c in conns:
            c.reject(F.CONNECTION_ERROR, f"the server {self._addr.base} was stopped")
        self._resume.stop(readerless)
        self._thread.join(2.0)
        if self._addr.scheme == "unix":
            try:
                os.unlink(self._addr.path)
            except OSError:
                pass

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _accept_loop(self) -> None:
        while True:
            try:
                sock, peer = self._sock.accept()
            except OSError as exc:
                if self._stopped:
                    return
                log.warning("rs_spark.net: accept on %s failed: %s", self._addr.base, exc)
                threading.Event().wait(0.05)  # e.g. out of file descriptors: back off, do not spin
                continue
            if self._stopped:
                sock.close()
                return
            peer_s = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "unix peer"
            label = f"{peer_s} on {self._addr.base}"
            if self._open_sockets >= self.limits.max_connections:
                log.warning(
                    "rs_spark.net: refused %s: %d connections open (Limits.max_connections)", label, self._open_sockets
                )
                if self._ssl is None and self._addr.scheme == "tcp":  # TLS/WebSocket clients could not read it
                    refuse(
                        sock,
                        F.encode_error(
                            0,
                            F.CONNECTION_ERROR,
                            f"{self._addr.base} has too many connections ({self.limits.max_connections}); retry later",
                        ),
                    )
                else:
                    sock.close()
                continue
            with self._lock:
                self._open_sockets += 1
            self._serve_socket(sock, label)

    def _serve_socket(self, raw: socket.socket, label: str) -> None:
        """Wrap an accepted socket (TLS, WebSocket) and start its Connection."""
        released = False

        def release() -> None:  # once, when the network socket itself is closed
            nonlocal released
            with self._lock:
                if not released:
                    released = True
                    self._open_sockets -= 1

        sock: Sock = raw
        try:
            if raw.family != socket.AF_UNIX:
                raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._ssl is not None:  # the handshake runs on the connection's first read, within setup_timeout
                sock = tls_server(raw, self._ssl, label, self.limits.setup_timeout)
            ws = self._addr.scheme in ("ws", "wss")
            if ws:  # the upgrade runs on the pump thread, within setup_timeout; the pump closes the network socket
                sock = ws_server(
                    sock,
                    label,
                    self.limits.setup_timeout,
                    self.limits.max_frame_bytes,
                    self.allowed_origins,
                    on_closed=release,
                )
        except (OSError, ValueError) as exc:
            log.warning(
                "rs_spark.net: %s for %s could not start: %s", "TLS" if self._ssl else "the connection", label, exc
            )
            release()
            return

        def closed(conn: Connection) -> None:
            self._forget(conn)
            if not ws:
                release()

        conn = Connection(
            sock,
            client=False,
            label=label,
            limits=self.limits,
            handler=self,
            keepalive=self.limits.max_lifetime,
            lifetime=self.limits.max_lifetime,
            on_closed=closed,
            budget=self._outbound,
        )
        with self._lock:
            self._conns.add(conn)
        conn.start()

    def _forget(self, conn: Connection) -> None:
        with self._lock:
            self._conns.discard(conn)

    # -- Handler (reader threads) -------------------------------------------------------
    def on_setup(self, conn: Connection, f: F.Frame) -> None:
        """A client's SETUP (the connection's reader thread): check its version, leases,
        keepalive, data MIME type and token; one that asks for resumption goes to the resume
        service. Raises ``Rejected``, sent to the client as ERROR, when the server cannot serve it."""
        where = self._addr.base
        if f.version[0] != 1:
            raise Rejected(
                F.UNSUPPORTED_SETUP, f"{where} speaks RSocket 1.x; the client asked for {f.version[0]}.{f.version[1]}"
            )
        if f.flags & F.FLAG_LEASE:
            raise Rejected(F.UNSUPPORTED_SETUP, f"{where} does not support leases; connect without honor_lease")
        if f.keepalive_ms <= 0 or f.lifetime_ms <= 0:
            raise Rejected(F.INVALID_SETUP, "keepalive interval and max lifetime must be > 0 ms")
        try:
            make_codec(f.data_mime)
        except ValueError as exc:
            raise Rejected(
                F.UNSUPPORTED_SETUP, f"{where}: data MIME type {f.data_mime!r} is not supported: {exc}"
            ) from None
        check_token(self._token, f.metadata_mime, f.metadata, where)
        conn.metadata_mime, conn.data_mime = f.metadata_mime, f.data_mime
        ka = f.keepalive_ms / 1000
        conn.keepalive = ka
        conn.lifetime = min(max(f.lifetime_ms / 1000, 2 * ka), self.limits.max_lifetime)
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


def _bind_address(bind: str, token: str | None, ssl: _ssl.SSLContext | None) -> tuple[Address, str | None]:
    """The address to listen on (``tls``/``wss`` when ``ssl`` is given) and the token, checked:
    beyond loopback a token is required, and TLS needs a certificate."""
    addr = parse(bind, need_name=False)
    if addr.name:
        raise ValueError(
            f"bind address {bind!r} must not name an endpoint; names are given to add_publisher()/add_subscriber()"
        )
    token = token if token is not None else addr.token
    if token is not None and (not isinstance(token, str) or not token):
        raise ValueError("token must be a non-empty str")
    if not addr.is_loopback and token is None:
        raise ValueError(
            f"binding {addr.base} exposes the server beyond this machine, so a token is required: "
            "serve(..., token=secrets.token_urlsafe(32)) and give the same token to connect(); "
            "pass ssl= (a server ssl.SSLContext) too, or the token and data cross the network in clear text"
        )
    if addr.scheme in ("tls", "wss") and ssl is None:
        raise ValueError(
            f"{addr.base}: a {addr.scheme}:// server needs ssl= (a server ssl.SSLContext with its "
            "certificate loaded: ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); "
            "ctx.load_cert_chain(certfile, keyfile))"
        )
    if ssl is not None and addr.scheme == "unix":
        raise ValueError(
            f"{addr.base}: ssl= with a unix:// socket: clients of unix:// speak no TLS, so none could connect; "
            "a Unix socket is guarded by its file's permissions instead: drop ssl=, or bind tls://HOST:PORT"
        )
    if ssl is not None and addr.scheme in ("tcp", "ws"):
        addr = Address("tls" if addr.scheme == "tcp" else "wss", addr.host, addr.port, token=addr.token)
    if not addr.is_loopback and ssl is None:
        log.warning(
            "rs_spark.net: serving %s without TLS: the token and all data cross the network in "
            "clear text; pass ssl= (a server ssl.SSLContext) on untrusted networks",
            addr.base,
        )
    return addr, token


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
