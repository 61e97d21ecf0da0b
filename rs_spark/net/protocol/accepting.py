"""Accepting connections: the bind address and its checks (:func:`bind_address`), the accept loop
with its limit on open sockets and the TLS/WebSocket wrapping (:class:`Acceptor`), and the checks of
a client's SETUP (:func:`check_setup`). What a set-up connection then serves is the handler's
(:class:`~.host.Host` composes this with the endpoints and the resume hook).
"""

from __future__ import annotations

import logging
import os
import socket
import ssl as _ssl
import threading
from collections.abc import Callable, Sequence

from . import frames as F
from .address import Address, parse
from .auth import check_token
from .budget import OutboundBudget
from .codecs import make_codec
from .connection import Connection, Handler
from .errors import Rejected
from .limits import Limits
from .refuser import refuse
from .tls import Sock
from .tls_open import tls_server
from .transport import listen
from .websocket import ws_server

log = logging.getLogger("rs_spark.net")


def bind_address(bind: str, token: str | None, ssl: _ssl.SSLContext | None) -> tuple[Address, str | None]:
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


def check_setup(conn: Connection, f: F.Frame, where: str, token: str | None, max_lifetime: float) -> None:
    """A client's SETUP (the connection's reader thread): check its version, leases, keepalive,
    data MIME type and token, then take its MIME types and keepalive (the lifetime capped by
    ``max_lifetime``). Raises ``Rejected``, sent to the client as ERROR, when it cannot be served."""
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
    check_token(token, f.metadata_mime, f.metadata, where)
    conn.metadata_mime, conn.data_mime = f.metadata_mime, f.data_mime
    ka = f.keepalive_ms / 1000
    conn.keepalive = ka
    conn.lifetime = min(max(f.lifetime_ms / 1000, 2 * ka), max_lifetime)


class Acceptor:
    """Listens at ``addr`` and starts a server :class:`Connection` for each accepted socket, wrapped
    in TLS (``ssl``) and WebSocket (``ws``/``wss`` addresses), its frames going to the handler given
    to :meth:`start`. At most ``Limits.max_connections`` network sockets are open at once."""

    def __init__(
        self,
        addr: Address,
        ssl: _ssl.SSLContext | None,
        limits: Limits,
        allowed_origins: Sequence[str],
        budget: OutboundBudget,
    ) -> None:
        self._ssl = ssl
        self._limits = limits
        self._allowed_origins = tuple(allowed_origins)
        self._budget = budget  # shared by the connections
        self._lock = threading.Lock()
        self._conns: set[Connection] = set()
        self._open_sockets = 0  # accepted network sockets not yet closed: what max_connections bounds
        self._stopped = False
        self._sock = listen(addr)
        if addr.scheme != "unix":
            addr = Address(addr.scheme, addr.host, self._sock.getsockname()[1])
        self.address = addr
        self._handler: Handler | None = None
        self._thread = threading.Thread(target=self._accept_loop, name=f"rs-net-accept {addr.base}", daemon=True)

    def start(self, handler: Handler) -> None:
        """Accept connections from now on, ``handler`` serving them."""
        self._handler = handler
        self._thread.start()

    @property
    def connection_count(self) -> int:
        """Connections open now (set up or setting up; closed ones are not counted)."""
        return len(self._conns)

    def connections(self) -> list[Connection]:
        """The connections open now (a snapshot)."""
        with self._lock:
            return list(self._conns)

    def stop_accepting(self) -> list[Connection] | None:
        """Mark the acceptor stopped; the connections open now (None: it was stopped already)."""
        with self._lock:
            if self._stopped:
                return None
            self._stopped = True
            return list(self._conns)

    def close(self, conns: list[Connection], reason: str) -> None:
        """Free the listening socket (waking the accept loop) and end ``conns`` with ``reason``."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes accept() on Linux
        except OSError:
            pass
        self._sock.close()
        for c in conns:
            c.reject(F.CONNECTION_ERROR, reason)

    def join(self) -> None:
        """Wait for the accept loop to end and remove a Unix socket's file."""
        self._thread.join(2.0)
        if self.address.scheme == "unix":
            try:
                os.unlink(self.address.path)
            except OSError:
                pass

    def _accept_loop(self) -> None:
        while True:
            try:
                sock, peer = self._sock.accept()
            except OSError as exc:
                if self._stopped:
                    return
                log.warning("rs_spark.net: accept on %s failed: %s", self.address.base, exc)
                threading.Event().wait(0.05)  # e.g. out of file descriptors: back off, do not spin
                continue
            if self._stopped:
                sock.close()
                return
            peer_s = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "unix peer"
            label = f"{peer_s} on {self.address.base}"
            if self._open_sockets >= self._limits.max_connections:
                self._refuse(sock, label)
                continue
            with self._lock:
                self._open_sockets += 1
            self._serve_socket(sock, label)

    def _refuse(self, sock: socket.socket, label: str) -> None:
        """Turn away a socket beyond ``Limits.max_connections``."""
        log.warning("rs_spark.net: refused %s: %d connections open (Limits.max_connections)", label, self._open_sockets)
        if self._ssl is None and self.address.scheme == "tcp":  # TLS/WebSocket clients could not read it
            where, most = self.address.base, self._limits.max_connections
            refuse(
                sock, F.encode_error(0, F.CONNECTION_ERROR, f"{where} has too many connections ({most}); retry later")
            )
        else:
            sock.close()

    def _releaser(self) -> Callable[[], None]:
        """What gives back an accepted socket's place under ``max_connections``, at most once."""
        released = False

        def release() -> None:  # once, when the network socket itself is closed
            nonlocal released
            with self._lock:
                if not released:
                    released = True
                    self._open_sockets -= 1

        return release

    def _wrap(self, raw: socket.socket, label: str, release: Callable[[], None]) -> Sock:
        """``raw`` in TLS and WebSocket as the server's address asks."""
        sock: Sock = raw
        if raw.family != socket.AF_UNIX:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._ssl is not None:  # the handshake runs on the connection's first read, within setup_timeout
            sock = tls_server(raw, self._ssl, label, self._limits.setup_timeout)
        if self.address.scheme in ("ws", "wss"):  # the upgrade runs on the pump thread, within setup_timeout
            sock = ws_server(  # the pump closes the network socket
                sock,
                label,
                self._limits.setup_timeout,
                self._limits.max_frame_bytes,
                self._allowed_origins,
                on_closed=release,
            )
        return sock

    def _serve_socket(self, raw: socket.socket, label: str) -> None:
        """Wrap an accepted socket (TLS, WebSocket) and start its Connection."""
        release = self._releaser()
        try:
            sock = self._wrap(raw, label, release)
        except (OSError, ValueError) as exc:
            what = "TLS" if self._ssl else "the connection"
            log.warning("rs_spark.net: %s for %s could not start: %s", what, label, exc)
            release()
            return
        ws = self.address.scheme in ("ws", "wss")

        def closed(conn: Connection) -> None:
            with self._lock:
                self._conns.discard(conn)
            if not ws:
                release()

        conn = Connection(
            sock,
            client=False,
            label=label,
            limits=self._limits,
            handler=self._handler,
            keepalive=self._limits.max_lifetime,
            lifetime=self._limits.max_lifetime,
            on_closed=closed,
            budget=self._budget,
        )
        with self._lock:
            self._conns.add(conn)
        conn.start()


__all__ = ["Acceptor", "bind_address", "check_setup"]
