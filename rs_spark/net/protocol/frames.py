"""RSocket 1.0 frames: encode to buffers, decode from one length-stripped frame.

Layouts follow the RSocket Protocol.md (big endian): a 31-bit stream id, then 6 bits of frame
type and 10 bits of flags. Encoders return a list of buffers (header first) so large data
(Arrow IPC bodies) is written with ``sendmsg`` without being copied into one bytes object.
The 3-byte length prefix that TCP needs is added here too (``prefixed=True``).

Why this module is long (about 480 lines): it is the spec's frame table, the constants, the
header layout and one encoder plus the decoder's case for each frame type; split by frame type,
every part would repeat the header layout it shares.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Buffer = bytes | bytearray | memoryview

# Frame types (Protocol.md "Frame Types").
SETUP = 0x01
LEASE = 0x02
KEEPALIVE = 0x03
REQUEST_RESPONSE = 0x04
REQUEST_FNF = 0x05
REQUEST_STREAM = 0x06
REQUEST_CHANNEL = 0x07
REQUEST_N = 0x08
CANCEL = 0x09
PAYLOAD = 0x0A
ERROR = 0x0B
METADATA_PUSH = 0x0C
RESUME = 0x0D
RESUME_OK = 0x0E
EXT = 0x3F

TYPE_NAMES = {
    SETUP: "SETUP",
    LEASE: "LEASE",
    KEEPALIVE: "KEEPALIVE",
    REQUEST_RESPONSE: "REQUEST_RESPONSE",
    REQUEST_FNF: "REQUEST_FNF",
    REQUEST_STREAM: "REQUEST_STREAM",
    REQUEST_CHANNEL: "REQUEST_CHANNEL",
    REQUEST_N: "REQUEST_N",
    CANCEL: "CANCEL",
    PAYLOAD: "PAYLOAD",
    ERROR: "ERROR",
    METADATA_PUSH: "METADATA_PUSH",
    RESUME: "RESUME",
    RESUME_OK: "RESUME_OK",
    EXT: "EXT",
}

# Flags (10 bits).
FLAG_IGNORE = 0x200
FLAG_METADATA = 0x100
FLAG_FOLLOWS = 0x80  # PAYLOAD / REQUEST_*: more fragments follow
FLAG_RESUME = 0x80  # SETUP
FLAG_LEASE = 0x40  # SETUP
FLAG_RESPOND = 0x80  # KEEPALIVE
FLAG_COMPLETE = 0x40  # PAYLOAD / REQUEST_CHANNEL
FLAG_NEXT = 0x20  # PAYLOAD

# Error codes (Protocol.md "Error Codes").
INVALID_SETUP = 0x001
UNSUPPORTED_SETUP = 0x002
REJECTED_SETUP = 0x003
REJECTED_RESUME = 0x004
CONNECTION_ERROR = 0x101
CONNECTION_CLOSE = 0x102
APPLICATION_ERROR = 0x201
REJECTED = 0x202
CANCELED = 0x203
INVALID = 0x204

ERROR_NAMES = {
    INVALID_SETUP: "INVALID_SETUP",
    UNSUPPORTED_SETUP: "UNSUPPORTED_SETUP",
    REJECTED_SETUP: "REJECTED_SETUP",
    REJECTED_RESUME: "REJECTED_RESUME",
    CONNECTION_ERROR: "CONNECTION_ERROR",
    CONNECTION_CLOSE: "CONNECTION_CLOSE",
    APPLICATION_ERROR: "APPLICATION_ERROR",
    REJECTED: "REJECTED",
    CANCELED: "CANCELED",
    INVALID: "INVALID",
}

MAX_REQUEST_N = 2**31 - 1
"""REQUEST_N carries 31 bits; larger demand is sent in pieces (credits are cumulative)."""
MAX_FRAME_LENGTH = 2**24 - 1
"""The 24-bit length prefix of the TCP framing bounds every frame."""
MAX_METADATA_LENGTH = 2**24 - 1

_HDR = struct.Struct(">IH")
_U32 = struct.Struct(">I")
_KEEPALIVE = struct.Struct(">IHQ")
_REQN = struct.Struct(">IHI")


_STREAM_TYPES = frozenset((REQUEST_RESPONSE, REQUEST_FNF, REQUEST_STREAM, REQUEST_CHANNEL, REQUEST_N, CANCEL, PAYLOAD))
_CONNECTION_TYPES = frozenset((SETUP, LEASE, KEEPALIVE, METADATA_PUSH, RESUME, RESUME_OK))


class FrameError(ValueError):
    """A frame that does not follow the RSocket layout; the connection must be closed."""


@dataclass
class Frame:
    """One decoded frame. ``data``/``metadata`` are views into the received buffer."""

    stream_id: int
    type: int
    flags: int
    metadata: Buffer | None = None
    data: Buffer = b""
    request_n: int = 0  # REQUEST_STREAM / REQUEST_CHANNEL initial N, REQUEST_N
    error_code: int = 0  # ERROR
    # SETUP only
    version: tuple = (0, 0)
    keepalive_ms: int = 0
    lifetime_ms: int = 0
    metadata_mime: str = ""
    data_mime: str = ""
    # SETUP with the resume flag, RESUME
    resume_token: bytes = b""
    # RESUME: last received server position, first available client position; RESUME_OK: last received
    # client position. rs_spark counts a stream's rows here, not RSocket's frame bytes (see net/resume.py).
    position: int = 0
    client_position: int = 0

    @property
    def type_name(self) -> str:
        return TYPE_NAMES.get(self.type, f"type 0x{self.type:02x}")

    def has(self, flag: int) -> bool:
        return bool(self.flags & flag)


def _prefix(parts: list[Buffer], prefixed: bool) -> list[Buffer]:
    if not prefixed:
        return parts
    n = 0
    for p in parts:
        n += len(p)
    if n > MAX_FRAME_LENGTH:
        raise FrameError(f"frame of {n} bytes exceeds the 24-bit frame length limit ({MAX_FRAME_LENGTH})")
    parts[0] = n.to_bytes(3, "big") + parts[0]
    return parts


def _meta_header(metadata: Buffer | None) -> bytes:
    if metadata is None:
        return b""
    if len(metadata) > MAX_METADATA_LENGTH:
        raise FrameError(f"metadata of {len(metadata)} bytes exceeds the 24-bit limit")
    return len(metadata).to_bytes(3, "big")


def _with_payload(head: bytes, metadata: Buffer | None, data: Sequence[Buffer], prefixed: bool) -> list[Buffer]:
    parts: list[Buffer] = [head + _meta_header(metadata)]
    if metadata:
        parts.append(metadata)
    parts.extend(d for d in data if len(d))
    return _prefix(parts, prefixed)


def _type_flags(ftype: int, flags: int, metadata: Buffer | None) -> int:
    if metadata is not None:
        flags |= FLAG_METADATA
    return (ftype << 10) | flags


def encode_setup(
    keepalive_ms: int,
    lifetime_ms: int,
    metadata_mime: str,
    data_mime: str,
    metadata: Buffer | None = None,
    data: Buffer = b"",
    prefixed: bool = True,
    resume_token: bytes | None = None,
) -> list[Buffer]:
    """SETUP; with ``resume_token`` the resume flag is set and the token sent (at most 65535 bytes)."""
    mm = metadata_mime.encode("ascii")
    dm = data_mime.encode("ascii")
    resume = b""
    if resume_token is not None:
        if not 1 <= len(resume_token) <= 0xFFFF:
            raise FrameError(f"SETUP: a resume token is 1..65535 bytes, got {len(resume_token)}")
        resume = len(resume_token).to_bytes(2, "big") + resume_token
    head = (
        _HDR.pack(0, _type_flags(SETUP, FLAG_RESUME if resume else 0, metadata))
        + struct.pack(">HHII", 1, 0, keepalive_ms, lifetime_ms)
        + resume
        + bytes([len(mm)])
        + mm
        + bytes([len(dm)])
        + dm
    )
    return _with_payload(head, metadata, [data], prefixed)


def encode_keepalive(respond: bool, position: int = 0, data: Buffer = b"", prefixed: bool = True) -> list[Buffer]:
    head = _KEEPALIVE.pack(0, (KEEPALIVE << 10) | (FLAG_RESPOND if respond else 0), position)
    return _prefix([head, data] if data else [head], prefixed)


def encode_request(
    ftype: int,
    stream_id: int,
    n: int,
    metadata: Buffer | None = None,
    data: Sequence[Buffer] = (),
    complete: bool = False,
    prefixed: bool = True,
) -> list[Buffer]:
    """REQUEST_STREAM or REQUEST_CHANNEL with initial request ``n`` (1..2^31-1)."""
    _check_n(n, TYPE_NAMES.get(ftype, "request"))
    flags = FLAG_COMPLETE if complete else 0
    head = _HDR.pack(stream_id, _type_flags(ftype, flags, metadata)) + _U32.pack(n)
    return _with_payload(head, metadata, data, prefixed)


def _check_n(n: int, what: str) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_REQUEST_N:
        raise FrameError(f"{what}: request n={n!r} must be an int in 1..{MAX_REQUEST_N}; split larger demand")


def encode_request_n(stream_id: int, n: int, prefixed: bool = True) -> list[Buffer]:
    _check_n(n, "REQUEST_N")
    return _prefix([_REQN.pack(stream_id, REQUEST_N << 10, n)], prefixed)


def encode_cancel(stream_id: int, prefixed: bool = True) -> list[Buffer]:
    return _prefix([_HDR.pack(stream_id, CANCEL << 10)], prefixed)


def encode_payload(
    stream_id: int,
    data: Sequence[Buffer] = (),
    metadata: Buffer | None = None,
    next: bool = True,
    complete: bool = False,
    prefixed: bool = True,
) -> list[Buffer]:
    flags = (FLAG_NEXT if next else 0) | (FLAG_COMPLETE if complete else 0)
    head = _HDR.pack(stream_id, _type_flags(PAYLOAD, flags, metadata))
    return _with_payload(head, metadata, data, prefixed)


def encode_error(stream_id: int, code: int, message: str, prefixed: bool = True) -> list[Buffer]:
    body = message.encode("utf-8", "replace")[:65536]  # error text is for people: keep it bounded
    return _prefix([_HDR.pack(stream_id, ERROR << 10) + _U32.pack(code), body], prefixed)


def encode_metadata_push(metadata: Buffer, prefixed: bool = True) -> list[Buffer]:
    return _prefix([_HDR.pack(0, (METADATA_PUSH << 10) | FLAG_METADATA), metadata], prefixed)


_POSITIONS = struct.Struct(">QQ")


def encode_resume(token: bytes, position: int, client_position: int = 0, prefixed: bool = True) -> list[Buffer]:
    """RESUME: version 1.0, the resume token, the last received server position and the first
    available client position (both 63-bit)."""
    if not 1 <= len(token) <= 0xFFFF:
        raise FrameError(f"RESUME: a resume token is 1..65535 bytes, got {len(token)}")
    for v in (position, client_position):
        if not 0 <= v < 2**63:
            raise FrameError(f"RESUME: a position is 0..2^63-1, got {v}")
    head = _HDR.pack(0, RESUME << 10) + struct.pack(">HHH", 1, 0, len(token))
    return _prefix([head, token, _POSITIONS.pack(position, client_position)], prefixed)


def encode_resume_ok(client_position: int, prefixed: bool = True) -> list[Buffer]:
    """RESUME_OK: the last received client position (63-bit)."""
    if not 0 <= client_position < 2**63:
        raise FrameError(f"RESUME_OK: a position is 0..2^63-1, got {client_position}")
    return _prefix([_HDR.pack(0, RESUME_OK << 10) + struct.pack(">Q", client_position)], prefixed)


def _split_payload(buf: Buffer, pos: int, flags: int, f: Frame, what: str = "") -> None:
    end = len(buf)
    if flags & FLAG_METADATA:
        what = what or f.type_name
        if end - pos < 3:
            raise FrameError(f"{what}: metadata flag set but no room for the 3-byte metadata length")
        mlen = int.from_bytes(buf[pos : pos + 3], "big")
        pos += 3
        if pos + mlen > end:
            raise FrameError(f"{what}: metadata length {mlen} runs past the end of the frame ({end - pos} bytes left)")
        f.metadata = buf[pos : pos + mlen]
        pos += mlen
    f.data = buf[pos:end]


def decode(buf: Buffer) -> Frame:
    """Decode one frame (without its length prefix). Raises :class:`FrameError` if malformed."""
    n = len(buf)
    if n < 6:
        raise FrameError(f"frame of {n} bytes is shorter than the 6-byte frame header")
    sid, tf = _HDR.unpack_from(buf, 0)
    if sid & 0x80000000:
        raise FrameError("stream id has its reserved top bit set")
    ftype, flags = tf >> 10, tf & 0x3FF
    f = Frame(sid, ftype, flags)
    if ftype == PAYLOAD and sid:  # the hot path: checked first, no name looked up
        _split_payload(buf, 6, flags, f)
        return f
    _check_stream_id(f)
    body = _BODIES.get(ftype)
    if body is not None:
        body(buf, f)
    elif not flags & FLAG_IGNORE:
        raise FrameError(f"unknown frame type 0x{ftype:02x} without the IGNORE flag")
    return f


def _check_stream_id(f: Frame) -> None:
    """Stream frames need a stream; connection frames must use stream 0 (Protocol.md "Stream Identifiers")."""
    if f.type in _STREAM_TYPES and f.stream_id == 0:
        raise FrameError(
            f"{f.type_name} frame on stream 0: requests, REQUEST_N, CANCEL and PAYLOAD need a stream id > 0"
        )
    if f.type in _CONNECTION_TYPES and f.stream_id != 0:
        raise FrameError(f"{f.type_name} frame on stream {f.stream_id}: this frame type is only valid on stream 0")


def _decode_payload(buf: Buffer, f: Frame) -> None:
    """PAYLOAD, REQUEST_RESPONSE, REQUEST_FNF: metadata and data right after the header."""
    _split_payload(buf, 6, f.flags, f, f.type_name)


def _decode_request_n(buf: Buffer, f: Frame) -> None:
    n = len(buf)
    if n < 10:
        raise FrameError("REQUEST_N frame is shorter than 10 bytes")
    if n != 10:
        raise FrameError(f"REQUEST_N frame on stream {f.stream_id} is {n} bytes long; it must be exactly 10")
    f.request_n = _U32.unpack_from(buf, 6)[0] & 0x7FFFFFFF
    if f.request_n == 0:
        raise FrameError(f"REQUEST_N frame on stream {f.stream_id} asks for 0 elements; n must be > 0 (rule 3.9)")


def _decode_request(buf: Buffer, f: Frame) -> None:
    """REQUEST_STREAM, REQUEST_CHANNEL: the initial request n, then metadata and data."""
    what = f.type_name
    if len(buf) < 10:
        raise FrameError(f"{what} frame is shorter than 10 bytes")
    f.request_n = _U32.unpack_from(buf, 6)[0] & 0x7FFFFFFF
    if f.request_n == 0:
        raise FrameError(f"{what} frame on stream {f.stream_id} has an initial request of 0; it must be > 0 (rule 3.9)")
    _split_payload(buf, 10, f.flags, f, what)


def _decode_cancel(buf: Buffer, f: Frame) -> None:
    if len(buf) != 6:
        raise FrameError(f"CANCEL frame on stream {f.stream_id} is {len(buf)} bytes long; it must be exactly 6")


def _decode_resume(buf: Buffer, f: Frame) -> None:
    n = len(buf)
    if n < 12:
        raise FrameError("RESUME frame is shorter than its version and token length")
    major, minor, ln = struct.unpack_from(">HHH", buf, 6)
    f.version = (major, minor)
    if n != 12 + ln + 16:
        raise FrameError(f"RESUME frame is {n} bytes; a {ln}-byte token and two positions make {12 + ln + 16}")
    if ln == 0:
        raise FrameError("RESUME frame has an empty resume token")
    f.resume_token = bytes(buf[12 : 12 + ln])
    f.position, f.client_position = _POSITIONS.unpack_from(buf, 12 + ln)
    if f.position >= 2**63 or f.client_position >= 2**63:
        raise FrameError("RESUME frame has a position with its reserved top bit set")


def _decode_resume_ok(buf: Buffer, f: Frame) -> None:
    if len(buf) != 14:
        raise FrameError(f"RESUME_OK frame is {len(buf)} bytes long; it must be exactly 14")
    f.client_position = struct.unpack_from(">Q", buf, 6)[0]
    if f.client_position >= 2**63:
        raise FrameError("RESUME_OK frame has a position with its reserved top bit set")


def _decode_nothing(buf: Buffer, f: Frame) -> None:
    """LEASE, EXT: not used here; their bodies are not read."""


def _decode_keepalive(buf: Buffer, f: Frame) -> None:
    if len(buf) < 14:
        raise FrameError("KEEPALIVE frame is shorter than 14 bytes")
    f.data = buf[14:]


def _decode_error(buf: Buffer, f: Frame) -> None:
    if len(buf) < 10:
        raise FrameError("ERROR frame is shorter than 10 bytes")
    f.error_code = _U32.unpack_from(buf, 6)[0]
    f.data = buf[10:]
    try:
        bytes(f.data).decode("utf-8")
    except UnicodeDecodeError as exc:  # the message says where; the decoder's traceback adds nothing
        raise FrameError(
            f"ERROR frame on stream {f.stream_id}: the message is not valid UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None


def _decode_metadata_push(buf: Buffer, f: Frame) -> None:
    f.metadata = buf[6:]


def _decode_setup(buf: Buffer, f: Frame) -> None:
    n = len(buf)
    if n < 18:
        raise FrameError("SETUP frame is shorter than its fixed 18-byte part")
    major, minor, ka, life = struct.unpack_from(">HHII", buf, 6)
    f.version = (major, minor)
    f.keepalive_ms, f.lifetime_ms = ka & 0x7FFFFFFF, life & 0x7FFFFFFF
    pos = 18
    if f.flags & FLAG_RESUME:
        if pos + 2 > n:
            raise FrameError("SETUP: resume flag set but no resume token length")
        ln = int.from_bytes(buf[pos : pos + 2], "big")
        if pos + 2 + ln > n:
            raise FrameError("SETUP: the resume token runs past the end of the frame")
        f.resume_token = bytes(buf[pos + 2 : pos + 2 + ln])
        pos += 2 + ln
    for attr in ("metadata_mime", "data_mime"):
        if pos >= n:
            raise FrameError("SETUP: truncated before a MIME type")
        ln = buf[pos]
        pos += 1
        if pos + ln > n:
            raise FrameError("SETUP: MIME type runs past the end of the frame")
        try:
            setattr(f, attr, bytes(buf[pos : pos + ln]).decode("ascii"))
        except UnicodeDecodeError:
            raise FrameError("SETUP: MIME type is not US-ASCII") from None
        pos += ln
    _split_payload(buf, pos, f.flags, f, "SETUP")


_BODIES: dict[int, Callable[[Buffer, Frame], None]] = {
    PAYLOAD: _decode_payload,
    REQUEST_RESPONSE: _decode_payload,
    REQUEST_FNF: _decode_payload,
    REQUEST_N: _decode_request_n,
    REQUEST_STREAM: _decode_request,
    REQUEST_CHANNEL: _decode_request,
    CANCEL: _decode_cancel,
    LEASE: _decode_nothing,
    RESUME: _decode_resume,
    RESUME_OK: _decode_resume_ok,
    EXT: _decode_nothing,
    KEEPALIVE: _decode_keepalive,
    ERROR: _decode_error,
    METADATA_PUSH: _decode_metadata_push,
    SETUP: _decode_setup,
}
"""How each known frame type's body is read (after the 6-byte header)."""


__all__ = [name for name in dir() if name.isupper()] + [
    "Frame",
    "FrameError",
    "decode",
    "encode_setup",
    "encode_keepalive",
    "encode_request",
    "encode_request_n",
    "encode_cancel",
    "encode_payload",
    "encode_error",
    "encode_metadata_push",
    "encode_resume",
    "encode_resume_ok",
]
