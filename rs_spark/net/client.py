"""Reach served Publishers and Subscribers: :func:`connect`, :func:`connect_subscriber`, :class:`Client`.

The client's API in one place: the :class:`Client` (one connection, opened lazily), the remote
Publisher it hands out, and the ``connect*`` functions. Dialling and the client's :class:`Options`
are the protocol's (:mod:`.protocol.dialling`); the remote Subscriber and Processor live with their
protocols (:mod:`.protocol.remote_subscriber`, :mod:`.protocol.channel`: both see the Client as a
:class:`~.protocol.channel.ChannelClient`), the resumable publisher in :mod:`.zero_loss`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..streams.drain import check_subscriber, subscribe_with
from ..streams.pipeline import PublisherBase
from ..streams.types import Subscriber
from .protocol import frames as F
from .protocol.address import parse
from .protocol.bridge import InboundSubscription
from .protocol.channel import RemoteProcessor
from .protocol.codecs import make_codec
from .protocol.connection import Connection
from .protocol.conventions import ChannelOpen
from .protocol.dialling import Dialler, Options
from .protocol.errors import NetError
from .protocol.metadata import request_metadata
from .protocol.remote_subscriber import RemoteSubscriber
from .protocol.worker import in_background
from .zero_loss.resume import ResumeRequest

if TYPE_CHECKING:
    from .zero_loss.outage import Backoff
    from .zero_loss.resume_client import ResumablePublisher


class Client:
    """One connection to a server, shared by every stream opened through it (multiplexed).

    ``publisher(name)`` and ``subscriber(name)`` return endpoints on this connection; the
    connection opens on first use and stays open until :meth:`close`.
    """

    def __init__(self, address: str, **options: Any) -> None:
        self._addr = parse(address, need_name=False)
        self._opts = Options(**options)
        self._token = self._opts.token or self._addr.token
        self._codec = self._opts.codec or self._addr.codec or "json"
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._dialler = Dialler(self._addr, self._opts, self._token, self._codec)

    @property
    def codec_name(self) -> str:
        """The codec elements cross with: ``json`` (the default), ``text``, ``bytes`` or ``arrow``."""
        return self._codec

    @property
    def batch_rows(self) -> int:
        """Arrow: the most rows per delivered batch (``batch_rows=`` of :func:`connect`)."""
        return self._opts.batch_rows

    @property
    def lifetime(self) -> float:
        """Seconds a silent server is given before its connection is taken as lost (``lifetime=``)."""
        return self._opts.lifetime

    def address_of(self, name: str | None) -> str:
        """The address of endpoint ``name`` on this client's server (without the token)."""
        return self._addr.with_name(name).format()

    def options(self, picklable: bool = False) -> dict[str, Any]:
        """Keyword arguments that make a Client like this one (``picklable``: without ``ssl``)."""
        o = self._opts
        d: dict[str, Any] = dict(
            token=self._token,
            codec=self._codec,
            keepalive=o.keepalive,
            lifetime=o.lifetime,
            connect_timeout=o.connect_timeout,
            limits=o.limits,
            batch_rows=o.batch_rows,
            tls=o.tls,
        )
        if not picklable:
            d["ssl"] = o.ssl
        return d

    def where(self, kind: str, name: str | None) -> str:
        """How errors name endpoint ``name`` of this client: ``remote publisher tcp://host:port/name``
        (the server's address when ``name`` is None); never with the token."""
        shown = self._addr.with_name(name).format() if name else self._addr.base
        return f"remote {kind} {shown}"

    def connection(self) -> Connection:
        """The open connection (opened now if needed: blocks up to ``connect_timeout``)."""
        with self._lock:
            c = self._conn
            if c is not None and c.closed is None:
                return c
            self._conn = c = self._open()
            return c

    def _open(self) -> Connection:
        return self._dialler.open()

    def open_resumable(self, token: bytes, request: ResumeRequest) -> Connection:
        """A new connection (not shared) whose SETUP asks for a resumable stream with ``token``
        (:mod:`.resume`): its window and whether rows or only positions are delivered."""
        return self._dialler.open(token, [request.entry()])

    def resume(self, token: bytes, position: int, on_push: Callable[[F.Frame], None] | None = None) -> Connection:
        """A new connection continuing the stream of ``token`` from ``position``: blocks until the
        server's RESUME_OK (up to ``connect_timeout``); raises ResumeRejected when it cannot.
        ``on_push``: the connection's METADATA_PUSH handler, set before any frame is read."""
        return self._dialler.resume(token, position, on_push)

    @property
    def token(self) -> str | None:
        """The endpoint token this client authenticates with (never logged)."""
        return self._token

    def close(self) -> None:
        """Close the connection; its open streams end with ``ConnectionLost``."""
        with self._lock:
            c, self._conn = self._conn, None
        if c is not None:
            c.close(None, final=[])

    def fresh(self) -> Client:
        """A new, unopened Client with the same address and options."""
        return Client(self._addr.base + self._addr.query(with_token=True), **self.options())

    def publisher(self, name: str | None = None, extra: list[tuple[str, bytes]] | None = None) -> RemotePublisher:
        """The Publisher ``name`` on this connection; ``extra``: more composite metadata entries its
        requests carry (e.g. a fetch of kept rows, :func:`.resume.fetch_entry`)."""
        return RemotePublisher(self, name, own=False, extra=extra)

    def subscriber(self, name: str | None = None) -> RemoteSubscriber:
        """The Subscriber ``name`` on this connection (fed with request-channel; single use)."""
        return RemoteSubscriber(self, name, own=False)

    def processor(self, name: str | None = None) -> RemoteProcessor:
        """The Processor ``name`` on this connection (one two-way request-channel)."""
        return RemoteProcessor(self, name, own=False)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class RemotePublisher(PublisherBase[Any]):
    """A Publisher served by another process. Each ``subscribe`` opens a request-stream; with
    :func:`connect` each also opens its own connection, closed when the stream ends.

    ``request(n)`` is sent as REQUEST_N credits (in pieces above 2^31-1); ``cancel()`` as
    CANCEL; the remote ``on_error`` arrives as :class:`~rs_spark.net.protocol.errors.RemoteError`.
    With ``codec='arrow'`` elements are ``pyarrow.RecordBatch``es of at most ``batch_rows``
    rows; ``request(n)`` asks for n batches and is sent as row credits (see :mod:`.bridge`).
    """

    def __init__(
        self, client: Client, name: str | None, own: bool, extra: list[tuple[str, bytes]] | None = None
    ) -> None:
        self._client = client
        self._name = name
        self._own = own
        self._extra = list(extra or [])

    @property
    def address(self) -> str:
        """The endpoint's address (without the token)."""
        return self._client.address_of(self._name)

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        check_subscriber(subscriber)  # rule 1.9
        client = self._client.fresh() if self._own else self._client
        where = client.where("publisher", self._name)
        codec = make_codec(client.codec_name)
        sub = InboundSubscription(
            subscriber,
            codec,
            where,
            requester=True,
            address=self.address,
            on_end=client.close if self._own else None,
            batch_rows=client.batch_rows,
        )
        subscribe_with(subscriber, sub)

        def open_stream() -> None:
            if sub.is_cancelled:
                return
            try:
                conn = client.connection()
                sid = conn.add_stream(sub)
            except NetError as exc:
                sub.fail(exc)
                return
            meta = request_metadata(conn.metadata_mime, self._name, self._extra)
            sub.attach(conn, sid, opener=lambda n: conn.send(F.encode_request(F.REQUEST_STREAM, sid, n, metadata=meta)))

        in_background(open_stream, f"rs-net-connect {where}")

    def resumable(
        self,
        key: str | None = None,
        *,
        window: float | None = None,
        reconnect_for: float | None = None,
        positions: bool = False,
        new: bool = False,
        backoff: Backoff | None = None,
    ) -> ResumablePublisher:
        """This publisher read as a resumable stream (:mod:`.resume_client`): the server keeps what
        it sent until acknowledged; ``key`` resumes an existing stream. With ``positions`` the
        server keeps rows without sending them, says how far they go, and ranges are fetched
        with :meth:`ResumablePublisher.fetch` (a partition of the ``reactive`` source). A dropped
        connection is resumed for as long as the server keeps the stream (``reconnect_for``:
        seconds instead), with ``backoff`` between tries."""
        from .zero_loss.resume_client import ResumablePublisher

        return ResumablePublisher(
            self._client.fresh(),
            self._name,
            key,
            window=window,
            reconnect_for=reconnect_for,
            positions=positions,
            new=new,
            backoff=backoff,
        )

    def __reduce__(self) -> Any:
        # Pickles as its address (and picklable options): rebuilt with connect() elsewhere.
        return (_rebuild_publisher, (self.address, self._client.options(picklable=True)))

    def __repr__(self) -> str:
        return f"<RemotePublisher {self.address}>"


def _rebuild_publisher(address: str, opts: dict) -> RemotePublisher:
    return connect(address, **opts)


def connect(address: str, **options: Any) -> RemotePublisher:
    """The Publisher served at ``address`` (e.g. ``'tcp://127.0.0.1:7878/numbers'``).

    Options: ``token`` (or ``?token=`` in the address), ``ssl`` (client ``SSLContext`` for
    ``tls://``) or ``tls`` (:class:`~rs_spark.net.TlsFiles`: CA file, client certificate, host
    name; picklable, so a pickled publisher keeps it),
    ``codec`` (``json`` default, ``text``, ``bytes``, ``arrow``; or ``?codec=``),
    ``batch_rows`` (arrow: most rows per delivered batch, default 65536),
    ``keepalive`` / ``lifetime`` (seconds: a silent server ends the stream with
    ``ConnectionLost`` after ``lifetime``), ``connect_timeout``, ``limits``.
    Each ``subscribe`` opens its own connection.
    """
    addr = parse(address)
    return RemotePublisher(Client(addr.base + addr.query(with_token=True), **options), addr.name, own=True)


def connect_subscriber(
    address: str, *, channel_open: str | ChannelOpen = "first_element", **options: Any
) -> RemoteSubscriber:
    """The Subscriber served at ``address``: subscribe it to a local Publisher. Same options as
    :func:`connect`. Single use, like any Subscriber. ``channel_open``
    (:class:`~rs_spark.net.ChannelOpen`): ``"first_element"`` sends the first element in the
    REQUEST_CHANNEL frame (rs_spark, rsocket-java, rsocket-js); ``"route_only"`` sends only the
    route there (responders built on the ``rsocket`` Python package)."""
    addr = parse(address)
    return RemoteSubscriber(
        Client(addr.base + addr.query(with_token=True), **options), addr.name, own=True, channel_open=channel_open
    )


def connect_processor(address: str, **options: Any) -> RemoteProcessor:
    """The Processor served at ``address`` (:meth:`Server.add_processor`): one two-way channel.
    Subscribe a local Subscriber to it for the answers and subscribe it to a local Publisher for
    what to send. Same options as :func:`connect`."""
    addr = parse(address)
    return RemoteProcessor(Client(addr.base + addr.query(with_token=True), **options), addr.name, own=True)


__all__ = [
    "connect",
    "connect_subscriber",
    "connect_processor",
    "RemoteProcessor",
    "Client",
    "RemotePublisher",
    "RemoteSubscriber",
    "Options",
]
