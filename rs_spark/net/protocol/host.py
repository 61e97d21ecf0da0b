"""A server's protocol side: :class:`Host` binds, accepts connections, checks their SETUP, keeps
the endpoints by name and opens the streams requests ask for.

What resumption changes (a SETUP or a RESUME that asks for it, acknowledgements, streams kept
until acknowledged) it asks a :class:`ResumeHook`: the zero-loss room's
:class:`~rs_spark.net.zero_loss.resume_server.ResumeService`, which :class:`rs_spark.net.Server`
builds for its Host; this room never imports it.
"""

from __future__ import annotations

import ssl as _ssl
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from . import frames as F
from .accepting import Acceptor, bind_address, check_setup
from .budget import OutboundBudget
from .connection import Connection
from .conventions import ChannelData
from .endpoints import Endpoint, Endpoints
from .limits import Limits
from .opening import KeptStreams, StreamOpener


class ResumeHook(KeptStreams, Protocol):
    """What a host asks the side that keeps streams for their readers to resume."""

    def accept_setup(self, conn: Connection, f: F.Frame) -> None:
        """A checked SETUP that asks for resumption (raises ``Rejected`` when it cannot be served)."""

    def on_resume(self, conn: Connection, f: F.Frame) -> None:
        """A connection that starts with RESUME."""

    def on_metadata_push(self, conn: Connection, f: F.Frame) -> None:
        """METADATA_PUSH: a reader's acknowledgement."""

    def readerless(self) -> set[bytes]:
        """The streams no reader is on now (asked before the host closes its connections)."""

    def stop(self, readerless: set[bytes] | None = None) -> None:
        """The host stopped; ``readerless``: what :meth:`readerless` said before."""


H = TypeVar("H", bound=ResumeHook)


class Host(Generic[H]):
    """Listens at ``bind`` (checked by :func:`~.accepting.bind_address`) and serves what
    :meth:`add` names; the :class:`~.connection.Handler` of its connections. ``resume`` builds its
    :attr:`resume` hook once it is bound (the hook needs its address, endpoints and token)."""

    def __init__(
        self,
        bind: str,
        *,
        token: str | None,
        ssl: _ssl.SSLContext | None,
        limits: Limits | None,
        allowed_origins: Sequence[str],
        channel_data: str | ChannelData,
        resume: Callable[[Host[H]], H],
    ) -> None:
        self.allowed_origins = tuple(allowed_origins)
        self.channel_data = ChannelData.of(channel_data, "Server")
        addr, self.token = bind_address(bind, token, ssl)
        self.limits = limits or Limits()
        self.outbound = OutboundBudget(self.limits.max_server_backlog_bytes)  # shared by the connections
        self._acceptor = Acceptor(addr, ssl, self.limits, self.allowed_origins, self.outbound)
        self.addr = self._acceptor.address  # with the port picked
        self.endpoints = Endpoints(self.addr.base)
        self.resume = resume(self)
        self._opener = StreamOpener(self.endpoints, self.resume, self.channel_data, self.address_of, self.addr.base)
        self._acceptor.start(self)

    def add(self, kind: str, name: str, target: Any) -> str:
        """Serve ``target`` as endpoint ``name`` of ``kind`` (:meth:`~.endpoints.Endpoint.of`); its address."""
        self.endpoints.add(name, Endpoint.of(kind, name, target))
        return self.address_of(name)

    def address_of(self, name: str) -> str:
        """The address clients reach endpoint ``name`` at (without the token)."""
        return self.addr.with_name(name).format()

    def first_address(self) -> str:
        """The address of the first endpoint added; ValueError while there is none."""
        first = self.endpoints.first
        if first is None:
            raise ValueError(f"{self.addr.base} serves no endpoint yet; add_publisher()/add_subscriber() first")
        return self.address_of(first)

    @property
    def connection_count(self) -> int:
        """Connections open now (set up or setting up; closed ones are not counted)."""
        return self._acceptor.connection_count

    def connections(self) -> list[Connection]:
        """The connections open now (a snapshot)."""
        return self._acceptor.connections()

    def stop(self) -> None:
        """Stop accepting, close every connection (their streams end with an error), tell the resume
        hook (which streams had a reader, asked before the connections close) and free the socket."""
        conns = self._acceptor.stop_accepting()
        if conns is None:
            return
        readerless = self.resume.readerless()
        self._acceptor.close(conns, f"the server {self.addr.base} was stopped")
        self.resume.stop(readerless)
        self._acceptor.join()

    # -- Handler (reader threads) -------------------------------------------------------
    def on_setup(self, conn: Connection, f: F.Frame) -> None:
        """A client's SETUP: check its version, leases, keepalive, data MIME type and token; one that
        asks for resumption goes to the resume hook. Raises ``Rejected``, sent to the client as
        ERROR, when the server cannot serve it."""
        check_setup(conn, f, self.addr.base, self.token, self.limits.max_lifetime)
        if f.flags & F.FLAG_RESUME:
            self.resume.accept_setup(conn, f)

    def on_resume(self, conn: Connection, f: F.Frame) -> None:
        """A connection that starts with RESUME: continue a stream kept for its reader."""
        self.resume.on_resume(conn, f)

    def on_metadata_push(self, conn: Connection, f: F.Frame) -> None:
        """METADATA_PUSH: a reader's acknowledgement (resumable streams)."""
        self.resume.on_metadata_push(conn, f)

    def open_stream(self, conn: Connection, f: F.Frame) -> None:
        """A REQUEST_STREAM or REQUEST_CHANNEL: route it to the endpoint its metadata names and open
        the stream (:class:`~.opening.StreamOpener`). Raises ``Rejected``, sent as ERROR, saying why it cannot."""
        self._opener.open(conn, f)


__all__ = ["Host", "ResumeHook"]
