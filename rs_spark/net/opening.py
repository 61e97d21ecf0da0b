"""A server's endpoints by name, and the streams its clients' requests open.

:class:`Endpoints` is what a :class:`~rs_spark.net.Server` serves; :class:`StreamOpener` turns a
REQUEST_STREAM or REQUEST_CHANNEL (on the connection's reader thread) into a stream: a publisher's
(kept until acknowledged when the connection asked for resumption), a fetch of a kept stream's
rows, a processor's or a subscriber's channel. Both rooms meet here, as in the server.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from ..streams.drain import subscribe_with
from ..streams.errors import throw_if_fatal
from ..streams.sources import from_iterable
from ..streams.types import Subscriber
from .protocol import frames as F
from .protocol.bridge import InboundSubscription
from .protocol.channel import serve_channel
from .protocol.codecs import Codec, make_codec
from .protocol.connection import Connection
from .protocol.conventions import ChannelData
from .protocol.errors import NetError, Rejected
from .protocol.metadata import COMPOSITE, MetadataError, parse_composite, route_of
from .protocol.outbound import OutboundStream
from .zero_loss.resume import fetch_of, resume_token
from .zero_loss.resume_server import ResumeService

log = logging.getLogger("rs_spark.net")


class Endpoint:
    """One served object: a ``publisher``, a ``subscriber`` (or a factory of them) or a
    ``processor`` factory."""

    __slots__ = ("kind", "target", "used")

    def __init__(self, kind: str, target: Any) -> None:
        self.kind = kind
        self.target = target
        self.used = False


class Endpoints:
    """The endpoints a server serves, by name (thread-safe). ``base``: the server's address."""

    def __init__(self, base: str) -> None:
        self._base = base
        self._lock = threading.Lock()
        self._by_name: dict[str, Endpoint] = {}
        self.first: str | None = None  # the first endpoint added (what serve() served)

    def add(self, name: str, ep: Endpoint) -> None:
        if not isinstance(name, str) or not name or len(name.encode("utf-8")) > 255:
            raise ValueError(f"an endpoint name is a non-empty str of at most 255 UTF-8 bytes, got {name!r}")
        with self._lock:
            if name in self._by_name:
                raise ValueError(
                    f"{self._base} already serves an endpoint named {name!r}; pick another name or remove() it first"
                )
            self._by_name[name] = ep
            if self.first is None:
                self.first = name

    def remove(self, name: str) -> None:
        with self._lock:
            self._by_name.pop(name, None)

    def publisher_named(self, name: str) -> Any:
        with self._lock:
            ep = self._by_name.get(name)
        return ep.target if ep is not None and ep.kind == "publisher" else None

    def resolve(self, name: str | None, kind: str) -> tuple[str, Endpoint]:
        """The endpoint a request names (or the only one of its kind when it names none)."""
        with self._lock:
            eps = dict(self._by_name)
        if name is None:
            same = [(n, e) for n, e in eps.items() if e.kind == kind]
            if len(same) == 1:
                return same[0]  # a request without a route reaches the only endpoint of its kind
            # The error lists no names: what a server serves is not for whoever can connect to tell.
            raise Rejected(
                F.REJECTED,
                f"the request names no {kind} (routing metadata) and {self._base} "
                f"serves {len(same)} {kind}s; put the endpoint's name in the address",
            )
        ep = eps.get(name)
        if ep is None:
            raise Rejected(
                F.REJECTED,
                f"{self._base} serves no {kind} named {name!r}; check the name in the "
                "address (the server's own log and server.address name its endpoints)",
            )
        if ep.kind != kind and not (kind == "subscriber" and ep.kind == "processor"):
            fix = {"subscriber": "connect_subscriber()", "processor": "connect_processor()"}.get(ep.kind, "connect()")
            raise Rejected(F.REJECTED, f"{name!r} on {self._base} is a {ep.kind}, not a {kind}; use {fix}")
        return name, ep

    def use_once(self, ep: Endpoint, name: str) -> None:
        """A served Subscriber instance is subscribed once (rule 2.12): mark it used, or refuse."""
        with self._lock:
            if ep.used:
                raise Rejected(
                    F.REJECTED,
                    (
                        f"subscriber '{name}' on {self._base} was already subscribed once and a Subscriber "
                        "may be subscribed only once (rule 2.12); serve a factory (a callable returning a new "
                        "Subscriber) to accept many channels"
                    ),
                )
            ep.used = True


class _Opening:
    """A request being turned into a stream: what each ``_open_*`` step needs."""

    __slots__ = ("conn", "frame", "sid", "name", "endpoint", "codec", "where", "address")

    def __init__(
        self, conn: Connection, frame: F.Frame, name: str, endpoint: Endpoint, codec: Codec, where: str, address: str
    ) -> None:
        self.conn = conn
        self.frame = frame
        self.sid = frame.stream_id
        self.name = name
        self.endpoint = endpoint
        self.codec = codec
        self.where = where  # names the stream in errors: endpoint, address, stream id, client
        self.address = address


class StreamOpener:
    """Opens the streams a server's clients ask for (see the module)."""

    def __init__(
        self,
        endpoints: Endpoints,
        resume: ResumeService,
        token: str | None,
        channel_data: ChannelData,
        address_of: Callable[[str], str],
        base: str,
    ) -> None:
        self._endpoints = endpoints
        self._resume = resume
        self._token = token
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
        fetch = self._fetch_of(conn, f) if ep.kind == "publisher" else None
        if fetch is not None:
            self._open_fetch_stream(stream, *fetch)
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
        pub = o.endpoint.target
        out: OutboundStream
        if ResumeService.session_of(o.conn) is not None:
            kept = self._resume.open_stream(o.conn, o.sid, o.codec, o.where, o.address, o.name)
            if callable(getattr(pub, "on_commit", None)):
                kept.committable = pub
            out = kept.outbound
        else:
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

    @staticmethod
    def _fetch_of(conn: Connection, f: F.Frame) -> tuple[str, int, int] | None:
        if conn.metadata_mime != COMPOSITE or f.metadata is None:
            return None
        try:
            return fetch_of(parse_composite(bytes(f.metadata)))
        except MetadataError as exc:
            raise Rejected(F.INVALID, f"unreadable fetch metadata: {exc}") from None

    def _open_fetch_stream(self, o: _Opening, key: str, lo: int, hi: int) -> None:
        """request-stream for kept rows ``[lo, hi)`` of a resumable stream (a partition's range a
        Spark executor reads): sent again from what the stream keeps, then COMPLETE."""
        items = self._resume.read_range(resume_token(self._token, key), o.name, o.conn.data_mime, lo, hi)
        out = OutboundStream(o.codec, o.where.replace("publisher '", "rows of '", 1), address=o.address)
        register(o.conn, out, o.sid)
        out.attach(o.conn, o.sid, credit=o.frame.request_n)
        o.conn.worker.submit(lambda: from_iterable(items).subscribe(out))

    def _open_processor_channel(self, o: _Opening) -> None:
        """request-channel to a processor: a new Processor per channel reads and answers."""
        try:
            proc = o.endpoint.target()
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
        sub = self._channel_subscriber(o.endpoint, o.name)
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


__all__ = ["Endpoint", "Endpoints", "StreamOpener", "register"]
