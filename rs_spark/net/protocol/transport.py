"""Byte transport for frames: dialing and listening on TCP, TLS over TCP and Unix domain
sockets (and WebSocket on top of these).

A connection gets a blocking socket: a plain one, a :class:`~.tls.TlsSocket` (TLS done in memory
by the connection's own threads) or, for WebSocket, the plain end of a local socketpair whose
other end two threads serve (:class:`~.websocket.WsPump`). Frames are split and written by :mod:`.framing`.
"""

from __future__ import annotations

import os
import socket
import ssl as _ssl
import stat

from .address import Address
from .tls import Sock
from .tls_open import tls_client


def dial(
    addr: Address,
    timeout: float,
    context: _ssl.SSLContext | None,
    max_frame: int = 16 * 1024 * 1024,
    server_hostname: str | None = None,
) -> Sock:
    """Connect to ``addr``; the socket is left blocking. With TLS (``tls://``, ``wss://`` or a
    ``context``) the handshake is done here and the socket returned is a :class:`~.tls.TlsSocket`;
    with WebSocket (``ws://``, ``wss://``) the plain end of a ``WsPump``.
    ``server_hostname``: the name the server's certificate must list (default: the address's host)."""
    raw = _connect(addr, timeout)
    sock: Sock = raw
    if addr.scheme in ("tls", "wss") or context is not None:
        sock = _start_tls(raw, addr, context, timeout, server_hostname)
    if addr.scheme in ("ws", "wss"):
        from .websocket import ws_client

        host_header = f"[{addr.host}]:{addr.port}" if ":" in addr.host else f"{addr.host}:{addr.port}"
        sock = ws_client(sock, host_header, "/", addr.base, timeout, max_frame)  # owns sock
    sock.settimeout(None)
    return sock


def _connect(addr: Address, timeout: float) -> socket.socket:
    if addr.scheme != "unix":
        sock = socket.create_connection((addr.host, addr.port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(addr.path)
    except BaseException:
        sock.close()
        raise
    return sock


def _start_tls(
    sock: socket.socket, addr: Address, context: _ssl.SSLContext | None, timeout: float, server_hostname: str | None
) -> Sock:
    ctx = context or _ssl.create_default_context()
    host = server_hostname or (addr.host if addr.scheme != "unix" else None)
    if host is None and ctx.check_hostname:
        sock.close()
        raise ValueError(
            f"{addr.base}: TLS over a Unix socket has no host name to check the certificate "
            "against; pass an ssl context with check_hostname=False, or use tls://HOST:PORT"
        )
    return tls_client(sock, ctx, host, addr.base, timeout)  # owns (and on failure closes) sock


def listen(addr: Address, backlog: int = 64) -> socket.socket:
    """A listening socket for ``addr``; a stale Unix socket file (nobody listening) is replaced."""
    if addr.scheme == "unix":
        sock = _listen_unix(addr.path)
    else:
        family = socket.AF_INET6 if ":" in addr.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((addr.host, addr.port))
    sock.listen(backlog)
    return sock


def _listen_unix(path: str) -> socket.socket:
    if os.path.exists(path):
        _remove_stale_socket(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # owner-only from the start: no window where others can connect
    try:
        sock.bind(path)
    finally:
        os.umask(old)
    return sock


def _remove_stale_socket(path: str) -> None:
    """Unlink a socket file whose server is gone; refuse a live one or a file that is no socket."""
    if not stat.S_ISSOCK(os.stat(path).st_mode):
        raise FileExistsError(
            f"cannot serve on unix://{path}: the path exists and is not a socket; choose another path"
        )
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)  # stale: its server is gone
    else:
        raise OSError(f"cannot serve on unix://{path}: another server is listening there")
    finally:
        probe.close()


__all__ = ["dial", "listen"]
