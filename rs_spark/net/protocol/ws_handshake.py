"""The WebSocket opening handshake (RFC 6455, 4): the HTTP upgrade both sides of ``ws://`` and
``wss://`` exchange before :mod:`.websocket` moves frames. Bounded (headers, deadline); a server
refuses an upgrade from an origin not allowed (403) or a request that is not an upgrade (400),
answering why."""

from __future__ import annotations

import base64
import hashlib
import os
import time
from collections.abc import Sequence

from .tls import Sock

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_MAX_HEADER = 8192  # bytes of HTTP handshake headers accepted


class HandshakeError(OSError):
    """The WebSocket upgrade failed (the message says what the other side answered)."""


def accept_value(key: str) -> str:
    """``Sec-WebSocket-Accept`` for a client's ``Sec-WebSocket-Key`` (RFC 6455, 4.2.2)."""
    return base64.b64encode(hashlib.sha1(key.encode("ascii") + _GUID).digest()).decode("ascii")


def _read_head(sock: Sock, deadline: float) -> tuple[bytes, bytes]:
    """Read an HTTP head (up to the blank line); returns (head, bytes read past it)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise HandshakeError("the WebSocket handshake did not finish in time")
        sock.settimeout(left)
        chunk = sock.recv(4096)
        if not chunk:
            raise HandshakeError("the connection closed during the WebSocket handshake")
        buf += chunk
        if len(buf) > _MAX_HEADER and b"\r\n\r\n" not in buf[: _MAX_HEADER + 4]:
            raise HandshakeError(f"the WebSocket handshake headers exceed {_MAX_HEADER} bytes")
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


def _headers(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        k, sep, v = line.partition(":")
        if sep:
            out[k.strip().lower()] = v.strip()
    return out


def client_handshake(sock: Sock, host: str, path: str, timeout: float) -> bytes:
    """Upgrade a connected socket to WebSocket as a client; returns bytes read past the answer."""
    key = base64.b64encode(os.urandom(16)).decode("ascii")
    req = (
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: rsocket\r\n\r\n"
    )
    sock.settimeout(timeout)
    sock.sendall(req.encode("ascii"))
    head, rest = _read_head(sock, time.monotonic() + timeout)
    lines = head.decode("latin-1").split("\r\n")
    status = lines[0].split(" ", 2)
    if len(status) < 2 or status[1] != "101":
        raise HandshakeError(
            f"the server answered {lines[0]!r} instead of switching to WebSocket (is it a ws:// endpoint?)"
        )
    if _headers(lines[1:]).get("sec-websocket-accept") != accept_value(key):
        raise HandshakeError("the server's Sec-WebSocket-Accept does not match our key: not a WebSocket server")
    return rest


def server_handshake(sock: Sock, timeout: float, allowed_origins: Sequence[str] = ()) -> bytes:
    """Answer a client's WebSocket upgrade; returns bytes read past the request. A request
    that is not an upgrade gets ``400`` with the reason and :class:`HandshakeError`; one from a
    web page whose ``Origin`` is not in ``allowed_origins`` gets ``403``."""
    head, rest = _read_head(sock, time.monotonic() + timeout)
    lines = head.decode("latin-1").split("\r\n")
    h = _headers(lines[1:])
    origin = h.get("origin")
    if origin is not None and origin not in allowed_origins:
        # Browsers send Origin on every WebSocket upgrade and other clients do not: without this any
        # page the user visits could read or feed a ws://127.0.0.1 endpoint (WebSockets ignore CORS).
        _answer_refusal(
            sock,
            "403 Forbidden",
            f"WebSocket upgrades from web pages are refused unless their origin is allowed; {origin!r} is "
            "not (Server(..., allowed_origins=[...]))",
        )
        raise HandshakeError(f"refused a WebSocket upgrade from origin {origin!r} (not in allowed_origins)")
    why = _not_an_upgrade(lines[0], h)
    if why:
        _answer_refusal(sock, "400 Bad Request", why)
        raise HandshakeError(f"refused a WebSocket upgrade: {why}")
    protos = [p.strip() for p in h.get("sec-websocket-protocol", "").split(",") if p.strip()]
    resp = (
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Accept: {accept_value(h['sec-websocket-key'])}\r\n"
    )
    if "rsocket" in protos:
        resp += "Sec-WebSocket-Protocol: rsocket\r\n"
    sock.sendall((resp + "\r\n").encode("ascii"))
    return rest


def _not_an_upgrade(request_line: str, h: dict[str, str]) -> str:
    """Why a request is not a WebSocket upgrade we accept ('' if it is one)."""
    if not request_line.startswith("GET "):
        return "a WebSocket upgrade starts with GET"
    if h.get("upgrade", "").lower() != "websocket" or "upgrade" not in h.get("connection", "").lower():
        return "this is an RSocket WebSocket endpoint: send an 'Upgrade: websocket' request"
    if h.get("sec-websocket-version") != "13":
        return "only WebSocket version 13 is supported"
    if not h.get("sec-websocket-key"):
        return "Sec-WebSocket-Key is missing"
    return ""


def _answer_refusal(sock: Sock, status: str, reason: str) -> None:
    body = reason.encode()
    sock.sendall(
        f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nConnection: close\r\n".encode()
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


__all__ = ["HandshakeError", "accept_value", "client_handshake", "server_handshake"]
