"""What a connection holds for resumption: the stream's session, typed here, kept in the zero-loss room.

A server's handler that accepts a SETUP asking for resumption (or a RESUME) records on the
:class:`~.connection.Connection` which resumable stream the connection carries; the connection
only holds it (``Connection.resumption``). The zero-loss room's
:class:`~rs_spark.net.zero_loss.sessions.Session` is one; this room never imports it.
"""

from __future__ import annotations

from typing import Protocol


class Resumption(Protocol):
    """A resumable stream's session, as a connection holds it."""

    @property
    def token(self) -> bytes:
        """The resume token the stream is known by."""

    @property
    def window(self) -> float:
        """Seconds the stream waits for its reader once its connection dropped."""


__all__ = ["Resumption"]
