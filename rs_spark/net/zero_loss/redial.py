"""How a resumable stream gets a connection: opened new (a resumable SETUP), resumed at a position
(RESUME), opened under its key when the server never knew it, and, after it lost its connection,
the tries, spaced by the backoff, for as long as the endpoint keeps the stream (:mod:`.outage`),
with the error that ends them.

What the stream does with the connection it gets (reattach, or open the stream on it) stays with
the stream (:mod:`.resume_client`); this module only dials.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Protocol

from ..protocol import frames as F
from ..protocol.client import Pacing
from ..protocol.connection import Connection
from ..protocol.errors import NetError, Refused, ResumeRejected
from ..protocol.metadata import request_metadata
from .dialler import ResumeDialler
from .outage import Outage
from .resume import UNKNOWN_STREAM, ResumeRequest, resume_token


class StreamDialling:
    """The connections of stream ``key`` of endpoint ``name`` through ``client``: ``window``, the seconds
    asked for the server to keep it after a drop; ``positions``, a positions-only stream."""

    def __init__(
        self, client: ResumeDialler, name: str | None, key: str, window: float | None, positions: bool
    ) -> None:
        self._client, self._name, self._key = client, name, key
        self._token = resume_token(client.token, key)
        self._request = ResumeRequest(window, "positions" if positions else "rows")

    @property
    def address(self) -> str:
        """The endpoint's address (without the token)."""
        return self._client.address_of(self._name)

    def open(self) -> Connection:
        """A new connection whose SETUP asks the server to keep the stream (it is opened on it next)."""
        return self._client.open_resumable(self._token, self._request)

    def request_metadata(self, conn: Connection) -> bytes | None:
        """The REQUEST_STREAM metadata that opens this stream on ``conn`` (its route)."""
        return request_metadata(conn.metadata_mime, self._name)

    def reconnection(self, position: int, on_push: Callable[[F.Frame], None]) -> tuple[Connection, bool]:
        """A connection continuing the stream at ``position``, and whether the stream must be opened
        on it (True: the server does not know the stream and nothing of it was received, position 0:
        its key was made durable before it was opened, so it is opened now, under that key)."""
        try:
            return self.resume(position, on_push), False
        except ResumeRejected as exc:
            if position == 0 and UNKNOWN_STREAM in str(exc):
                return self.open(), True
            raise

    def resume(self, position: int, on_push: Callable[[F.Frame], None] | None = None) -> Connection:
        """A new connection continuing the stream at ``position`` (RESUME, RESUME_OK)."""
        try:
            return self._client.resume(self._token, position, on_push)
        except ResumeRejected as exc:
            raise ResumeRejected(
                f"{self.address} cannot resume stream {self._key} at position {position}: {exc}", self.address
            ) from exc


class WindowEnded(ResumeRejected):
    """A dropped stream could not be resumed before the endpoint's window ended: the endpoint no
    longer keeps it (its rows after the last acknowledgement are lost to this reader)."""


class Redialler(Protocol):
    """What the tries need of the stream's publisher (:class:`.resume_client.ResumablePublisher` is one)."""

    key: str
    reconnect_for: float | None
    backoff: Pacing
    dialling: StreamDialling

    def retry_bound(self) -> float: ...


class Redial:
    """One outage of a stream at ``position`` (``where`` / ``address`` name it in errors): :meth:`run`
    tries until a connection continues the stream, the endpoint refuses, the bound ends, or ``gone``
    is set (the stream was cancelled or detached). :attr:`outage` is what progress shows meanwhile."""

    def __init__(
        self,
        pub: Redialler,
        where: str,
        address: str | None,
        error: BaseException,
        position: int,
        gone: threading.Event,
    ) -> None:
        self._pub, self._where, self._address, self._gone = pub, where, address, gone
        self._error = error
        self.what = f"stream {pub.key} at position {position}"
        self._position = position
        bounded_by = "the endpoint's window" if pub.reconnect_for is None else "reconnect_for"
        self.outage = Outage(where, f"resuming {self.what}", error, pub.retry_bound(), bounded_by=bounded_by)

    def run(
        self, on_push: Callable[[F.Frame], None], opened: Callable[[], bool]
    ) -> tuple[Connection, bool] | BaseException:
        """The connection and whether the stream must be opened on it (see
        :meth:`StreamDialling.reconnection`), or the error the stream ends with (a refusal's reason;
        :class:`WindowEnded` once the bound passed, for a stream a server took: ``opened()``; the last
        connection error otherwise, or when ``gone`` was set)."""
        outage, last = self.outage, self._error
        while not self._gone.is_set():
            if outage.over:
                return self._gave_up(last, opened())
            try:
                got = self._pub.dialling.reconnection(self._position, on_push)
            except Refused as exc:  # final: the stream is gone (or expired), or the token is wrong
                outage.ended(f"gave up: the endpoint refused to resume {self.what} ({exc})")
                return exc
            except NetError as exc:
                last = exc
                outage.failed(exc)
                self._gone.wait(outage.pause(self._pub.backoff, random.random()))
                continue
            outage.ended(f"resumed {self.what}")
            return got
        return last

    def _gave_up(self, last: BaseException, opened: bool) -> BaseException:
        """The error the stream ends with when the bound passed without a connection."""
        outage = self.outage
        if not opened:  # no server ever took the stream: nothing was kept for it, nothing is lost
            outage.ended(f"gave up opening {self.what}")
            return last
        outage.ended(f"gave up resuming {self.what}: the endpoint's window ended")
        return WindowEnded(
            f"{self._where} could not resume {self.what} within {outage.bound:.0f} s (the endpoint's window and "
            f"the keepalive lifetime): the endpoint no longer keeps it; the last try failed with "
            f"{type(last).__name__}: {last}",
            self._address,
            self._where,
        )


__all__ = ["Redial", "Redialler", "StreamDialling", "WindowEnded"]
