"""The frames one outbound stream sends: PAYLOAD and ERROR on its stream id, and for a channel not
opened yet, the REQUEST_CHANNEL that opens it with its first element; elements already encoded.

Opening a channel with its first element is how rsocket-java and rsocket-js open one; the route is
data of the first frame's encoding, not a state of the stream: it is spent by whichever frame goes first.
"""

from __future__ import annotations

from typing import Any

from . import frames as F
from .errors import error_text


class Encoded:
    """An element already encoded as its payload's buffers (kept rows sent again to a fetch)."""

    __slots__ = ("buffers",)

    def __init__(self, buffers: list[Any]) -> None:
        self.buffers = buffers


class StreamFrames:
    """Encodes one stream's frames on ``sid``; ``opening`` (route metadata, initial n): the first
    frame opens the channel. Not thread-safe: its stream encodes under its own lock."""

    __slots__ = ("sid", "_opening")

    def __init__(self, sid: int = 0, opening: tuple[bytes | None, int] | None = None) -> None:
        self.sid = sid
        self._opening = opening

    def payload(self, data: Any, complete: bool = False) -> Any:
        """A PAYLOAD frame (``data`` None: no element), or the REQUEST_CHANNEL that opens the stream with it."""
        opening, self._opening = self._opening, None
        if opening is None:
            data, more = (data, True) if data is not None else ((), False)
            return F.encode_payload(self.sid, data, next=more, complete=complete)
        meta, n = opening
        return F.encode_request(F.REQUEST_CHANNEL, self.sid, n, metadata=meta, data=data or (), complete=complete)

    def error(self, error: BaseException) -> list[Any]:
        """The frames that carry ``error`` to the peer: an error before the first element opens the
        channel without data first, so that it reaches the remote subscriber (rs_spark servers read
        empty data as no element)."""
        first = [self.payload(())] if self._opening is not None else []
        return [*first, F.encode_error(self.sid, F.APPLICATION_ERROR, error_text(error))]


__all__ = ["StreamFrames", "Encoded"]
