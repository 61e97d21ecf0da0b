"""Two-way request-channel: a Processor across the wire.

RSocket's request-channel carries elements both ways on one stream. :func:`connect_processor`
returns a :class:`RemoteProcessor`: subscribe it to a local Publisher (its elements go to the
server, paced by the server's REQUEST_N) and subscribe a local Subscriber to it (the server's
responses, paced by ours). :meth:`rs_spark.net.Server.add_processor` serves a factory of
Processors, one per channel.

A stream id carries two directions, each an existing half (:class:`~.outbound.OutboundStream`,
:class:`~.bridge.InboundSubscription`). :class:`ChannelStream` routes frames to them and keeps
the stream registered until both have ended. Frame routing, the same on both ends: PAYLOAD
goes to the inbound half; REQUEST_N and CANCEL concern what we send (the outbound half); ERROR
ends the whole channel (RSocket), so both halves get it. When our outbound half ends with an
error it also ends our inbound half with that error, so nobody waits for a reply that cannot come.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from ...streams.drain import TerminalSubscription, check_subscriber, subscribe_with
from ...streams.errors import throw_if_fatal
from ...streams.types import Subscriber, Subscription
from . import frames as F
from .bridge import InboundSubscription
from .codecs import make_codec
from .connection import Connection
from .errors import NetError, ProtocolError
from .metadata import request_metadata
from .outbound import OutboundStream
from .worker import in_background


class ChannelClient(Protocol):
    """What a :class:`RemoteProcessor` and a :class:`~.remote_subscriber.RemoteSubscriber` need of
    their client (:class:`~.client.Client`, which imports them: named by this Protocol, the
    import goes one way)."""

    @property
    def codec_name(self) -> str: ...

    @property
    def batch_rows(self) -> int: ...

    def address_of(self, name: str | None) -> str: ...

    def where(self, kind: str, name: str | None) -> str: ...

    def connection(self) -> Connection: ...

    def close(self) -> None: ...


ProcessorFactory = Callable[[], Any]


class _Half:
    """The connection as one direction sees it: ``remove_stream`` ends only this direction."""

    __slots__ = ("_ch", "_conn", "_inbound", "closed")

    def __init__(self, channel: ChannelStream, conn: Any, inbound: bool) -> None:
        self._ch = channel
        self._conn = conn
        self._inbound = inbound
        self.closed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def remove_stream(self, stream_id: int) -> None:
        self._ch.half_closed(self)

    def send(self, frame: Any) -> bool:
        self._sending(frame)
        return self._conn.send(frame)

    def reply(self, frame: Any) -> bool:
        self._sending(frame)
        return self._conn.reply(frame)

    def _sending(self, frame: Any) -> None:
        if self._inbound and _frame_type(frame) == F.ERROR:
            self._ch.inbound_sent_error()


def _frame_type(frame: Any) -> int:
    head = frame[0]
    return (int.from_bytes(bytes(head[7:9]), "big") >> 10) if len(head) >= 9 else -1  # 3-byte length + id + type


class ChannelStream:
    """Both directions of one request-channel stream on a connection."""

    def __init__(self, outbound: OutboundStream, inbound: InboundSubscription) -> None:
        self.outbound = outbound
        self.inbound = inbound
        self._lock = threading.Lock()
        self._conn: Any = None
        self._sid = 0
        self._halves: tuple[_Half, _Half] | None = None  # (outbound, inbound), once bound

    def bind(self, conn: Any, stream_id: int) -> tuple[_Half, _Half]:
        """The connection each direction is to use: (outbound's, inbound's)."""
        self._conn, self._sid = conn, stream_id
        self._halves = (_Half(self, conn, inbound=False), _Half(self, conn, inbound=True))
        return self._halves

    def on_frame(self, f: F.Frame) -> None:
        t = f.type
        if t == F.PAYLOAD:
            self.inbound.on_frame(f)
        elif t in (F.REQUEST_N, F.CANCEL):
            self.outbound.on_frame(f)
        elif t == F.ERROR:
            self.inbound.on_frame(f)
            self.outbound.on_frame(f)

    def on_connection_closed(self, error: BaseException) -> None:
        self.inbound.on_connection_closed(error)
        self.outbound.on_connection_closed(error)

    def outbound_ended(self, error: BaseException | None) -> None:
        if error is not None:
            self.inbound.fail(error)

    def inbound_sent_error(self) -> None:
        """Our inbound direction failed (and told the peer with ERROR, which ends the whole channel):
        end the outbound direction too and cancel its publisher."""
        where = self.inbound.where
        err = ProtocolError(f"{where}: the channel failed on our side; its other direction was cancelled", None, where)
        self.outbound.cancel_with(err)

    def half_closed(self, half: _Half) -> None:
        """One direction ended; the stream is unregistered once both have."""
        with self._lock:
            half.closed = True
            both = self._halves is not None and all(h.closed for h in self._halves)
        if both:
            self._conn.remove_stream(self._sid)


class RemoteProcessor:
    """A Processor served by another process (one request-channel).

    ``subscribe(responses)`` first (or in any order): the channel opens once it has both a
    subscriber for the responses and, through ``on_subscribe``, the local source of requests.
    Single use on both sides (rules 1.10 and 2.12).
    """

    def __init__(self, client: ChannelClient, name: str | None, own: bool) -> None:
        self._client = client
        self._name = name
        self._own = own
        self._where = client.where("processor", name)
        codec = make_codec(client.codec_name)
        self._codec = codec
        self._out = OutboundStream(codec, self._where, address=self.address, on_end=self._out_ended)
        self._inbound: InboundSubscription | None = None
        self._channel: ChannelStream | None = None
        self._lock = threading.Lock()
        self._upstream = False
        self._opened = False

    @property
    def address(self) -> str:
        """The endpoint's address (without the token)."""
        return self._client.address_of(self._name)

    def close(self) -> None:
        """Close the connection (ends the channel if it is still open)."""
        self._client.close()

    # -- Publisher side: the server's responses -----------------------------------------
    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        check_subscriber(subscriber)  # rule 1.9
        inbound: InboundSubscription | None = None
        with self._lock:
            if self._inbound is None:  # the first response subscriber: the channel's
                self._inbound = inbound = InboundSubscription(
                    subscriber,
                    self._codec,
                    self._where,
                    requester=True,
                    address=self.address,
                    on_end=self._in_ended,
                    batch_rows=self._client.batch_rows,
                )
                self._channel = ChannelStream(self._out, self._inbound)
        if inbound is None:
            subscribe_with(
                subscriber,
                TerminalSubscription(
                    subscriber,
                    NetError(
                        f"{self._where}: a RemoteProcessor is one channel and takes one response subscriber; "
                        "connect again for another",
                        self.address,
                        self._where,
                    ),
                ),
                start=True,
            )
            return
        subscribe_with(subscriber, inbound)
        self._maybe_open()

    # -- Subscriber side: elements to the server ----------------------------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None) is illegal (rule 2.13)")
        with self._lock:
            dup, self._upstream = self._upstream, True
        if dup:
            subscription.cancel()  # rule 2.5
            return
        self._out.on_subscribe(subscription)
        self._maybe_open()

    def on_next(self, item: Any) -> None:
        self._out.on_next(item)

    def on_error(self, error: BaseException) -> None:
        if error is None:
            raise TypeError("on_error(None) is illegal (rule 2.13)")
        self._out.on_error(error)

    def on_complete(self) -> None:
        self._out.on_complete()

    # -- wiring -------------------------------------------------------------------------
    def _maybe_open(self) -> None:
        with self._lock:
            if self._opened or not self._upstream or self._channel is None:
                return
            self._opened = True
        ch, inb, out = self._channel, self._inbound, self._out
        assert inb is not None

        def open_stream() -> None:
            if inb.is_cancelled:
                out.fail(
                    NetError(
                        f"{self._where}: the response subscriber cancelled before the channel opened",
                        self.address,
                        self._where,
                    )
                )
                return
            try:
                conn = self._client.connection()
                sid = conn.add_stream(ch)
            except NetError as exc:
                out.fail(exc)
                inb.fail(exc)
                return
            out_half, in_half = ch.bind(conn, sid)
            meta = request_metadata(conn.metadata_mime, self._name)
            inb.attach(
                in_half, sid, opener=lambda n: conn.send(F.encode_request(F.REQUEST_CHANNEL, sid, n, metadata=meta))
            )
            out.attach(out_half, sid)

        in_background(open_stream, f"rs-net-connect {self._where}")

    def _out_ended(self, error: BaseException | None) -> None:
        ch = self._channel
        if ch is not None:
            ch.outbound_ended(error)
        self._maybe_close()

    def _in_ended(self) -> None:
        self._maybe_close()

    def _maybe_close(self) -> None:
        inb = self._inbound
        if self._own and self._out.done.is_set() and inb is not None and (inb.is_done or inb.is_cancelled):
            self._client.close()

    @property
    def done(self) -> bool:
        """Whether the direction towards the remote Subscriber ended (completed, failed or cancelled)."""
        return self._out.done.is_set()

    def __repr__(self) -> str:
        return f"<RemoteProcessor {self.address}>"


def serve_channel(
    conn: Any,
    sid: int,
    processor: Any,
    codec: Any,
    where: str,
    address: str,
    initial_credit: int,
    register: Callable[[Any, Any, int], None],
) -> ChannelStream:
    """Server side of a channel to a served Processor: its Subscriber side reads the client's
    elements, its Publisher side answers."""
    inb = InboundSubscription(processor, codec, where, requester=False, address=address)

    def outbound_ended(error: BaseException | None) -> None:
        ch.outbound_ended(error)  # ch is bound below, before the stream can end

    out = OutboundStream(codec, where, address=address, on_end=outbound_ended)
    ch = ChannelStream(out, inb)
    register(conn, ch, sid)
    out_half, in_half = ch.bind(conn, sid)
    inb.attach(in_half, sid)
    out.attach(out_half, sid, credit=initial_credit)

    def start() -> None:
        subscribe_with(processor, inb, start=True)
        try:
            processor.subscribe(out)
        except BaseException as exc:  # rule 1.9 broken by the processor: end the responses
            # A fatal error is not the processor's error to send to the peer: it ends the signal thread
            # (SerialExecutor starts another), and the stream stays open until the peer cancels it or
            # the connection closes.
            throw_if_fatal(exc)
            out.on_error(exc)

    conn.worker.submit(start)
    return ch


__all__ = ["RemoteProcessor", "ChannelStream", "serve_channel", "ProcessorFactory"]
