"""The bounds a connection and a server hold to (:class:`Limits`), so that one bad or dead peer cannot
exhaust memory or hang a server."""

from __future__ import annotations

from dataclasses import dataclass

from . import frames as F


@dataclass(frozen=True)
class Limits:
    """Bounds that keep one bad or dead peer from exhausting memory or hanging a server."""

    max_frame_bytes: int = F.MAX_FRAME_LENGTH
    """Largest frame accepted; a bigger length prefix closes the connection before its body is read."""
    max_streams: int = 256
    """Open streams per connection; more are refused with ERROR[REJECTED]."""
    max_connections: int = 64
    """Connections per server; more are closed at once."""
    setup_timeout: float = 5.0
    """Seconds from accept to a valid SETUP frame (TLS handshake included)."""
    max_lifetime: float = 120.0
    """Server side: the longest a client may stay silent, whatever its SETUP asks for."""
    high_water_bytes: int = 8 * 1024 * 1024
    """Queued outgoing bytes above which outbound streams pause their publisher."""
    max_backlog_bytes: int = 32 * 1024 * 1024
    """Queued outgoing bytes above which the peer is taken to have stopped reading: the connection is
    closed (streams pause at ``high_water_bytes``, so only a peer that never reads gets here). Never
    below ``high_water_bytes + 2 * max_frame_bytes``, which paused streams may still have queued."""
    max_server_backlog_bytes: int = 256 * 1024 * 1024
    """Server side: queued outgoing bytes of all its connections together (each frame charged its length
    plus ``budget.FRAME_OVERHEAD``). A frame that would pass it closes the connection holding the most
    (usually a peer that stopped reading), or its own if it still does not fit."""
    reply_high_water_bytes: int = 256 * 1024
    """Queued replies (frames the peer's own frames make us send: ERRORs answering its requests, KEEPALIVE
    echoes, REQUEST_N, ...; each counted as its length plus ``budget.FRAME_OVERHEAD``) above which the
    connection stops reading the peer, until they drain to half of it (Netty's ``Channel.isWritable``).
    A peer that asks and never reads so holds about this much; its own TCP window pushes back on it."""
    reply_stall_timeout: float = 30.0
    """Seconds a connection may stay stopped by ``reply_high_water_bytes`` (its peer not reading our
    replies) before it is closed, with a warning naming the peer."""

    def __post_init__(self) -> None:
        if not 64 <= self.max_frame_bytes <= F.MAX_FRAME_LENGTH:
            raise ValueError(
                f"Limits.max_frame_bytes must be within 64..{F.MAX_FRAME_LENGTH}, got {self.max_frame_bytes}"
            )
        for f in (
            "max_streams",
            "max_connections",
            "high_water_bytes",
            "max_backlog_bytes",
            "max_server_backlog_bytes",
            "reply_high_water_bytes",
        ):
            if getattr(self, f) < 1:
                raise ValueError(f"Limits.{f} must be >= 1, got {getattr(self, f)}")
        for f in ("setup_timeout", "max_lifetime", "reply_stall_timeout"):
            if getattr(self, f) <= 0:
                raise ValueError(f"Limits.{f} must be > 0 seconds, got {getattr(self, f)}")


__all__ = ["Limits"]
