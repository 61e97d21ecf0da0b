"""Resumable streams: the wire conventions (each side: :mod:`.resume_server`, :mod:`.resume_client`).

Modelled on RSocket resumption (Protocol.md, "Resuming Operation"), with three differences, each
because a reader here may be a new process after a crash:

* **Positions count one stream's rows** (elements; rows of Arrow payloads), not the bytes of the
  connection's frames: a restarted reader knows how many rows Spark committed, not how many frame
  bytes an earlier process received.
* **Retention follows acknowledgements, not keepalives**: rows are kept until the reader
  acknowledges a position (``METADATA_PUSH`` with a :data:`COMMIT_MIME` entry; the ``reactive``
  source does so when Spark commits), because a reader that received rows may still die before
  they are durable.
* **Demand restarts at resumption**: the resumed reader grants new credits (REQUEST_N); credits
  of the connection that dropped are forgotten.

The handshake: the first connection sends ``SETUP`` with the resume flag, a resume token and a
:data:`RESUME_MIME` entry in its composite metadata (so a peer speaking RSocket's byte-position
resumption is refused rather than misunderstood), then one ``REQUEST_STREAM`` on stream 1. A later
connection sends ``RESUME`` (token, position to continue from, 0) as its first frame; the server
answers ``RESUME_OK`` (the same position) and sends the stream's rows again from there, or
``ERROR[REJECTED_RESUME]`` saying why (expired, unknown, rows no longer kept). A resumable
connection carries one stream. Once the stream is open, and after each ``RESUME_OK``, the server
states its window in a ``METADATA_PUSH`` (:data:`WINDOW_MIME`), so a reader whose connection drops
knows how long resuming can still succeed.

The token is ``HMAC-SHA256(endpoint token, key)``: the key (public: it appears in Spark's offsets)
names the stream, the token proves the reader knows the endpoint's token, which RESUME frames
cannot carry (they have no metadata).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
import uuid
from dataclasses import dataclass
from typing import Any

from ..protocol.errors import ResumeRejected
from ..protocol.metadata import MetadataError, composite, parse_composite

RESUME_MIME = "message/x.rs-spark.resume.v1"
"""SETUP metadata entry asking for an rs_spark resumable stream: JSON ``{"window": seconds}``."""
COMMIT_MIME = "message/x.rs-spark.commit.v1"
"""METADATA_PUSH entry from the reader: the stream position (8 bytes, big endian) it acknowledges."""
STREAM_MIME = "message/x.rs-spark.stream.v1"
"""METADATA_PUSH entry beside :data:`COMMIT_MIME`: the key (32 ASCII hex digits) of the stream acknowledged.
With it, any connection that passed SETUP with the endpoint's token may acknowledge that stream (a
driver acknowledges as soon as Spark commits, while the stream's own connection is an executor's)."""
RETENTION_MIME = "message/x.rs-spark.retention.v1"
"""METADATA_PUSH entry from the server after an acknowledgement (and, delivering positions, when more
rows are available): the stream's retention and its ``endPosition``, JSON."""
WINDOW_MIME = "message/x.rs-spark.window.v1"
"""METADATA_PUSH entry from the server when a resumable stream opens and after each RESUME_OK: the
seconds it keeps the stream after a drop (its window: the reader's ask capped by ``Retention.window``),
in milliseconds (8 bytes, big endian). A reader tries to resume for that long (plus its keepalive
lifetime) and no longer. Added in 0.1.0; a reader that does not know it ignores it (pushes are
extensible), a server that does not send it leaves the reader with the window it asked for."""
READY_MIME = "message/x.rs-spark.ready.v1"
"""METADATA_PUSH entry, both ways. From the reader, JSON ``{"id": n, "wait": seconds}``: how far are
this stream's rows ready without waiting on its publisher? From the server, JSON ``{"id": n,
"position": p, "edge": bool}``: rows before ``p`` were delivered by the publisher (sent, or queued
for credit); ``edge``: it is at its live edge (it ended, or it owed rows it was asked for ``wait``
seconds, measured where it runs), so an AvailableNow run ends at ``p``. The server answers once the
verdict is known (at most ``wait`` seconds later; one question waits per stream, a newer one takes
its place). An empty entry beside :data:`WINDOW_MIME` says the server answers. Readers and servers
without it ignore it (pushes are extensible): such a reader never asks, and a reader of such a
server keeps its own rule (the ``reactive`` source logs a WARN)."""
MAX_READY_WAIT = 60.0
"""The longest ``wait`` a server honours (a longer one is cut to it)."""
FETCH_MIME = "message/x.rs-spark.fetch.v1"
"""REQUEST_STREAM metadata entry: fetch the kept rows ``[from, to)`` of a stream (JSON)."""
UNKNOWN_STREAM = "does not know this stream"
"""In a REJECTED_RESUME: the server never had the stream (or restarted without spill). A reader that
has not received any row yet (position 0) then opens it, with the same key."""
STREAM_ID = 1
"""The one stream a resumable connection carries (the first a client opens)."""
_U64 = struct.Struct(">Q")
_MAX_STATS_BYTES = 4096


def new_key() -> str:
    """A new stream key: 32 hex digits, unguessable, safe to show (it is not the credential)."""
    return uuid.uuid4().hex


def resume_token(endpoint_token: str | None, key: str) -> bytes:
    """The credential that resumes stream ``key`` on an endpoint guarded by ``endpoint_token``."""
    secret = (endpoint_token or "").encode("utf-8")
    return hmac.new(secret, b"rs_spark resume v1|" + key.encode("ascii"), hashlib.sha256).digest()


def check_key(key: str) -> str:
    """``key`` if it is a stream key (32 hex digits), else ValueError saying what it is."""
    if not isinstance(key, str) or len(key) != 32 or any(c not in "0123456789abcdef" for c in key):
        raise ValueError(f"a resumable stream key is 32 lower-case hex digits, got {key!r}")
    return key


# -- metadata entries -------------------------------------------------------------------------
@dataclass(frozen=True)
class ResumeRequest:
    """What a SETUP's :data:`RESUME_MIME` entry asks for: the window (None: the server's), and
    whether rows are sent (``rows``) or only made available for fetching by position
    (``positions``: the reader plans ranges and others fetch them, :data:`FETCH_MIME`)."""

    window: float | None = None
    deliver: str = "rows"

    def entry(self) -> tuple[str, bytes]:
        body: dict[str, Any] = {} if self.window is None else {"window": float(self.window)}
        if self.deliver != "rows":
            body["deliver"] = self.deliver
        return RESUME_MIME, json.dumps(body).encode()

    @classmethod
    def of(cls, entries: list[tuple[str, bytes]]) -> ResumeRequest | None:
        """From SETUP's composite entries: None when the SETUP does not ask for resumption."""
        for mime, payload in entries:
            if mime == RESUME_MIME:
                return cls._parse(payload)
        return None

    @classmethod
    def _parse(cls, payload: bytes) -> ResumeRequest:
        try:
            body = json.loads(payload[:_MAX_STATS_BYTES]) if payload else {}
        except ValueError as exc:
            raise MetadataError(f"{RESUME_MIME} entry is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise MetadataError(f"{RESUME_MIME} entry must be a JSON object")
        w, deliver = body.get("window"), body.get("deliver", "rows")
        if w is not None and (isinstance(w, bool) or not isinstance(w, (int, float)) or not w > 0):
            raise MetadataError(f"{RESUME_MIME} entry asks for window {w!r}; it must be a number of seconds > 0")
        if deliver not in ("rows", "positions"):
            raise MetadataError(f"{RESUME_MIME} entry asks to deliver {deliver!r}; rows or positions")
        return cls(None if w is None else float(w), deliver)


def fetch_entry(key: str, lo: int, hi: int) -> tuple[str, bytes]:
    """A REQUEST_STREAM metadata entry asking for the kept rows ``[lo, hi)`` of stream ``key``."""
    return FETCH_MIME, json.dumps({"stream": key, "from": lo, "to": hi}).encode()


def fetch_of(entries: list[tuple[str, bytes]]) -> tuple[str, int, int] | None:
    """``(key, lo, hi)`` of a fetch request's entry, or None when it asks for no range."""
    for mime, payload in entries:
        if mime != FETCH_MIME:
            continue
        try:
            body = json.loads(payload[:_MAX_STATS_BYTES])
            key, lo, hi = body["stream"], body["from"], body["to"]
        except (ValueError, KeyError, TypeError) as exc:
            raise MetadataError(f"{FETCH_MIME} entry is not {{stream, from, to}}: {exc}") from exc
        if not (type(lo) is int and type(hi) is int and 0 <= lo <= hi < 2**63):
            raise MetadataError(f"{FETCH_MIME} entry asks for rows [{lo!r}, {hi!r}): need 0 <= from <= to")
        return check_key(str(key)), lo, hi
    return None


def commit_metadata(position: int, key: str | None = None) -> bytes:
    """METADATA_PUSH metadata acknowledging every row before ``position`` (of stream ``key``: from
    another connection than the stream's own; see :data:`STREAM_MIME`)."""
    entries = [(COMMIT_MIME, _U64.pack(position))]
    if key is not None:
        entries.append((STREAM_MIME, check_key(key).encode("ascii")))
    return composite(entries)


def stream_of(metadata: bytes) -> str | None:
    """The stream key a METADATA_PUSH names (:data:`STREAM_MIME`), None when it names none."""
    for mime, payload in parse_composite(metadata):
        if mime == STREAM_MIME:
            try:
                return check_key(payload.decode("ascii"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise MetadataError(f"{STREAM_MIME} entry: {exc}") from None
    return None


def window_metadata(seconds: float) -> bytes:
    """METADATA_PUSH metadata stating the window (seconds) the server keeps this stream for after a
    drop, and that it answers :data:`READY_MIME` questions."""
    return composite([(WINDOW_MIME, _U64.pack(max(0, min(2**63 - 1, int(seconds * 1000))))), (READY_MIME, b"")])


# -- how far rows are ready (AvailableNow's target) ---------------------------------------------
@dataclass(frozen=True)
class ReadyQuestion:
    """A reader's :data:`READY_MIME` question: its number (echoed) and how long the server may watch."""

    id: int
    wait: float


@dataclass(frozen=True)
class ReadyAnswer:
    """A server's :data:`READY_MIME` answer (``id``: the question's)."""

    id: int
    position: int
    edge: bool


def ready_question(q: ReadyQuestion, key: str | None = None) -> bytes:
    """METADATA_PUSH metadata asking how far the stream's rows are ready (of stream ``key``: see
    :data:`STREAM_MIME`)."""
    entries = [(READY_MIME, json.dumps({"id": q.id, "wait": q.wait}).encode())]
    if key is not None:
        entries.append((STREAM_MIME, check_key(key).encode("ascii")))
    return composite(entries)


def ready_question_of(metadata: bytes) -> ReadyQuestion | None:
    """The question a reader's METADATA_PUSH asks (None: it asks none); MetadataError for a malformed
    one. ``wait`` is cut to :data:`MAX_READY_WAIT`."""
    body = _ready_body(metadata)
    if body is None:
        return None
    n, wait = body.get("id"), body.get("wait")
    if type(n) is not int or not 0 <= n < 2**63:
        raise MetadataError(f"{READY_MIME} question has id {n!r}; it must be an integer >= 0")
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not 0 <= wait < float("inf"):
        raise MetadataError(f"{READY_MIME} question has wait {wait!r}; it must be a number of seconds >= 0")
    return ReadyQuestion(n, float(min(wait, MAX_READY_WAIT)))  # cut first: an int past float's range is just huge


def ready_answer(a: ReadyAnswer) -> bytes:
    """METADATA_PUSH metadata answering a :data:`READY_MIME` question."""
    body = {"id": a.id, "position": a.position, "edge": a.edge}
    return composite([(READY_MIME, json.dumps(body, separators=(",", ":")).encode())])


def ready_of(metadata: bytes) -> tuple[bool, ReadyAnswer | None]:
    """From a server's METADATA_PUSH: (it says it answers :data:`READY_MIME` questions, its answer if
    it carries one); MetadataError for a malformed answer."""
    body = _ready_body(metadata)
    if body is None:
        return any(mime == READY_MIME for mime, _ in parse_composite(metadata)), None
    n, position, edge = body.get("id"), body.get("position"), body.get("edge")
    if not (type(n) is int and type(position) is int and 0 <= n < 2**63 and 0 <= position < 2**63):
        raise MetadataError(f"{READY_MIME} answer needs an id and a position (integers >= 0), got {body!r:.200}")
    if type(edge) is not bool:
        raise MetadataError(f"{READY_MIME} answer needs edge true or false, got {edge!r:.50}")
    return True, ReadyAnswer(n, position, edge)


def _ready_body(metadata: bytes) -> dict[str, Any] | None:
    """The JSON object of a non-empty :data:`READY_MIME` entry (None: no such entry, or an empty one)."""
    for mime, payload in parse_composite(metadata):
        if mime != READY_MIME or not payload:
            continue
        body = _json_entry(READY_MIME, payload)
        if not isinstance(body, dict):
            raise MetadataError(f"{READY_MIME} entry must be a JSON object")
        return body
    return None


def window_of(metadata: bytes) -> float | None:
    """The window (seconds) a METADATA_PUSH states (:data:`WINDOW_MIME`), None when it states none;
    MetadataError for a malformed entry."""
    for mime, payload in parse_composite(metadata):
        if mime == WINDOW_MIME:
            return _u63(mime, payload, "window") / 1000.0
    return None


def _u63(mime: str, payload: bytes, what: str) -> int:
    """The 8-byte unsigned number of a metadata entry, its reserved top bit clear; MetadataError otherwise."""
    if len(payload) != 8:
        raise MetadataError(f"{mime} entry is {len(payload)} bytes; a {what} is 8")
    value: int = _U64.unpack(payload)[0]
    if value >= 2**63:
        raise MetadataError(f"{mime} {what} has its reserved top bit set")
    return value


def retention_metadata(stats: dict[str, Any]) -> bytes:
    return composite([(RETENTION_MIME, json.dumps(stats, separators=(",", ":")).encode())])


def parse_push(metadata: bytes) -> tuple[int | None, dict[str, int] | None]:
    """(acknowledged position, retention stats) found in METADATA_PUSH metadata; unknown entries
    are ignored (metadata pushes are extensible). Raises MetadataError for malformed ones."""
    position: int | None = None
    stats: dict[str, int] | None = None
    for mime, payload in parse_composite(metadata):
        if mime == COMMIT_MIME:
            position = _u63(mime, payload, "position")
        elif mime == RETENTION_MIME:
            stats = _parse_stats(payload)
    return position, stats


def _json_entry(mime: str, payload: bytes) -> Any:
    """A metadata entry's JSON, at most ``_MAX_STATS_BYTES``; MetadataError naming ``mime`` otherwise."""
    if len(payload) > _MAX_STATS_BYTES:
        raise MetadataError(f"{mime} entry of {len(payload)} bytes is larger than {_MAX_STATS_BYTES}")
    try:
        return json.loads(payload)
    except ValueError as exc:
        raise MetadataError(f"{mime} entry is not JSON: {exc}") from exc


def _parse_stats(payload: bytes) -> dict[str, int]:
    body = _json_entry(RETENTION_MIME, payload)
    if not isinstance(body, dict) or not all(isinstance(k, str) and type(v) is int and v >= 0 for k, v in body.items()):
        raise MetadataError(f"{RETENTION_MIME} entry must map names to counts >= 0, got {body!r:.200}")
    return body


__all__ = [
    "RESUME_MIME",
    "COMMIT_MIME",
    "RETENTION_MIME",
    "STREAM_MIME",
    "WINDOW_MIME",
    "READY_MIME",
    "MAX_READY_WAIT",
    "ReadyQuestion",
    "ReadyAnswer",
    "ready_question",
    "ready_question_of",
    "ready_answer",
    "ready_of",
    "STREAM_ID",
    "UNKNOWN_STREAM",
    "ResumeRejected",
    "new_key",
    "resume_token",
    "check_key",
    "ResumeRequest",
    "fetch_entry",
    "fetch_of",
    "commit_metadata",
    "stream_of",
    "retention_metadata",
    "window_metadata",
    "window_of",
    "parse_push",
]
