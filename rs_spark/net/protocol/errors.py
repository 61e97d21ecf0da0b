"""Errors a user of rs_spark.net can meet; each says what happened, where, and what to do. And
:class:`Rejected`, how a server's handler refuses a request."""

from __future__ import annotations

import re

from . import frames as F

_TYPE = re.compile(r"^([A-Za-z_][\w.]*): ")


class NetError(RuntimeError):
    """Base of rs_spark.net errors; ``address`` and ``stream`` say where (when known)."""

    def __init__(self, message: str, address: str | None = None, stream: str | None = None) -> None:
        super().__init__(message)
        self.address = address
        self.stream = stream


class ConnectionLost(NetError):
    """The connection closed or went silent (keepalive) while a stream was open."""


class Refused(NetError):
    """The server refused the connection or the stream: bad token, unknown name, a limit."""


class ResumeRejected(Refused):
    """The server cannot resume the stream (expired, unknown, or its rows were freed)."""


class ProtocolError(NetError):
    """The peer sent a malformed frame or broke a Reactive Streams rule on the wire."""


class RemoteError(NetError):
    """The remote side signalled ``on_error``; ``type_name`` and ``remote_message`` are its error's."""

    def __init__(
        self,
        type_name: str,
        remote_message: str,
        address: str | None = None,
        stream: str | None = None,
        where: str = "",
    ) -> None:
        shown = f"{type_name}: {remote_message}" if type_name else remote_message
        super().__init__(f"{shown} (remote error{where})", address, stream)
        self.type_name = type_name
        self.remote_message = remote_message


class Rejected(Exception):
    """Raised by a server's handler to answer with ERROR[code] (stream 0: then close). Never reaches a user:
    the connection turns it into the ERROR frame, which the peer meets as :class:`Refused` or :class:`RemoteError`."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def error_text(error: BaseException) -> str:
    """The ERROR frame text for a local exception: ``module.Type: message``."""
    t = type(error)
    mod = t.__module__
    name = t.__qualname__ if mod in ("builtins", "__main__") else f"{mod}.{t.__qualname__}"
    if isinstance(error, RemoteError):  # relayed: keep the original type
        name, msg = error.type_name or name, error.remote_message
    else:
        msg = str(error)
    return f"{name}: {msg}"


def parse_error_text(text: str) -> tuple[str, str]:
    """Split ``Type: message``; text from generic peers without a type gives ``("", text)``."""
    m = _TYPE.match(text)
    if m:
        return m.group(1), text[m.end() :]
    return "", text


def remote_error(f: F.Frame, address: str | None, where: str, received: int, unit: str) -> BaseException:
    """The local exception for an ERROR frame on a stream."""
    text = bytes(f.data).decode("utf-8", "replace")
    if f.error_code in (F.REJECTED, F.INVALID):
        code = F.ERROR_NAMES.get(f.error_code, hex(f.error_code))
        return Refused(f"{where} was refused with ERROR[{code}]: {text}", address, where)
    type_name, msg = parse_error_text(text)
    return RemoteError(type_name, msg, address, where, where=f" from {where}, after {received} {unit}")


__all__ = [
    "NetError",
    "ConnectionLost",
    "Refused",
    "ProtocolError",
    "ResumeRejected",
    "RemoteError",
    "error_text",
    "parse_error_text",
    "remote_error",
    "Rejected",
]
