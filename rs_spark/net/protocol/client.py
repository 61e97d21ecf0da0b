"""The client: :class:`Client` (one connection to a server, opened lazily) and the
:class:`RemotePublisher` it hands out, read with request-stream.

Reading a remote Publisher as a resumable stream is the zero-loss room's: ``resumable()`` asks the
client's :class:`Resumer`, which :mod:`rs_spark.net` plugs in (its
:class:`~rs_spark.net.zero_loss.resume_client.ResumablePublisher`); this room never imports it.
The remote Subscriber and Processor live with their protocols (:mod:`.remote_subscriber`,
:mod:`.channel`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, ClassVar, Generic, Protocol, TypedDict, TypeVar, Unpack, overload

from ...streams.drain import check_subscriber, subscribe_with
from ...streams.pipeline import PublisherBase
from ...streams.types import Subscriber
from . import frames as F
from .address import parse
from .bridge import InboundSubscription
from .channel import RemoteProcessor
from .codecs import make_codec
from .connection import Connection
from .dialling import Dialler, Options
from .errors import NetError
from .metadata import request_metadata
from .remote_subscriber import RemoteSubscriber
from .worker import in_background

R = TypeVar("R")  # what resumable() returns


class SetupEntry(Protocol):
    """What a resumable SETUP asks for, as one composite metadata entry (the zero-loss room's ``ResumeRequest``)."""

    def entry(self) -> tuple[str, bytes]: ...


class Pacing(Protocol):
    """Pauses between tries to resume (the zero-loss room's ``Backoff``)."""

    def delay(self, attempt: int, u: float) -> float: ...


class ResumeHow(TypedDict, total=False):
    """How :meth:`RemotePublisher.resumable` reads the stream (:class:`~rs_spark.net.ResumablePublisher`
    says what each does)."""

    window: float | None
    reconnect_for: float | None
    positions: bool
    new: bool
    backoff: Pacing | None


class Resumer(Protocol[R]):
    """Reads endpoint ``name`` of ``client`` (a fresh one) as a resumable stream (``RemotePublisher.resumable``)."""

    def __call__(
        self, client: Client[R], name: str | None, key: str | None = None, /, **how: Unpack[ResumeHow]
    ) -> R: ...


class Client(Generic[R]):
    """One connection to a server, shared by every stream opened through it (multiplexed).

    ``publisher(name)`` and ``subscriber(name)`` return endpoints on this connection; the
    connection opens on first use and stays open until :meth:`close`. ``resumer``: what reads its
    publishers as resumable streams (by default the one :mod:`rs_spark.net` plugs in).
    """

    # The resumer of Clients built without one: set by rs_spark.net, whose __init__ runs before this
    # module is first imported, so every Client sees it.
    plugged: ClassVar[Resumer[Any] | None] = None

    @overload
    def __init__(self, address: str, *, resumer: Resumer[R] | None, **options: Any) -> None: ...

    @overload
    def __init__(self: Client[Any], address: str, *, resumer: None = None, **options: Any) -> None: ...

    def __init__(self, address: str, *, resumer: Resumer[R] | None = None, **options: Any) -> None:
        self._addr = parse(address, need_name=False)
        self._opts = Options(**options)
        self._token = self._opts.token or self._addr.token
        self._codec = self._opts.codec or self._addr.codec or "json"
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._dialler = Dialler(self._addr, self._opts, self._token, self._codec)
        self.resumer: Resumer[R] | None = resumer if resumer is not None else Client.plugged

    @property
    def codec_name(self) -> str:
        """The codec elements cross with: ``json`` (the default), ``text``, ``bytes`` or ``arrow``."""
        return self._codec

    @property
    def batch_rows(self) -> int:
        """Arrow: the most rows per delivered batch (``batch_rows=`` of :func:`~rs_spark.net.connect`)."""
        return self._opts.batch_rows

    @property
    def lifetime(self) -> float:
        """Seconds a silent server is given before its connection is taken as lost (``lifetime=``)."""
        return self._opts.lifetime

    @property
    def token(self) -> str | None:
        """The endpoint token this client authenticates with (never logged)."""
        return self._token

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
            self._conn = c = self._dialler.open()
            return c

    def open_resumable(self, token: bytes, request: SetupEntry) -> Connection:
        """A new connection (not shared) whose SETUP asks for a resumable stream with ``token``
        (:mod:`rs_spark.net.zero_loss.resume`): its window and whether rows or only positions are delivered."""
        return self._dialler.open(token, [request.entry()])

    def resume(self, token: bytes, position: int, on_push: Callable[[F.Frame], None] | None = None) -> Connection:
        """A new connection continuing the stream of ``token`` from ``position``: blocks until the
        server's RESUME_OK (up to ``connect_timeout``); raises ResumeRejected when it cannot.
        ``on_push``: the connection's METADATA_PUSH handler, set before any frame is read."""
        return self._dialler.resume(token, position, on_push)

    def close(self) -> None:
        """Close the connection; its open streams end with ``ConnectionLost``."""
        with self._lock:
            c, self._conn = self._conn, None
        if c is not None:
            c.close(None, final=[])

    def fresh(self) -> Client[R]:
        """A new, unopened Client with the same address, options and resumer."""
        return Client(self._addr.base + self._addr.query(with_token=True), resumer=self.resumer, **self.options())

    def publisher(self, name: str | None = None, extra: list[tuple[str, bytes]] | None = None) -> RemotePublisher[R]:
        """The Publisher ``name`` on this connection; ``extra``: more composite metadata entries its
        requests carry (e.g. a fetch of kept rows, :func:`rs_spark.net.zero_loss.resume.fetch_entry`)."""
        return RemotePublisher(self, name, own=False, extra=extra)

    def subscriber(self, name: str | None = None) -> RemoteSubscriber:
        """The Subscriber ``name`` on this connection (fed with request-channel; single use)."""
        return RemoteSubscriber(self, name, own=False)

    def processor(self, name: str | None = None) -> RemoteProcessor:
        """The Processor ``name`` on this connection (one two-way request-channel)."""
        return RemoteProcessor(self, name, own=False)

    def __enter__(self) -> Client[R]:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class RemotePublisher(PublisherBase[Any], Generic[R]):
    """A Publisher served by another process. Each ``subscribe`` opens a request-stream; with
    :func:`~rs_spark.net.connect` each also opens its own connection, closed when the stream ends.

    ``request(n)`` is sent as REQUEST_N credits (in pieces above 2^31-1); ``cancel()`` as
    CANCEL; the remote ``on_error`` arrives as :class:`~.errors.RemoteError`.
    With ``codec='arrow'`` elements are ``pyarrow.RecordBatch``es of at most ``batch_rows``
    rows; ``request(n)`` asks for n batches and is sent as row credits (see :mod:`.bridge`).
    """

    def __init__(
        self, client: Client[R], name: str | None, own: bool, extra: list[tuple[str, bytes]] | None = None
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
        sub = InboundSubscription(
            subscriber,
            make_codec(client.codec_name),
            where,
            requester=True,
            address=self.address,
            on_end=client.close if self._own else None,
            batch_rows=client.batch_rows,
        )
        subscribe_with(subscriber, sub)
        in_background(lambda: self._open(client, sub), f"rs-net-connect {where}")

    def _open(self, client: Client[R], sub: InboundSubscription) -> None:
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

    def resumable(self, key: str | None = None, **how: Unpack[ResumeHow]) -> R:
        """This publisher read as a resumable stream (:class:`~rs_spark.net.ResumablePublisher`): the
        server keeps what it sent until acknowledged; ``key`` resumes an existing stream. With
        ``positions`` the server keeps rows without sending them, says how far they go, and ranges
        are fetched with ``fetch`` (a partition of the ``reactive`` source). A dropped connection is
        resumed for as long as the server keeps the stream (``reconnect_for``: seconds instead),
        with ``backoff`` between tries; ``window``: seconds the server should keep it after a drop."""
        resumer = self._client.resumer
        if resumer is None:
            raise TypeError(f"{self!r}: its Client has no resumer (build it with resumer=...)")
        return resumer(self._client.fresh(), self._name, key, **how)

    def __reduce__(self) -> Any:
        # Pickles as its address, picklable options and resumer (a class or function: pickled by
        # name): rebuilt elsewhere as connect() builds it.
        return (rebuild_publisher, (self.address, self._client.options(picklable=True), self._client.resumer))

    def __repr__(self) -> str:
        return f"<RemotePublisher {self.address}>"


def own_publisher(address: str, resumer: Resumer[R] | None, **options: Any) -> RemotePublisher[R]:
    """The Publisher at ``address`` (with its name) whose every ``subscribe`` opens its own connection."""
    addr = parse(address)
    client = Client(addr.base + addr.query(with_token=True), resumer=resumer, **options)
    return RemotePublisher(client, addr.name, own=True)


def rebuild_publisher(address: str, opts: dict[str, Any], resumer: Resumer[R] | None) -> RemotePublisher[R]:
    """A pickled :class:`RemotePublisher`, unpickled."""
    return own_publisher(address, resumer, **opts)


__all__ = [
    "Client",
    "Pacing",
    "RemotePublisher",
    "ResumeHow",
    "Resumer",
    "SetupEntry",
    "own_publisher",
    "rebuild_publisher",
]
