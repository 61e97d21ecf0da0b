"""The streams a server's clients' requests open.

:class:`StreamOpener` turns a REQUEST_STREAM or REQUEST_CHANNEL (on the connection's reader
thread) into a stream, for the endpoint it routes to (:mod:`.endpoints`): a publisher's, a fetch
of a kept stream's rows, a processor's or a subscriber's channel. What resumption changes (a
publisher's stream kept until acknowledged on a connection that asked for it; the rows a fetch
asks for) it asks a :class:`KeptStreams`, the zero-loss room's
:class:`~rs_spark.net.zero_loss.resume_server.ResumeService`, which this room never imports.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from ...streams.drain import subscribe_with
from ...streams.errors import throw_if_fatal
from ...streams.sources import from_iterable
from ...streams.types import Subscriber
from . import frames as F
from .bridge import InboundSubscription
from .channel import serve_channel
from .codecs import Codec, make_codec
from .connection import Connection
from .conventions import ChannelData
from .endpoints import Endpoint, Endpoints
from .errors import NetError, Rejected
from .metadata import MetadataError, route_of
from .outbound import OutboundStream

log = logging.getLogger("rs_spark.net")


class KeptStreams(Protocol):
    """What the opener asks the side that keeps streams until acknowledged."""

    def kept_stream(
        self, conn: Connection, sid: int, codec: Codec, where: str, address: str, name: str, publisher: Any
    ) -> OutboundStream | None:
        """The stream a request for ``publisher`` opens on ``conn`` when its SETUP asked for
        resumption (kept until acknowledged), not yet subscribed; None on any other connection."""

    def fetched(self, conn: Connection, frame: F.Frame, name: str) -> list[Any] | None:
        """The kept rows of endpoint ``name`` a request asks for; None when it is no fetch."""


class _Opening:
    """A request being turned into a stream: what each ``_open_*`` step needs."""

    __slots__ = ("conn", "frame", "sid", "name", "served", "codec", "where", "address")

    def __init__(
        self, conn: Connection, frame: F.Frame, name: str, served: Endpoint, codec: Codec, where: str, address: str
    ) -> None:
        self.conn = conn
        self.frame = frame
        self.sid = frame.stream_id
        self.name = name
        self.served = served
        self.codec = codec
        self.where = where  # names the stream in errors: endpoint, address, stream id, client
        self.address = address


class StreamOpener:
    """Opens the streams a server's clients ask for (see the module)."""

    def __init__(
        self,
        endpoints: Endpoints,
        kept: KeptStreams,
        channel_data: ChannelData,
        address_of: Callable[[str], str],
        base: str,
    ) -> None:
        self._endpoints = endpoints
        self._kept = kept
        self._channel_data = channel_data
        self._address_of = address_of
        self._base = base

    def open(self, conn: Connection, f: F.Frame) -> None:
        """A REQUEST_STREAM or REQUEST_CHANNEL: route it to the endpoint its metadata names and
        open the stream. Raises ``Rejected``, sent to the client as ERROR, saying why it cannot."""
        try:
            route = route_of(conn.metadata_mime, bytes(f.metadata) if f.metadata is not None else None)
        except MetadataError as exc:  # the peer is told; the parser's traceback is of no use to it
            raise Rejected(F.INVALID, f"unreadable routing metadata: {exc}") from None
        name, ep = self._endpoints.resolve(route, self._kind_of(f))  # ep.kind: the kind asked for, or a processor
        address = self._address_of(name)
        where = f"{ep.kind} '{name}' at {address} (stream {f.stream_id}, client {conn.label.split(' ')[0]})"
        stream = _Opening(conn, f, name, ep, make_codec(conn.data_mime), where, address)
        fetched = self._kept.fetched(conn, f, name) if ep.kind == "publisher" else None
        if fetched is not None:
            self._open_fetch_stream(stream, fetched)
        elif ep.kind == "publisher":
            self._open_publisher_stream(stream)
        elif ep.kind == "processor":
            self._open_processor_channel(stream)
        else:
            self._open_subscriber_channel(stream)

    def _kind_of(self, f: F.Frame) -> str:
        """The kind of endpoint a request reads or feeds."""
        if f.type == F.REQUEST_STREAM:
            return "publisher"
        if f.type == F.REQUEST_CHANNEL:
            return "subscriber"
        raise Rejected(
            F.REJECTED,
            f"{self._base} serves request-stream (to read a publisher) and request-channel (to feed a subscriber) only",
        )

    def _open_publisher_stream(self, o: _Opening) -> None:
        """request-stream: the served Publisher is subscribed once per stream, on the signal thread."""
        pub = o.served.target
        out = self._kept.kept_stream(o.conn, o.sid, o.codec, o.where, o.address, o.name, pub)
        if out is None:
            out = OutboundStream(o.codec, o.where, address=o.address)
        register(o.conn, out, o.sid)
        out.attach(o.conn, o.sid, credit=o.frame.request_n)

        def start() -> None:
            try:
                pub.subscribe(out)
            except BaseException as exc:  # rule 1.9 broken by the publisher: end the stream
                # A fatal error is not the publisher's error to send to the peer: it ends the signal thread
                # (SerialExecutor starts another), and the stream stays open until the peer cancels it or
                # the connection closes.
                throw_if_fatal(exc)
                out.on_error(exc)

        o.conn.worker.submit(start)

    def _open_fetch_stream(self, o: _Opening, items: list[Any]) -> None:
        """request-stream for kept rows of a resumable stream (a partition's range a Spark executor
        reads): sent again from what the stream keeps, then COMPLETE."""
        out = OutboundStream(o.codec, o.where.replace("publisher '", "rows of '", 1), address=o.address)
        register(o.conn, out, o.sid)
        out.attach(o.conn, o.sid, credit=o.frame.request_n)
        o.conn.worker.submit(lambda: from_iterable(items).subscribe(out))

    def _open_processor_channel(self, o: _Opening) -> None:
        """request-channel to a processor: a new Processor per channel reads and answers."""
        try:
            proc = o.served.target()
            if not (hasattr(proc, "on_subscribe") and hasattr(proc, "subscribe")):
                raise TypeError(f"the processor factory returned {type(proc).__name__}, not a Processor")
        except Exception as exc:
            raise Rejected(
                F.REJECTED, f"processor '{o.name}': its factory failed: {type(exc).__name__}: {exc}"
            ) from exc
        ch = serve_channel(o.conn, o.sid, proc, o.codec, o.where, o.address, o.frame.request_n, register)
        self._first_element(o.frame, ch.inbound, o.where)
        if o.frame.flags & F.FLAG_COMPLETE:  # the client has nothing to send
            ch.inbound.on_frame(F.Frame(o.sid, F.PAYLOAD, F.FLAG_COMPLETE))

    def _open_subscriber_channel(self, o: _Opening) -> None:
        """request-channel to a subscriber: the served Subscriber (or a new one from its factory)
        reads what the client sends; our direction of the channel carries nothing."""
        sub = self._channel_subscriber(o.served, o.name)
        inb = InboundSubscription(sub, o.codec, o.where, requester=False, address=o.address)
        register(o.conn, inb, o.sid)
        inb.attach(o.conn, o.sid)
        o.conn.reply(F.encode_payload(o.sid, next=False, complete=True))  # our direction carries no elements
        self._first_element(o.frame, inb, o.where)
        if o.frame.flags & F.FLAG_COMPLETE:
            inb.on_frame(F.Frame(o.sid, F.PAYLOAD, F.FLAG_COMPLETE))
        o.conn.worker.submit(lambda: subscribe_with(sub, inb, start=True))

    def _channel_subscriber(self, ep: Endpoint, name: str) -> Subscriber[Any]:
        """The served Subscriber, once (rule 2.12), or a new one from the served factory."""
        target = ep.target
        single = hasattr(target, "on_subscribe") and not isinstance(target, type)  # a class is a factory
        if single:
            self._endpoints.use_once(ep, name)
            return target
        try:
            sub = target()
            if sub is None:
                raise TypeError("the subscriber factory returned None")
        except Exception as exc:
            raise Rejected(F.REJECTED, f"subscriber '{name}': its factory failed: {type(exc).__name__}: {exc}") from exc
        return sub

    def _first_element(self, f: F.Frame, inbound: InboundSubscription, where: str) -> None:
        """Deliver the REQUEST_CHANNEL frame's data as the first element where the convention says
        so (:class:`~rs_spark.net.protocol.conventions.ChannelData`)."""
        data = f.data
        if self._channel_data.first_element(data):
            inbound.accept_first(data)
        elif len(data):
            log.debug(
                "rs_spark.net: %s: %d bytes of REQUEST_CHANNEL data taken as request parameters "
                "(channel_data=parameters), not as an element",
                where,
                len(data),
            )


def register(conn: Connection, stream: Any, sid: int) -> None:
    """Add ``stream`` to ``conn`` as ``sid``; a refusal goes to the client as REJECTED."""
    try:
        conn.add_stream(stream, sid)
    except NetError as exc:
        raise Rejected(F.REJECTED, str(exc)) from None


__all__ = ["KeptStreams", "StreamOpener", "register"]
