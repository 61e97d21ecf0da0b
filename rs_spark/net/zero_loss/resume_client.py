"""The client side of resumable streams: read a served Publisher so that no row is lost when the
connection drops or the reader restarts.

``connect(address).resumable()`` is a :class:`ResumablePublisher`: a
:class:`~rs_spark.streams.types.Replayable` Publisher whose positions count the served stream's
rows. Its Subscription is :class:`~rs_spark.streams.types.Committable`: ``on_commit(position)``
tells the server that every row before ``position`` is durable, so it may forget them. Until then
the server keeps them (:mod:`.retention`), and a reader that comes back (this process after a
network drop, reconnecting by itself; or a new process after a crash, with the stream's ``key``
and the position it committed) continues with ``subscribe_at``. After the stream's end the
connection stays open until the last row received is acknowledged (or the subscription is
cancelled or detached), so acknowledgements that follow the end still reach the server. See
:mod:`.resume` for the wire.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ...streams.demand import add_cap
from ...streams.drain import check_subscriber, subscribe_with
from ...streams.pipeline import PublisherBase
from ...streams.types import Subscriber
from ..protocol import frames as F
from ..protocol.bridge import InboundSubscription
from ..protocol.codecs import Codec, make_codec
from ..protocol.connection import Connection
from ..protocol.errors import ConnectionLost, NetError, Refused, RemoteError, ResumeRejected
from ..protocol.metadata import MetadataError, request_metadata
from ..protocol.worker import in_background
from .resume import (
    STREAM_ID,
    UNKNOWN_STREAM,
    ResumeRequest,
    check_key,
    commit_metadata,
    fetch_entry,
    new_key,
    parse_push,
    resume_token,
)

_BACKOFF = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)


class ResumableSubscription(InboundSubscription):
    """The Subscription of a resumable stream: positions, acknowledgements, reconnection."""

    __slots__ = (
        "_origin",
        "_acked",
        "_retention",
        "_publisher",
        "_reconnecting",
        "_gone",
        "_available",
        "_listeners",
        "_lingering",
    )

    def __init__(
        self, subscriber: Subscriber[Any], codec: Codec, where: str, publisher: ResumablePublisher, origin: int
    ) -> None:
        super().__init__(
            subscriber,
            codec,
            where,
            requester=True,
            address=publisher.address,
            on_end=self._stream_ended,
            batch_rows=publisher.batch_rows,
        )
        self._origin = origin  # the stream position of the first row this subscription receives
        self._acked = 0
        self._retention: dict[str, int] = {}
        self._publisher = publisher
        self._reconnecting = False
        self._gone = threading.Event()  # cancelled, ended or detached: stop reconnecting
        self._available = threading.Condition()  # positions only: rows made available
        self._listeners: list[Callable[[], None]] = []
        # The server ended the stream and rows received are not yet acknowledged: the connection
        # stays open for those acknowledgements (see _stream_ended).
        self._lingering = False

    # -- positions and acknowledgements -------------------------------------------------------
    @property
    def position(self) -> int:
        """The stream position after the last row received (rows since the stream began)."""
        return self._origin + self._received

    @property
    def retention(self) -> dict[str, int]:
        """What the server last said it keeps for this stream (rows, bytes, acknowledged position)."""
        return dict(self._retention)  # a dict: the server's message as sent (its camelCase JSON keys)

    def on_commit(self, position: int) -> None:
        """Every row before ``position`` is durable downstream: the server may forget them.
        Acknowledgements only move forward; one beyond what was received is a ValueError. After
        the stream's end, acknowledging the last row received closes the connection."""
        if position > self.position:
            raise ValueError(f"{self._where}: cannot acknowledge position {position}: only {self.position} received")
        with self._wlock:
            if position <= self._acked:
                return
            self._acked = position
            conn = self._conn
            # Queued under the lock, so _stream_ended cannot close the connection between the two
            # (also after the stream's end). A dropped connection refuses it: reattach sends it.
            if conn is not None:
                conn.send(F.encode_metadata_push(commit_metadata(position)))
            last = self._lingering and position >= self.position
        if last:  # the last row received is acknowledged: the server ends the stream (queued frames still go)
            self._close_connection()

    def _on_push(self, f: F.Frame) -> None:
        if f.metadata is None:
            return
        try:
            _, stats = parse_push(bytes(f.metadata))
        except MetadataError as exc:
            self._protocol_failure(f"unreadable METADATA_PUSH from the server: {exc}")
            return
        if stats is None:
            return
        self._retention = stats
        end = stats.get("endPosition")
        if self._publisher.positions and end is not None:
            self._made_available(end)

    def _made_available(self, end: int) -> None:
        """Positions only: the server made rows available up to ``end`` against our credits."""
        with self._wlock:
            k = end - (self._origin + self._received)
            if k <= 0 or not self._wire_open:
                return
            over = self._count_received_locked(k)
        if over:
            self._protocol_failure(f"the server made rows available up to {end}, more than were requested (rule 1.1)")
            return
        self._notify_available()

    def on_available(self, listener: Callable[[], None]) -> None:
        """Positions only: call ``listener`` (no arguments, quickly: on the connection's reader thread)
        after rows are made available and after a terminal signal, for a caller waiting on several
        streams at once (:meth:`wait_available` waits on one)."""
        with self._available:
            self._listeners.append(listener)

    def _notify_available(self) -> None:
        with self._available:
            self._available.notify_all()
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def wait_available(self, position: int, timeout: float) -> int:
        """Positions only: wait until rows up to ``position`` are available (or the stream ended,
        or ``timeout``); returns the position rows are available up to."""
        deadline = time.monotonic() + timeout
        with self._available:
            while self.position < position and not self._done and self._terminal is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._available.wait(left)
        return self.position

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

    def on_frame(self, f: F.Frame) -> None:
        super().on_frame(f)
        if self._publisher.positions and f.type in (F.PAYLOAD, F.ERROR):  # a terminal signal: wake waiters
            self._notify_available()

    def on_connection_closed(self, error: BaseException) -> None:
        # A refusal (wrong token, unknown or expired stream) is final: only a dropped connection is resumed.
        if self._done or self._cancelled or self._gone.is_set() or isinstance(error, Refused):
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

    def cancel(self) -> None:
        """Cancel the stream; after its end, stop waiting for acknowledgements: close the connection now."""
        super().cancel()
        if self._done:
            self._close_connection()

    def _stream_ended(self) -> None:
        """The stream ended here: close its connection, unless the server ended it (complete or
        error) while rows received are not yet acknowledged. The server keeps those rows until
        they are, so the connection stays open for :meth:`on_commit`, which closes it once the
        last row received is acknowledged; ``cancel``, ``detach`` or a drop close it sooner."""
        t = self._terminal
        with self._wlock:
            conn = self._conn
            self._lingering = (
                (t is self._COMPLETE or isinstance(t, RemoteError))
                and not (self._cancelled or self._gone.is_set())
                and conn is not None
                and conn.closed is None
                and self._acked < self.position
            )
            if self._lingering:
                return
        self._close_connection()

    def _close_connection(self) -> None:
        self._gone.set()
        with self._wlock:
            self._lingering = False
            conn = self._conn
        if conn is not None:
            conn.close(None, final=[])


class ResumablePublisher(PublisherBase[Any]):
    """A served Publisher read as a resumable stream (``connect(address).resumable(key)``).

    Without ``key`` a new stream is opened (``key`` then names it: keep it to resume); with one,
    ``subscribe_at(subscriber, position)`` resumes that stream at ``position`` (``new=True``: opens a
    new stream under that key, one made durable before the stream existed) (a row the server
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
        positions: bool = False,
        new: bool = False,
    ) -> None:
        self._client = client
        self.positions = positions
        self._name = name
        self._fresh = key is None or new  # the next subscribe opens the stream; later ones resume it
        self.key = new_key() if key is None else check_key(key)
        self._token = resume_token(client.token, self.key)
        self.window = window
        self.reconnect_for = reconnect_for
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        """The endpoint's address (without the token)."""
        return self._client.address_of(self._name)

    @property
    def batch_rows(self) -> int:
        """Arrow: the most rows per delivered batch (``batch_rows=`` of :func:`~rs_spark.net.connect`)."""
        return int(self._client.batch_rows)

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        """``subscribe_at(subscriber, 0)``: a new stream from its first row, or a kept stream from position 0."""
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
        # Positions only: no payload arrives on this stream, demand counts rows (as a one-row codec does).
        codec = Codec() if self.positions else make_codec(self._client.codec_name)
        sub = ResumableSubscription(subscriber, codec, where, self, position)
        subscribe_with(subscriber, sub)
        in_background(lambda: self._open(sub, fresh, position), f"rs-net-connect {where}")

    def _open(self, sub: ResumableSubscription, fresh: bool, position: int) -> None:
        if sub.is_cancelled:
            return
        try:
            if fresh or not self._resumed(sub, position):
                request = ResumeRequest(self.window, "positions" if self.positions else "rows")
                conn = self._client.open_resumable(self._token, request)
                sub.open_new(conn, request_metadata(conn.metadata_mime, self._name))
        except NetError as exc:
            sub.fail(exc)

    def _resumed(self, sub: ResumableSubscription, position: int) -> bool:
        """Resume the stream at ``position``; False when the server does not know it and nothing of it
        was received yet (position 0): its key was made durable before the stream was opened, so it
        is opened now, under that key."""
        try:
            sub.reattach(self.resume_connection(position))
            return True
        except ResumeRejected as exc:
            if position == 0 and UNKNOWN_STREAM in str(exc):
                return False
            raise

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

    def fetch(self, lo: int, hi: int, prefetch: int = 4) -> Iterator[Any]:
        """The kept rows ``[lo, hi)`` of this stream, fetched on a connection of their own (what a
        Spark executor does for a planned range of a partition): elements as the stream's codec
        decodes them (record batches for ``arrow``), in order."""
        return fetch_range(self._client.fresh(), self._name, self.key, lo, hi, prefetch)

    def __repr__(self) -> str:
        return f"<ResumablePublisher {self.address} stream {self.key}>"


def fetch_range(client: Any, name: str | None, key: str, lo: int, hi: int, prefetch: int = 4) -> Iterator[Any]:
    """Rows ``[lo, hi)`` kept for stream ``key`` of endpoint ``name`` (see :meth:`ResumablePublisher.fetch`)."""
    from ...streams.subscribers import BlockingIterator

    it = BlockingIterator(prefetch=prefetch)
    try:
        client.publisher(name, extra=[fetch_entry(key, lo, hi)]).subscribe(it)
        with it:
            yield from it
    finally:
        client.close()


__all__ = ["ResumablePublisher", "ResumableSubscription"]
