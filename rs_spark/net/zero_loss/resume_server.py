"""The server side of resumable streams: which streams wait for a reader, and the handshakes.

A :class:`ResumeService` belongs to a :class:`~rs_spark.net.Server`. It accepts a SETUP that asks
for resumption (:mod:`.resume` describes the conventions), opens that connection's one stream
as a :class:`~.retaining_stream.RetainingStream`, and keeps it in :class:`~.sessions.Sessions`
by its token. It answers RESUME (re-attaches the stream to the new connection and sends its rows
again from the position asked for) and the reader's acknowledgements (METADATA_PUSH). A stream
whose connection dropped waits ``Retention.window`` seconds (or the shorter window its reader asked
for; the reader is told it, :data:`.resume.WINDOW_MIME`); then its publisher is cancelled and its
kept rows are counted as lost.
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from ...arrow.validate import MalformedArrow
from ..protocol import frames as F
from ..protocol.codecs import Codec, make_codec
from ..protocol.connection import Connection
from ..protocol.errors import Rejected, ResumeRejected
from ..protocol.metadata import COMPOSITE, MetadataError, parse_composite
from ..protocol.outbound import OutboundStream
from .resume import (
    STREAM_ID,
    UNKNOWN_STREAM,
    ReadyAnswer,
    ReadyQuestion,
    ResumeRequest,
    fetch_of,
    parse_push,
    ready_answer,
    ready_question_of,
    resume_token,
    retention_metadata,
    stream_of,
    window_metadata,
)
from .retaining_stream import Delivery, RetainingStream, RetainingStreamStats
from .retention import ResumeError, Retention
from .sessions import Session, Sessions
from .spill import Spill, SpilledStream, SpillError
from .spill import expired as spill_expired
from .spill import find as spill_find

log = logging.getLogger("rs_spark.net")


def _answer_on(conn: Connection, q: ReadyQuestion) -> Callable[[int, bool], None]:
    """Sends the answer to question ``q`` on ``conn`` (dropped if it closed meanwhile)."""

    def answer(position: int, edge: bool) -> None:
        conn.reply(F.encode_metadata_push(ready_answer(ReadyAnswer(q.id, position, edge))))

    return answer


Resolver = Callable[[str], Any]
"""Endpoint name -> the Publisher served under it now (None when it is not served)."""


@dataclass(frozen=True, slots=True)
class StreamStats(RetainingStreamStats):
    """One resumable stream a server keeps: where it is served, and what it keeps and has done."""

    # The endpoint it serves and how long (seconds) it waits for its reader once detached.
    endpoint: str
    window: float

    def as_dict(self) -> dict[str, Any]:
        """The stream as ``Server.stats()["streams"]`` showed it before 0.1.0 (camelCase keys)."""
        return {
            "endpoint": self.endpoint,
            "window": self.window,
            "retainedRecords": self.held_records,
            "retainedBytes": self.held_bytes,
            "firstPosition": self.first_position,
            "sentPosition": self.sent_position,
            "endPosition": self.end_position,
            "state": self.state,
            "ackedPosition": self.acked_position,
            "resumes": self.resumes,
            "attaches": self.attaches,
            "resentRecords": self.resent_records,
            "lostRecords": self.lost_records,
            "releasedRecords": self.released_records,
            "afterEnd": self.after_end,
        }


@dataclass(frozen=True, slots=True)
class ResumeServiceStats:
    """What a server keeps for its readers: per stream, and in total (rows)."""

    # The streams kept now (attached, or detached and waiting for their reader).
    streams: tuple[StreamStats, ...]
    # Kept now by all of them.
    retained_records: int
    retained_bytes: int
    # Since the server started: streams expired unresumed, rows they lost (kept when their window
    # ended, or when the server stopped under a connected reader) and rows discarded at stop
    # (kept for a stream no reader was on).
    expired_streams: int
    lost_records: int
    discarded_records: int

    def as_dict(self) -> dict[str, Any]:
        """The mapping ``Server.stats()`` returned before 0.1.0 (camelCase keys, streams as dicts)."""
        return {
            "streams": [s.as_dict() for s in self.streams],
            "expiredStreams": self.expired_streams,
            "lostRecords": self.lost_records,
            "discardedRecords": self.discarded_records,
            "retainedRecords": self.retained_records,
            "retainedBytes": self.retained_bytes,
        }


def fields_of(record: Any) -> dict[str, Any]:
    """A dataclass record's fields by name, shallow (to build a record that extends it)."""
    return {f.name: getattr(record, f.name) for f in fields(record)}


class ResumeService:
    """Resumption for one server (see the module docstring)."""

    def __init__(
        self, where: str, retention: Retention, resolve: Resolver, max_payload: int, token: str | None = None
    ) -> None:
        self.where = where
        self._token = token  # the endpoint's: an acknowledgement naming a key finds its stream by the resume token
        self.retention = retention
        self.sessions = Sessions(where)
        self._resolve = resolve
        self._max_payload = max_payload
        if retention.enabled and retention.spill:
            self._expire_spilled(retention.spill)

    # -- SETUP -----------------------------------------------------------------------------
    def accept_setup(self, conn: Connection, f: F.Frame) -> None:
        """A SETUP with the resume flag: remember what the stream it opens will need."""
        try:
            request = ResumeRequest.of(self._setup_entries(f))
        except MetadataError as exc:
            raise Rejected(F.INVALID_SETUP, f"unreadable SETUP metadata: {exc}") from None
        if request is None:
            raise Rejected(
                F.REJECTED_SETUP,
                f"{self.where} resumes streams by row position (rs_spark's {F.TYPE_NAMES[F.RESUME]} convention), "
                "not RSocket's frame-byte positions; connect without resume, or with rs_spark.net",
            )
        if not self.retention.enabled:
            raise Rejected(
                F.REJECTED_SETUP,
                f"{self.where} keeps no streams for resumption (retention is off); connect without resume",
            )
        if not f.resume_token:
            raise Rejected(F.INVALID_SETUP, "SETUP has the resume flag but an empty resume token")
        limit = self.retention.window
        w = limit if request.window is None else min(request.window, limit)
        setup = {
            "metadata_mime": f.metadata_mime,
            "data_mime": f.data_mime,
            "keepalive": conn.keepalive,
            "lifetime": conn.lifetime,
        }
        conn.resumption = Session(f.resume_token, w, setup, positions=request.deliver == "positions")

    @staticmethod
    def _setup_entries(f: F.Frame) -> list[tuple[str, bytes]]:
        if f.metadata_mime != COMPOSITE or f.metadata is None:
            return []
        try:
            return parse_composite(bytes(f.metadata))
        except MetadataError as exc:
            raise Rejected(F.INVALID_SETUP, f"unreadable SETUP metadata: {exc}") from None

    # -- the stream ------------------------------------------------------------------------
    @staticmethod
    def session_of(conn: Connection) -> Session | None:
        s = conn.resumption
        return s if isinstance(s, Session) else None

    def open_stream(
        self, conn: Connection, sid: int, codec: Codec, where: str, address: str, endpoint: str
    ) -> RetainingStream:
        """The retaining stream a resumable connection's REQUEST_STREAM opens."""
        session = self.session_of(conn)
        assert session is not None, "only on a connection whose SETUP asked for resumption"
        if sid != STREAM_ID or session.stream is not None:
            raise Rejected(
                F.REJECTED,
                f"{self.where}: a resumable connection carries one stream, with id {STREAM_ID}; open another "
                "connection for another stream",
            )
        spill = None
        if self.retention.spill:
            meta = dict(session.setup, endpoint=endpoint, window=session.window, positions=session.positions)
            spill = Spill(self.retention.spill, session.token, meta)
        out = RetainingStream(
            codec,
            where,
            self.retention,
            address=address,
            on_detach=lambda: self.sessions.detached(session),
            on_end=self._ended(session),
            spill=spill,
            delivery=Delivery.POSITIONS if session.positions else Delivery.ROWS,
        )
        session.stream, session.endpoint = out, endpoint
        try:
            self.sessions.add(session)
        except ResumeRejected as exc:
            raise Rejected(F.REJECTED, str(exc)) from None
        conn.send(F.encode_metadata_push(window_metadata(session.window)))  # how long resuming can succeed
        return out

    def _ended(self, session: Session) -> Callable[[BaseException | None], None]:
        def ended(error: BaseException | None) -> None:
            self.sessions.remove(session)

        return ended

    def kept_stream(
        self, conn: Connection, sid: int, codec: Codec, where: str, address: str, name: str, publisher: Any
    ) -> OutboundStream | None:
        """*KeptStreams*: the stream a request for ``publisher`` opens on a connection whose SETUP
        asked for resumption (its publisher told of acknowledgements when it takes ``on_commit``);
        None on any other connection."""
        if self.session_of(conn) is None:
            return None
        kept = self.open_stream(conn, sid, codec, where, address, name)
        if callable(getattr(publisher, "on_commit", None)):
            kept.committable = publisher
        return kept.outbound

    # -- RESUME ----------------------------------------------------------------------------
    def on_resume(self, conn: Connection, f: F.Frame) -> None:
        """A connection whose first frame is RESUME: re-attach the stream, answer RESUME_OK."""
        if f.version[0] != 1:
            raise Rejected(F.REJECTED_RESUME, f"{self.where} speaks RSocket 1.x; RESUME asked for {f.version[0]}")
        session = self.sessions.find(f.resume_token) or self._from_spill(f.resume_token)
        if session is None or session.stream is None:
            expired = self.sessions.expired_why(f.resume_token)
            if expired is not None:
                raise Rejected(
                    F.REJECTED_RESUME, f"{self.where}: the stream expired: {expired}; its kept rows were dropped"
                )
            raise Rejected(
                F.REJECTED_RESUME,
                f"{self.where} {UNKNOWN_STREAM}: it was never opened, its server restarted without spill, or the "
                "reader has another endpoint's token",
            )
        setup = session.setup
        conn.metadata_mime, conn.data_mime = setup["metadata_mime"], setup["data_mime"]
        conn.keepalive, conn.lifetime = setup["keepalive"], setup["lifetime"]
        conn.resumption = session
        try:
            conn.add_stream(session.stream.outbound, STREAM_ID)
            session.stream.resume(conn, STREAM_ID, f.position)
        except ResumeError as exc:
            conn.remove_stream(STREAM_ID)
            raise Rejected(F.REJECTED_RESUME, f"{self.where}: '{session.endpoint}': {exc}") from None
        self.sessions.attached(session)
        conn.reply(F.encode_resume_ok(f.position))
        conn.reply(F.encode_metadata_push(window_metadata(session.window)))  # both answer the peer's RESUME

    # -- fetches -----------------------------------------------------------------------------
    def fetched(self, conn: Connection, f: F.Frame, name: str) -> list[Any] | None:
        """*KeptStreams*: the kept rows a request for endpoint ``name`` asks for with a fetch entry
        (:func:`.resume.fetch_of`); None when it has none."""
        if conn.metadata_mime != COMPOSITE or f.metadata is None:
            return None
        try:
            fetch = fetch_of(parse_composite(bytes(f.metadata)))
        except MetadataError as exc:
            raise Rejected(F.INVALID, f"unreadable fetch metadata: {exc}") from None
        if fetch is None:
            return None
        key, lo, hi = fetch
        return self.read_range(resume_token(self._token, key), name, conn.data_mime, lo, hi)

    def read_range(self, token: bytes, endpoint: str, data_mime: str, lo: int, hi: int) -> list[Any]:
        """The kept rows ``[lo, hi)`` of the stream of ``token`` for a fetch request."""
        session = self.sessions.find(token) or self._from_spill(token)
        if session is None or session.stream is None or session.endpoint != endpoint:
            raise Rejected(
                F.REJECTED,
                f"{self.where} holds no stream of '{endpoint}' for this key: it ended or expired, or the fetch has "
                "another endpoint's token",
            )
        if data_mime != session.setup["data_mime"]:
            raise Rejected(
                F.REJECTED,
                f"{self.where}: the stream of '{endpoint}' is {session.setup['data_mime']}; fetch it with that codec",
            )
        try:
            return session.stream.read_range(lo, hi)
        except ResumeError as exc:
            raise Rejected(F.REJECTED, f"{self.where}: '{endpoint}': {exc}") from None

    # -- spill -------------------------------------------------------------------------------
    def _from_spill(self, token: bytes) -> Session | None:
        """A stream a previous process of this server spilled, served again from its files."""
        root = self.retention.spill
        if not (self.retention.enabled and root):
            return None
        try:
            spilled = spill_find(root, token, self._max_payload)
        except SpillError as exc:
            raise Rejected(F.REJECTED_RESUME, f"{self.where}: the spilled stream cannot be read back: {exc}") from None
        if spilled is None:
            return None
        meta = spilled.meta
        name = meta["endpoint"]
        publisher = self._resolve(name)
        if publisher is None:
            raise Rejected(
                F.REJECTED_RESUME,
                f"{self.where} kept a stream of '{name}' on disk, but serves no publisher named '{name}' now; "
                "serve it under the same name to resume the stream",
            )
        return self._revive(token, spilled, publisher)

    def _revive(self, token: bytes, spilled: SpilledStream, publisher: Any) -> Session:
        meta = spilled.meta
        setup = {k: meta[k] for k in ("metadata_mime", "data_mime", "keepalive", "lifetime")}
        session = Session(
            token, float(meta.get("window", self.retention.window)), setup, positions=meta.get("positions") is True
        )
        codec = make_codec(meta["data_mime"])
        where = f"publisher '{meta['endpoint']}' at {self.where} (resumed from its spill)"
        out = RetainingStream(
            codec,
            where,
            self.retention,
            on_detach=lambda: self.sessions.detached(session),
            on_end=self._ended(session),
            spill=Spill.adopt(spilled),
            delivery=Delivery.POSITIONS if session.positions else Delivery.ROWS,
        )
        try:
            out.preload(spilled.entries, meta["acked"])
        except (ValueError, MalformedArrow) as exc:
            raise Rejected(F.REJECTED_RESUME, f"{self.where}: the spilled stream in {spilled.folder}: {exc}") from None
        session.stream, session.endpoint = out, meta["endpoint"]
        self.sessions.add(session)
        if callable(getattr(publisher, "on_commit", None)):
            out.committable = publisher
        out.subscribe_upstream(publisher)  # new rows continue after the kept ones
        return session

    def _expire_spilled(self, root: str) -> None:
        for folder in spill_expired(root, self.retention.window):
            log.warning(
                "rs_spark.net: %s: a stream spilled in %s was not resumed within its %g s window; its rows are lost",
                self.where,
                folder,
                self.retention.window,
            )
            self.sessions.expired += 1
            for name in os.listdir(folder):
                os.unlink(os.path.join(folder, name))
            os.rmdir(folder)

    # -- acknowledgements --------------------------------------------------------------------
    def on_metadata_push(self, conn: Connection, f: F.Frame) -> None:
        """The reader acknowledges a position (free what it covers, answer with the retention), or
        asks how far the stream's rows are ready (answered when known: :data:`.resume.READY_MIME`).
        The stream is the connection's own, or the one whose key the push names
        (:data:`.resume.STREAM_MIME`; the connection passed SETUP with the endpoint's token). An
        acknowledgement of another stream than a resumed connection's own, of a stream not kept, or
        beyond what the stream sent closes the connection with an error saying so."""
        if f.metadata is None:
            return
        try:
            raw = bytes(f.metadata)
            position, _ = parse_push(raw)
            question = ready_question_of(raw)
            if position is None and question is None:
                return
            session = self._acknowledged(conn, stream_of(raw))
            if session is None or session.stream is None:
                return
            if position is not None:
                session.stream.acknowledge(position)
        except MetadataError as exc:
            conn.protocol_error(f"acknowledgement: {exc}")
            return
        except ResumeError as exc:
            log.warning("rs_spark.net: %s: %s refused an acknowledgement: %s", conn.label, self.where, exc)
            conn.reject(F.CONNECTION_ERROR, f"acknowledgement refused: {exc}")
            return
        if position is not None:
            conn.reply(F.encode_metadata_push(retention_metadata(session.stream.retention_counts())))
        if question is not None:
            session.stream.answer_ready(question.wait, _answer_on(conn, question))

    def _acknowledged(self, conn: Connection, key: str | None) -> Session | None:
        """The stream an acknowledgement on ``conn`` naming ``key`` (or none) is for."""
        own = self.session_of(conn)
        if key is None:
            return own
        token = resume_token(self._token, key)
        if own is not None and not hmac.compare_digest(own.token, token):
            raise ResumeError(
                f"this connection carries another stream than {key}; acknowledge {key} on its own connection, or "
                "on a connection opened with SETUP and the endpoint's token"
            )
        session = own or self.sessions.find(token)
        if session is None or session.stream is None:
            raise ResumeError(
                f"{self.where} keeps no stream {key}: it ended or expired, or the key belongs to another endpoint"
            )
        return session

    # -- visibility and shutdown ---------------------------------------------------------------
    def stats(self) -> ResumeServiceStats:
        """The streams kept now and the totals (see :class:`ResumeServiceStats`)."""
        streams = tuple(
            StreamStats(**fields_of(s.stream.stats()), endpoint=s.endpoint, window=s.window)
            for s in self.sessions.all()
            if s.stream is not None
        )
        return ResumeServiceStats(
            streams=streams,
            retained_records=sum(x.held_records for x in streams),
            retained_bytes=sum(x.held_bytes for x in streams),
            expired_streams=self.sessions.expired,
            lost_records=self.sessions.lost_records,
            discarded_records=self.sessions.discarded_records,
        )

    def readerless(self) -> set[bytes]:
        """The streams no reader is on now: the server asks before it closes its connections."""
        return self.sessions.readerless()

    def stop(self, readerless: set[bytes] | None = None) -> None:
        """The server stops; ``readerless``: what :meth:`readerless` said before it closed its connections."""
        keep = bool(self.retention.enabled and self.retention.spill)
        self.sessions.stop(f"the server {self.where} was stopped", keep_spilled=keep, readerless=readerless)


__all__ = ["ResumeService", "ResumeServiceStats", "Session", "Sessions", "StreamStats", "fields_of"]
