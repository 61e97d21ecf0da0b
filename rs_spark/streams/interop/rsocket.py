"""Interop with the ``reactivestreams`` package that ships with ``rsocket``.

Its ``Subscriber.on_next(value, is_complete=False)`` may carry the last element and the
completion in one call; these adapters translate that to and from our four-signal form.
The package itself is not imported: its objects fit by their method names.
"""

from __future__ import annotations

from typing import Any

from ..drain import check_subscriber
from ..errors import null_element_error
from ..pipeline import PublisherBase
from ..types import Publisher, Subscriber, Subscription


class _ToStandard:
    """Receives rsocket-style signals and forwards them to a standard Subscriber."""

    __slots__ = ("_s", "_done")

    def __init__(self, s: Subscriber[Any]) -> None:
        self._s = s
        self._done = False

    def on_subscribe(self, subscription: Subscription) -> None:
        self._s.on_subscribe(subscription)

    def on_next(self, value: Any, is_complete: bool = False) -> None:
        if self._done:
            return
        if value is not None:
            self._s.on_next(value)
        if is_complete:
            self._done = True
            self._s.on_complete()

    def on_error(self, exception: BaseException) -> None:
        if not self._done:
            self._done = True
            self._s.on_error(exception)

    def on_complete(self) -> None:
        if not self._done:
            self._done = True
            self._s.on_complete()


class _FromRsocketPublisher(PublisherBase[Any]):
    __slots__ = ("_p",)

    def __init__(self, p: Any) -> None:
        self._p = p

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        check_subscriber(subscriber)
        self._p.subscribe(_ToStandard(subscriber))


def from_rsocket_publisher(publisher: Any) -> PublisherBase[Any]:
    """A standard Publisher over an rsocket-style one (``on_next(value, is_complete)``)."""
    if publisher is None:
        raise null_element_error("the publisher passed to from_rsocket_publisher()")
    return _FromRsocketPublisher(publisher)


class _ToRsocket:
    """Receives standard signals and forwards them to an rsocket-style Subscriber."""

    __slots__ = ("_s",)

    def __init__(self, s: Any) -> None:
        self._s = s

    def on_subscribe(self, subscription: Subscription) -> None:
        self._s.on_subscribe(subscription)

    def on_next(self, item: Any) -> None:
        if item is None:
            raise null_element_error("the element passed to on_next()")
        self._s.on_next(item, False)

    def on_error(self, error: BaseException) -> None:
        self._s.on_error(error)

    def on_complete(self) -> None:
        self._s.on_complete()


class RsocketPublisher:
    """An rsocket-style Publisher over a standard one: its subscribers get ``on_next(v, False)``."""

    __slots__ = ("_p",)

    def __init__(self, p: Publisher[Any]) -> None:
        self._p = p

    def subscribe(self, subscriber: Any) -> None:
        check_subscriber(subscriber)
        self._p.subscribe(_ToRsocket(subscriber))


def to_rsocket_publisher(publisher: Publisher[Any]) -> RsocketPublisher:
    """Wrap a standard Publisher for code written against ``reactivestreams``' Subscriber."""
    if publisher is None:
        raise null_element_error("the publisher passed to to_rsocket_publisher()")
    return RsocketPublisher(publisher)


def rsocket_subscriber(subscriber: Any) -> Subscriber[Any]:
    """Wrap an rsocket-style Subscriber so any standard Publisher can signal it."""
    check_subscriber(subscriber)
    return _ToRsocket(subscriber)


__all__ = ["from_rsocket_publisher", "to_rsocket_publisher", "rsocket_subscriber", "RsocketPublisher"]
