"""Composition: ``publisher.pipe(op, op, ...)`` and the base class every rs_spark Publisher shares.

An operator is a Processor *template*: ``pipe`` asks it for a fresh Processor per
subscription (``op.fresh()``), so a piped Publisher stays cold and can be subscribed many
times (rule 1.10). Where the upstream is an iterator-backed source and the operator is
fusable (map, filter, take), the operator is applied to the iterator instead (*fusion*, as
in Reactor and RxJava): same signals, no per-stage hop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, Protocol, TypeVar

from .drain import check_subscriber
from .types import Publisher, Subscriber

T = TypeVar("T")


class Operator(Protocol):
    """What ``pipe`` accepts: a Processor template."""

    def fresh(self) -> Any:
        """Return a new, unsubscribed Processor with the same configuration."""
        ...


class PublisherBase(Generic[T]):
    """Base of rs_spark's Publishers: adds :meth:`pipe`. Not required of foreign publishers."""

    __slots__ = ()

    def subscribe(self, subscriber: Subscriber[T]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def pipe(self, *operators: Any) -> PublisherBase[Any]:
        """Return a Publisher of this one's elements passed through ``operators`` in order."""
        return pipe(self, *operators)

    def _fuse(self, wrap: Callable[[Iterator[Any]], Iterator[Any]]) -> PublisherBase[Any] | None:
        """Return a Publisher with ``wrap`` applied to its iterator, or None if not fusable."""
        return None


class PipedPublisher(PublisherBase[Any]):
    """``source`` followed by ``operators``; fresh Processors for every subscriber."""

    __slots__ = ("_source", "_operators")

    def __init__(self, source: Publisher[Any], operators: Sequence[Any]) -> None:
        self._source = source
        self._operators = tuple(operators)

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        check_subscriber(subscriber)  # rule 1.9
        stages = [op.fresh() for op in self._operators]
        # Connect downstream first: demand signalled before upstream arrives is deferred.
        downstream: Subscriber[Any] = subscriber
        for stage in reversed(stages):
            stage.subscribe(downstream)
            downstream = stage
        self._source.subscribe(downstream)

    def pipe(self, *operators: Any) -> PublisherBase[Any]:
        return pipe(self._source, *self._operators, *operators)


def pipe(source: Publisher[Any], *operators: Any) -> PublisherBase[Any]:
    """Compose ``source`` with ``operators`` (Processor templates such as ``map(f)``)."""
    if source is None:
        raise TypeError("pipe() needs a source Publisher, got None")
    current: Publisher[Any] = source
    rest = list(operators)
    # Fuse the leading fusable operators into an iterator-backed source.
    while rest and isinstance(current, PublisherBase):
        wrap = getattr(rest[0], "fuse_iterator", None)
        fused = current._fuse(wrap) if wrap is not None else None
        if fused is None:
            break
        current = fused
        rest.pop(0)
    for op in rest:
        if not hasattr(op, "fresh"):
            raise TypeError(f"pipe() takes operators such as map(f), filter(p), take(n), batch(n); got {op!r}")
    if not rest and isinstance(current, PublisherBase):
        return current
    return PipedPublisher(current, rest)  # also wraps a foreign publisher piped through nothing


__all__ = ["Operator", "PublisherBase", "PipedPublisher", "pipe"]
