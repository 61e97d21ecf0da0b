"""The client side of resumable streams: read a served Publisher so that no row is lost when the
connection drops or the reader restarts.

``connect(address).resumable()`` is a :class:`ResumablePublisher`: a
:class:`~rs_spark.streams.types.Replayable` Publisher whose positions count the served stream's
rows. Its Subscription is :class:`~rs_spark.streams.types.Committable`: ``on_commit(position)``
tells the server that every row before ``position`` is durable, so it may forget them. Until then
the server keeps them (:mod:`.retention`), and a reader that comes back (this process after a
network drop, reconnecting by itself; or a new process after a crash, with the stream's ``key``
and the position it committed) continues with ``subscribe_at``. See :mod:`.resume` for the wire.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..streams.demand import add_cap
from ..streams.drain import check_subscriber, subscribe_with
from ..streams.pipeline import PublisherBase
from ..streams.types import Subscriber
from . import frames as F
from .bridge import InboundSubscription
from .codecs import Codec, make_codec
from .connection import Connection
from .errors import ConnectionLost, NetError, ResumeRejected
from .metadata import MetadataError, request_metadata
from .resume import STREAM_ID, check_key, commit_metadata, new_key, parse_push, resume_token
from .worker import in_background

_BACKOFF = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)


class ResumableSubscription(InboundSubscription):
    """The Subscription of a resumable stream: positions, acknowledgements, reconnection."""

    __slots__ = ("_origin", "_acked", "_retention", "_publisher", "_reconnecting", "_gone")

    def __init__(
        self, subscriber: Subscriber[Any], codec: Codec, where: str, publisher: ResumablePublisher, origin: int
    ) -> None:
        super().__init__(
            subscriber,
            codec,
            where,
            requester=True,
            address=publisher.address,
            on_end=self._close_connection,
            batch_rows=publisher.batch_rows,
        )
        self._origin = origin  # the stream position of the first row this subscription receives
        self._acked = 0
        self._retention: dict[str, int] = {}
        self._publisher = publisher
        self._reconnecting = False
        self._gone = threading.Event()  # cancelled, ended or detached: stop reconnecting

    # -- positions and acknowledgements -------------------------------------------------------
    @property
    def position(self) -> int:
        """The stream position after the last row received (rows since the stream began)."""
        return self._origin + self._received

    @property
    def retention(self) -> dict[str, int]:
        """What the server last said it keeps for this stream (rows, bytes, acknowledged position)."""
        return dict(self._retention)

    def on_commit(self, position: int) -> None:
        """Every row before ``position`` is durable downstream: the server may forget them.
        Acknowledgements only move forward; one beyond what was received is a ValueError."""
        if position > self.position:
            raise ValueError(f"{self._where}: cannot acknowledge position {position}: only {self.position} received")
        with self._wlock:
            if position <= self._acked:
                return
            self._acked = position
            conn = self._conn if self._wire_open else None
        if conn is not None:  # else it goes with the next connection (see _reattach)
            conn.send(F.encode_metadata_push(commit_metadata(position)))

    def _on_push(self, f: F.Frame) -> None:
        if f.metadata is None:
            return
        try:
            _, stats = parse_push(bytes(f.metadata))
        except MetadataError as exc:
            self._protocol_failure(f"unreadable METADATA_PUSH from the server: {exc}")
            return
        if stats is not None:
            self._retention = stats

    # -- connections ------------------------------------------------------------------------
    def open_new(self, conn: Connection, meta: bytes | None) -> None:
        """The stream's first connection: REQUEST_STREAM on stream 1 with the first credits."""
        sid = conn.add_stream(self)
        if sid != STREAM_ID:
            raise NetError(f"{self._where}: a resumable stream must be its connection's first", self._address)
        conn.on_push = self._on_push
        self.attach(conn, sid, opener=lambda n: conn.send(F.encode_request(F.REQUEST_STREAM, sid, n, metadata=meta)))

    def reattach(self, conn: Connection) -> None:
        """Continue on ``conn`` (after RESUME_OK): grant again the credits the old one carried,
        and send the last acknowledgement if it could not be sent before."""
        with self._wlock:  # open before the stream is routed: its first frames must be taken
            self._conn, self._sid, self._wire_open = conn, STREAM_ID, True
            self._unsent = add_cap(self._unsent, self._inflight)  # the server forgot them
            self._inflight = 0
            acked = self._acked
        conn.on_push = self._on_push
        conn.add_stream(self, STREAM_ID)
        with self._wlock:
            self._top_up_locked()
        if acked:
            conn.send(F.encode_metadata_push(commit_metadata(acked)))
        if self._gone.is_set():
            self._close_connection()

    def on_connection_closed(self, error: BaseException) -> None:
        if self._done or self._cancelled or self._gone.is_set():
            super().on_connection_closed(error)
            return
        with self._wlock:
            # From here frames still read off the old connection are dropped (see _deliver), so
            # the position resumed at is exactly what was taken: nothing twice, nothing skipped.
            self._wire_open = False
            position = self._origin + self._received
            start = not self._reconnecting
            self._reconnecting = True
        if start:
            in_background(lambda: self._reconnect(error, position), f"rs-net-resume {self._where}")

    def _reconnect(self, error: BaseException, position: int) -> None:
        """Resume on a new connection at ``position``, with backoff, for up to the publisher's
        ``reconnect_for`` seconds; a refusal ends the stream with its reason."""
        deadline = time.monotonic() + self._publisher.reconnect_for
        attempt = 0
        last: BaseException = error
        while not self._gone.is_set() and time.monotonic() < deadline:
            try:
                conn = self._publisher.resume_connection(position)
            except ResumeRejected as exc:
                last = exc
                break
            except NetError as exc:
                last = exc
                self._gone.wait(_BACKOFF[min(attempt, len(_BACKOFF) - 1)])
                attempt += 1
                continue
            with self._wlock:
                self._reconnecting = False
            self.reattach(conn)
            return
        with self._wlock:
            self._reconnecting = False
        if not self._gone.is_set():
            super().on_connection_closed(last)

    def detach(self) -> None:
        """End this subscription without cancelling the stream: the server keeps it (and what it
        sent since the last acknowledgement) for its window, so a reader can resume it later."""
        self._gone.set()
        with self._wlock:
            self._wire_open = False  # no CANCEL goes out: the connection just closes
        self.cancel()

    def _close_connection(self) -> None:
        self._gone.set()
        conn = self._conn
        if conn is not None:
            conn.close(None, final=[])


class ResumablePublisher(PublisherBase[Any]):
    """A served Publisher read as a resumable stream (``connect(address).resumable(key)``).

    Without ``key`` a new stream is opened (``key`` then names it: keep it to resume); with one,
    ``subscribe_at(subscriber, position)`` resumes that stream at ``position`` (a row the server
    still keeps: at or after the last acknowledged one). One subscriber holds the stream at a
    time. ``window``: seconds the server should keep the stream after a drop (capped by its own
    ``Retention.window``). ``reconnect_for``: seconds a subscription tries to resume by itself
    after its connection drops before it ends with the error.
    """

    def __init__(
        self,
        client: Any,
        name: str | None,
        key: str | None = None,
        *,
        window: float | None = None,
        reconnect_for: float = 60.0,
    ) -> None:
        self._client = client
        self._name = name
        self._fresh = key is None  # the next subscribe opens the stream; later ones resume it
        self.key = new_key() if key is None else check_key(key)
        self._token = resume_token(client.token, self.key)
        self.window = window
        self.reconnect_for = reconnect_for
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        return self._client.address_of(self._name)

    @property
    def batch_rows(self) -> int:
        return int(self._client.batch_rows)

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        self.subscribe_at(subscriber, 0)

    def subscribe_at(self, subscriber: Subscriber[Any], position: int) -> None:
        """Subscribe at stream ``position`` (0 for a new stream). The Subscription it gets is a
        :class:`ResumableSubscription`; a refused resume arrives as ``on_error(ResumeRejected)``."""
        check_subscriber(subscriber)  # rule 1.9
        with self._lock:
            fresh, self._fresh = self._fresh, False
        if fresh and position != 0:
            raise ValueError(f"a new stream starts at position 0, not {position}; pass the stream's key to resume it")
        where = self._client.where("publisher", self._name)
        sub = ResumableSubscription(subscriber, make_codec(self._client.codec_name), where, self, position)
        subscribe_with(subscriber, sub)
        in_background(lambda: self._open(sub, fresh, position), f"rs-net-connect {where}")

    def _open(self, sub: ResumableSubscription, fresh: bool, position: int) -> None:
        if sub.is_cancelled:
            return
        try:
            if fresh:
                conn = self._client.open_resumable(self._token, self.window)
                sub.open_new(conn, request_metadata(conn.metadata_mime, self._name))
            else:
                sub.reattach(self.resume_connection(position))
        except NetError as exc:
            sub.fail(exc)

    def resume_connection(self, position: int) -> Connection:
        """A new connection continuing the stream at ``position`` (RESUME, RESUME_OK)."""
        try:
            return self._client.resume(self._token, position)
        except ResumeRejected as exc:
            raise ResumeRejected(
                f"{self.address} cannot resume stream {self.key} at position {position}: {exc}",
                self.address,
            ) from exc
        except ConnectionLost:
            raise

    def __repr__(self) -> str:
        return f"<ResumablePublisher {self.address} stream {self.key}>"


__all__ = ["ResumablePublisher", "ResumableSubscription"]
