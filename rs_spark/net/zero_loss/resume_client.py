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
:mod:`.resume` for the wire, and :mod:`.redial` for how the stream gets its connections (opened,
resumed, and tried again after a drop).
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
from ..protocol.client import Pacing
from ..protocol.codecs import ArrowCodec, Codec, make_codec
from ..protocol.connection import Connection
from ..protocol.errors import NetError, Refused, RemoteError
from ..protocol.metadata import MetadataError
from ..protocol.worker import in_background
from .dialler import ResumeDialler
from .outage import Backoff, Outage, OutageReport, retry_bound
from .redial import Redial, StreamDialling
from .resume import (
    STREAM_ID,
    ReadyAnswer,
    ReadyQuestion,
    check_key,
    commit_metadata,
    fetch_entry,
    new_key,
    parse_push,
    ready_of,
    ready_question,
    window_of,
)


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
        "_outage",
        "_opened",
        "_new",
        "_answers_ready",
        "_ready",
        "_ready_asked",
        "_ready_answer",
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
        self._outage: Outage | None = None  # while the stream has no connection and tries to get one
        self._opened = False  # a server took the stream (answered its opening, or resumed it) at least once
        self._new = False  # this subscription opens a new stream: until a server takes it, a drop is final
        self._answers_ready: bool | None = None  # the server answers READY questions (known once it opened the stream)
        self._ready = threading.Condition()  # a READY answer came, or the server said whether it answers
        self._ready_asked = 0  # the number of the last READY question
        self._ready_answer: ReadyAnswer | None = None

    # -- positions and acknowledgements -------------------------------------------------------
    @property
    def position(self) -> int:
        """The stream position after the last row received (rows since the stream began)."""
        return self._origin + self._received

    @property
    def retention(self) -> dict[str, int]:
        """What the server last said it keeps for this stream (rows, bytes, acknowledged position)."""
        return dict(self._retention)  # a dict: the server's message as sent (its camelCase JSON keys)

    @property
    def outage(self) -> OutageReport | None:
        """The outage under way (the stream lost its connection and tries to resume), None while connected."""
        o = self._outage
        return None if o is None else o.report()

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

    def on_push(self, f: F.Frame) -> None:
        if f.metadata is None:
            return
        try:
            raw = bytes(f.metadata)
            _, stats = parse_push(raw)
            window = window_of(raw)
            answers, answer = ready_of(raw)
        except MetadataError as exc:
            self._protocol_failure(f"unreadable METADATA_PUSH from the server: {exc}")
            return
        if window is not None:  # stated once the server opened (or resumed) the stream
            self._publisher.stated_window = window
            self._opened = True
            self._heard_ready(answers, None)
        if answer is not None:
            self._heard_ready(True, answer)
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

    # -- how far the server's rows are ready (AvailableNow) -------------------------------------
    @property
    def answers_ready(self) -> bool | None:
        """Whether the server answers :meth:`ask_ready` (None: not known until it opened the stream)."""
        return self._answers_ready

    def ask_ready(self, wait: float) -> int:
        """Ask the server how far its rows are ready, its publisher watched for up to ``wait``
        seconds where it runs (:data:`.resume.READY_MIME`); the question's number, for
        :meth:`wait_ready`. Not sent while the stream has no connection (no answer then comes)."""
        with self._ready:
            self._ready_asked += 1
            q = ReadyQuestion(self._ready_asked, wait)
        with self._wlock:
            conn = self._conn
        if conn is not None:
            conn.send(F.encode_metadata_push(ready_question(q)))
        return q.id

    def wait_ready(self, question: int, timeout: float) -> ReadyAnswer | None:
        """The answer to question ``question`` (None: none within ``timeout`` seconds, the server
        does not answer, or the stream ended)."""
        deadline = time.monotonic() + timeout
        with self._ready:
            while not self._answered(question):
                left = deadline - time.monotonic()
                if left <= 0 or self._answers_ready is False or self._done or self._terminal is not None:
                    return None
                self._ready.wait(left)
            return self._ready_answer

    def _answered(self, question: int) -> bool:
        a = self._ready_answer
        return a is not None and a.id == question

    def _heard_ready(self, answers: bool, answer: ReadyAnswer | None) -> None:
        with self._ready:
            self._answers_ready = answers
            held = self._ready_answer
            if answer is not None and (held is None or answer.id >= held.id):  # not a late one to an older question
                self._ready_answer = answer
            self._ready.notify_all()

    # -- connections ------------------------------------------------------------------------
    def open_new(self, conn: Connection, meta: bytes | None) -> None:
        """The stream's first connection: REQUEST_STREAM on stream 1 with the first credits."""
        sid = conn.add_stream(self)
        if sid != STREAM_ID:
            raise NetError(f"{self._where}: a resumable stream must be its connection's first", self._address)
        conn.on_push = self.on_push
        with self._wlock:  # a first connection that dropped before the server took the stream: grant again
            self._unsent = add_cap(self._unsent, self._inflight)
            self._inflight = 0
        self.attach(conn, sid, opener=lambda n: conn.send(F.encode_request(F.REQUEST_STREAM, sid, n, metadata=meta)))

    def reattach(self, conn: Connection) -> None:
        """Continue on ``conn`` (after RESUME_OK): grant again the credits the old one carried,
        and send the last acknowledgement if it could not be sent before."""
        with self._wlock:  # open before the stream is routed: its first frames must be taken
            self._conn, self._sid, self._wire_open = conn, STREAM_ID, True
            self._unsent = add_cap(self._unsent, self._inflight)  # the server forgot them
            self._inflight = 0
            acked = self._acked
        self._opened = True
        conn.on_push = self.on_push
        conn.add_stream(self, STREAM_ID)
        with self._wlock:
            self._top_up_locked()
        if acked:
            conn.send(F.encode_metadata_push(commit_metadata(acked)))
        if self._gone.is_set():
            self._close_connection()

    def on_frame(self, f: F.Frame) -> None:
        self._opened = True  # the server answered on the stream: it took it
        super().on_frame(f)
        if self._publisher.positions and f.type in (F.PAYLOAD, F.ERROR):  # a terminal signal: wake waiters
            self._notify_available()

    def on_connection_closed(self, error: BaseException) -> None:
        # A refusal (wrong token, unknown or expired stream) is final: only a dropped connection is resumed.
        # So is the drop of a new stream's first connection before the server took the stream: nothing
        # of it was read, and an address that answers nothing is shown, not waited out.
        fresh = self._new and not self._opened
        if self._done or self._cancelled or self._gone.is_set() or isinstance(error, Refused) or fresh:
            super().on_connection_closed(error)
            return
        self.lost(error)

    def open_first(self, conn: Connection, meta: bytes | None) -> None:
        """Open a new stream (SETUP was sent on ``conn``): :meth:`open_new`, its first connection final
        until the server takes the stream."""
        self._new = True
        self.open_new(conn, meta)

    def lost(self, error: BaseException) -> None:
        """The stream has no connection (it dropped, or could not be opened): resume it in the
        background, for as long as the endpoint keeps it (:meth:`_reconnect`)."""
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
        """Resume on a new connection at ``position`` (:class:`.redial.Redial`: tries spaced by the
        publisher's backoff, for as long as the endpoint keeps the stream). A refusal ends the stream
        with its reason; the window's end with :class:`.redial.WindowEnded` (a stream no server ever took: with
        the last connection error)."""
        pub = self._publisher
        redial = Redial(pub, self._where, self._address, error, position, self._gone)
        self._outage = redial.outage
        got = redial.run(self.on_push, lambda: self._opened)
        self._outage = None
        with self._wlock:
            self._reconnecting = False
        if isinstance(got, BaseException):
            if not self._gone.is_set():
                super().on_connection_closed(got)
            return
        conn, fresh = got
        if fresh:
            self.open_new(conn, pub.dialling.request_metadata(conn))
        else:
            self.reattach(conn)

    def detach(self) -> None:
        """End this subscription without cancelling the stream: the server keeps it (and what it
        sent since the last acknowledgement) for its window, so a reader can resume it later."""
        self._gone.set()
        with self._wlock:
            self._wire_open = False  # no CANCEL goes out: the connection just closes
        self.cancel()

    def cancel(self) -> None:
        """Cancel the stream (a resume under way stops); after its end, stop waiting for
        acknowledgements: close the connection now."""
        super().cancel()
        if self._done:
            self._close_connection()
        elif self._cancelled:
            self._gone.set()

    def _stream_ended(self) -> None:
        """The stream ended here: close its connection, unless the server ended it (complete or
        error) while rows received are not yet acknowledged. The server keeps those rows until
        they are, so the connection stays open for :meth:`on_commit`, which closes it once the
        last row received is acknowledged; ``cancel``, ``detach`` or a drop close it sooner."""
        with self._ready:  # a READY question waiting for its answer has none coming
            self._ready.notify_all()
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
    ``Retention.window``). A subscription whose connection drops (or, resuming a stream by its key,
    cannot be opened) tries to resume by itself, spaced by ``backoff``, for as long as the server
    keeps the stream: the window it states (else ``window``, else 10 minutes) plus the keepalive
    lifetime; ``reconnect_for``: that many seconds instead. Only a refusal or that bound's end ends
    it with the error. A new stream whose first connection cannot be opened fails at once (nothing
    of it was read: a wrong address is shown, not waited out).
    """

    def __init__(
        self,
        client: ResumeDialler,
        name: str | None,
        key: str | None = None,
        *,
        window: float | None = None,
        reconnect_for: float | None = None,
        positions: bool = False,
        new: bool = False,
        backoff: Pacing | None = None,
    ) -> None:
        self._client = client
        self.positions = positions
        self._name = name
        self._fresh = key is None or new  # the next subscribe opens the stream; later ones resume it
        self.key = new_key() if key is None else check_key(key)
        self.dialling = StreamDialling(client, name, self.key, window, positions)
        self.window = window
        self.reconnect_for = reconnect_for
        self.backoff: Pacing = backoff or Backoff()
        self.stated_window: float | None = None  # what the server said it keeps the stream for
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        """The endpoint's address (without the token)."""
        return self.dialling.address

    @property
    def batch_rows(self) -> int:
        """Arrow: the most rows per delivered batch (``batch_rows=`` of :func:`~rs_spark.net.connect`)."""
        return self._client.batch_rows

    def retry_bound(self) -> float:
        """Seconds a subscription tries to resume after a drop (see the class)."""
        if self.reconnect_for is not None:
            return float(self.reconnect_for)
        return retry_bound(self.stated_window, self.window, self._client.lifetime)

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
            dialling = self.dialling
            if fresh:
                conn = dialling.open()
                sub.open_first(conn, dialling.request_metadata(conn))
            else:
                conn, new = dialling.reconnection(position, sub.on_push)
                if new:
                    sub.open_new(conn, dialling.request_metadata(conn))
                else:
                    sub.reattach(conn)
        except Refused as exc:
            sub.fail(exc)
        except NetError as exc:
            if fresh:  # nothing of a new stream was read: a wrong address or a server not there is shown at once
                sub.fail(exc)
            else:  # a stream read before (its key resumed), unreachable now: an outage from the start
                sub.lost(exc)

    def fetch(self, lo: int, hi: int, prefetch: int | None = None) -> Iterator[Any]:
        """The kept rows ``[lo, hi)`` of this stream, fetched on a connection of their own (what a
        Spark executor does for a planned range of a partition): elements as the stream's codec
        decodes them (record batches for ``arrow``), in order. ``prefetch``: elements asked for
        ahead; by default 4 record batches, or up to 1,024 elements of a codec that carries one row
        per element (asked 4 at a time, a range paid a round trip per 2 rows over a slow link)."""
        if prefetch is None:
            arrow = isinstance(make_codec(self._client.codec_name), ArrowCodec)
            prefetch = 4 if arrow else max(1, min(1024, hi - lo))
        return fetch_range(self._client.fresh(), self._name, self.key, lo, hi, prefetch)

    def __repr__(self) -> str:
        return f"<ResumablePublisher {self.address} stream {self.key}>"


def fetch_range(
    client: ResumeDialler, name: str | None, key: str, lo: int, hi: int, prefetch: int = 4
) -> Iterator[Any]:
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
