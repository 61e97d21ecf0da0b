"""How a request-channel's first element travels: the one point where RSocket implementations differ.

The protocol says a REQUEST_CHANNEL frame carries "identification of the service being requested
along with parameters". rsocket-java and rsocket-js send the requester's first element as that
frame's data (and count it against an implied credit of one); the ``rsocket`` Python package
sends request parameters there and the elements after it. Reading one convention as the other
loses the first element or invents one, so both sides name the convention they use.
"""

from __future__ import annotations

import enum
from typing import TypeVar

_E = TypeVar("_E", bound=enum.Enum)


def _choice(cls: type[_E], value: str | _E, where: str, option: str) -> _E:
    """``value`` as a member of ``cls``; a ValueError naming ``option`` and the choices otherwise."""
    if isinstance(value, cls):
        return value
    try:
        return cls(value)
    except ValueError:
        raise ValueError(f"{where}: {option}={value!r} must be one of {[c.value for c in cls]}") from None


class ChannelData(enum.Enum):
    """What a server takes the data of a REQUEST_CHANNEL frame to be."""

    AUTO = "auto"
    """Non-empty data is the first element; empty data is none. Right for rsocket-java, rsocket-js,
    rs_spark and the ``rsocket`` package when its request payload has no data. Wrong only for an
    empty first element (``b""`` with the bytes codec) from Java/JS: use ELEMENT there."""
    ELEMENT = "element"
    """The data is always the first element, even when empty (rsocket-java, rsocket-js)."""
    PARAMETERS = "parameters"
    """The data is request parameters, never an element (the ``rsocket`` Python package); the
    subscriber does not see it."""

    @classmethod
    def of(cls, value: str | ChannelData, where: str) -> ChannelData:
        """``value`` (a member or its name); ValueError naming ``where``, the option and the choices."""
        return _choice(cls, value, where, "channel_data")

    def first_element(self, data: bytes | bytearray | memoryview) -> bool:
        """Whether ``data`` (a REQUEST_CHANNEL frame's) is the stream's first element."""
        return self is ChannelData.ELEMENT or (self is ChannelData.AUTO and len(data) > 0)


class ChannelOpen(enum.Enum):
    """How a client opens a channel to feed a remote Subscriber."""

    FIRST_ELEMENT = "first_element"
    """The REQUEST_CHANNEL frame carries the first element (rsocket-java, rsocket-js; rs_spark's
    servers read it so by default). The channel opens when the local publisher emits it; an
    empty publisher opens it with COMPLETE and no data."""
    ROUTE_ONLY = "route_only"
    """The REQUEST_CHANNEL frame carries the route only and every element follows as PAYLOAD (what
    the ``rsocket`` Python package's responders expect)."""

    @classmethod
    def of(cls, value: str | ChannelOpen, where: str) -> ChannelOpen:
        """``value`` (a member or its name); ValueError naming ``where``, the option and the choices."""
        return _choice(cls, value, where, "channel_open")


__all__ = ["ChannelData", "ChannelOpen"]
