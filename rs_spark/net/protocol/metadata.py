"""RSocket metadata extensions: composite metadata, routing tags, authentication.

Layouts follow rsocket/rsocket ``Extensions/``: a composite entry is a MIME id (high bit set,
well-known) or a length-prefixed MIME string, a 24-bit length, then the entry; routing is a
list of 8-bit-length-prefixed UTF-8 tags; authentication is an auth type id (``simple`` 0x00,
``bearer`` 0x01) or string, then the credentials.
"""

from __future__ import annotations

COMPOSITE = "message/x.rsocket.composite-metadata.v0"
ROUTING = "message/x.rsocket.routing.v0"
AUTHENTICATION = "message/x.rsocket.authentication.v0"

WELL_KNOWN = {
    "application/json": 0x05,
    "application/octet-stream": 0x06,
    "text/plain": 0x21,
    "message/x.rsocket.mime-type.v0": 0x7A,
    "message/x.rsocket.accept-mime-types.v0": 0x7B,
    AUTHENTICATION: 0x7C,
    "message/x.rsocket.tracing-zipkin.v0": 0x7D,
    ROUTING: 0x7E,
    COMPOSITE: 0x7F,
}
_BY_ID = {v: k for k, v in WELL_KNOWN.items()}

AUTH_SIMPLE = 0x00
AUTH_BEARER = 0x01


class MetadataError(ValueError):
    """Metadata that does not follow its extension's layout."""


def composite(entries: list[tuple[str, bytes]]) -> bytes:
    """Encode ``(mime, payload)`` entries as composite metadata."""
    out = bytearray()
    for mime, payload in entries:
        wk = WELL_KNOWN.get(mime)
        if wk is not None:
            out.append(0x80 | wk)
        else:
            m = mime.encode("ascii")
            if not 1 <= len(m) <= 128:
                raise MetadataError(f"MIME type {mime!r} must be 1..128 ASCII bytes")
            out.append(len(m) - 1)  # the 7-bit field stores length - 1
            out += m
        out += len(payload).to_bytes(3, "big")
        out += payload
    return bytes(out)


def parse_composite(buf: bytes) -> list[tuple[str, bytes]]:
    """Decode composite metadata into ``(mime, payload)`` entries."""
    out: list[tuple[str, bytes]] = []
    pos, n = 0, len(buf)
    while pos < n:
        b = buf[pos]
        pos += 1
        if b & 0x80:
            mime = _BY_ID.get(b & 0x7F, f"well-known/0x{b & 0x7F:02x}")
        else:
            ln = (b & 0x7F) + 1
            if pos + ln > n:
                raise MetadataError("composite metadata: MIME type runs past the end")
            mime = bytes(buf[pos : pos + ln]).decode("ascii", "replace")
            pos += ln
        if pos + 3 > n:
            raise MetadataError("composite metadata: entry length missing")
        ln = int.from_bytes(buf[pos : pos + 3], "big")
        pos += 3
        if pos + ln > n:
            raise MetadataError(f"composite metadata: entry of {ln} bytes runs past the end")
        out.append((mime, bytes(buf[pos : pos + ln])))
        pos += ln
    return out


def routing(*tags: str) -> bytes:
    out = bytearray()
    for t in tags:
        b = t.encode("utf-8")
        if not 1 <= len(b) <= 255:
            raise MetadataError(f"route tag {t!r} must be 1..255 UTF-8 bytes")
        out.append(len(b))
        out += b
    return bytes(out)


def parse_routing(buf: bytes) -> list[str]:
    tags: list[str] = []
    pos, n = 0, len(buf)
    while pos < n:
        ln = buf[pos]
        pos += 1
        if pos + ln > n:
            raise MetadataError("routing metadata: tag runs past the end")
        tags.append(bytes(buf[pos : pos + ln]).decode("utf-8", "replace"))
        pos += ln
    return tags


def bearer(token: str) -> bytes:
    return bytes([0x80 | AUTH_BEARER]) + token.encode("utf-8")


def parse_auth(buf: bytes) -> tuple[str, str | None, bytes]:
    """Return ``(auth type, username or None, secret)`` from an authentication entry."""
    if not buf:
        raise MetadataError("authentication metadata is empty")
    b = buf[0]
    pos = 1
    if b & 0x80:
        kind = {AUTH_SIMPLE: "simple", AUTH_BEARER: "bearer"}.get(b & 0x7F, f"0x{b & 0x7F:02x}")
    else:
        ln = b & 0x7F
        kind = bytes(buf[1 : 1 + ln]).decode("ascii", "replace")
        pos += ln
    rest = bytes(buf[pos:])
    if kind == "simple":
        if len(rest) < 2:
            raise MetadataError("simple authentication: username length missing")
        ul = int.from_bytes(rest[:2], "big")
        return kind, rest[2 : 2 + ul].decode("utf-8", "replace"), rest[2 + ul :]
    return kind, None, rest


def request_metadata(
    metadata_mime: str, name: str | None, extra: list[tuple[str, bytes]] | None = None
) -> bytes | None:
    """The metadata a request carries to name its endpoint, in the connection's metadata MIME, with
    ``extra`` composite entries (composite metadata only)."""
    if metadata_mime == COMPOSITE:
        entries = ([(ROUTING, routing(name))] if name is not None else []) + list(extra or [])
        return composite(entries) if entries else None
    if extra:
        raise MetadataError(f"extra request metadata needs {COMPOSITE}, not {metadata_mime}")
    return None if name is None else routing(name)


def route_of(metadata_mime: str, metadata: bytes | None) -> str | None:
    """The first routing tag of a request, or None when it names no route."""
    if not metadata:
        return None
    if metadata_mime == COMPOSITE:
        for mime, payload in parse_composite(metadata):
            if mime == ROUTING:
                tags = parse_routing(payload)
                return tags[0] if tags else None
        return None
    if metadata_mime == ROUTING:
        tags = parse_routing(metadata)
        return tags[0] if tags else None
    return None


def token_of(metadata_mime: str, metadata: bytes | None) -> bytes | None:
    """The secret of the first authentication entry in SETUP metadata (bearer token or simple password)."""
    if not metadata or metadata_mime != COMPOSITE:
        return None
    for mime, payload in parse_composite(metadata):
        if mime == AUTHENTICATION:
            return parse_auth(payload)[2]
    return None


__all__ = [
    "COMPOSITE",
    "ROUTING",
    "AUTHENTICATION",
    "MetadataError",
    "composite",
    "parse_composite",
    "routing",
    "parse_routing",
    "bearer",
    "parse_auth",
    "request_metadata",
    "route_of",
    "token_of",
]
