"""What the resumable reader needs of its client: :class:`ResumeDialler`, the members of the
protocol's :class:`~rs_spark.net.protocol.client.Client` it uses and no more (mypy checks every
call; the Client plugs the reader in as its :class:`~rs_spark.net.protocol.client.Resumer`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ...streams.types import Subscriber
from ..protocol import frames as F
from ..protocol.connection import Connection
from .resume import ResumeRequest


class FetchPublisher(Protocol):
    """A remote Publisher of kept rows (what :meth:`ResumeDialler.publisher` returns)."""

    def subscribe(self, subscriber: Subscriber[Any]) -> None: ...


class ResumeDialler(Protocol):
    """The members of a client that :mod:`.resume_client` uses, and nothing more."""

    @property
    def token(self) -> str | None: ...

    @property
    def codec_name(self) -> str: ...

    @property
    def batch_rows(self) -> int: ...

    @property
    def lifetime(self) -> float: ...

    def address_of(self, name: str | None) -> str: ...

    def where(self, kind: str, name: str | None) -> str: ...

    def open_resumable(self, token: bytes, request: ResumeRequest) -> Connection: ...

    def resume(self, token: bytes, position: int, on_push: Callable[[F.Frame], None] | None = None) -> Connection: ...

    def fresh(self) -> ResumeDialler: ...

    def publisher(self, name: str | None = None, extra: list[tuple[str, bytes]] | None = None) -> FetchPublisher: ...

    def close(self) -> None: ...


__all__ = ["FetchPublisher", "ResumeDialler"]
