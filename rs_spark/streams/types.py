"""The four Reactive Streams interfaces, as structural types.

Method names follow the ``reactivestreams`` package that ships with ``rsocket``. They are
``typing.Protocol``s so objects from other libraries fit without inheriting from ours.
"""

from __future__ import annotations

from typing import Protocol, TypeVar, runtime_checkable

T = TypeVar("T")
R = TypeVar("R")
T_contra = TypeVar("T_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)


@runtime_checkable
class Subscription(Protocol):
    """The link between one Publisher and one Subscriber (spec section 3)."""

    def request(self, n: int) -> None:
        """Add ``n`` (> 0) to the demand; ``n <= 0`` is answered with ``on_error`` (rule 3.9)."""
        ...

    def cancel(self) -> None:
        """Ask the Publisher to stop signalling and drop its references (rules 3.12, 3.13)."""
        ...


@runtime_checkable
class Subscriber(Protocol[T_contra]):
    """Receives ``on_subscribe on_next* (on_error | on_complete)?`` (spec section 2)."""

    def on_subscribe(self, subscription: Subscription) -> None: ...

    def on_next(self, item: T_contra) -> None: ...

    def on_error(self, error: BaseException) -> None: ...

    def on_complete(self) -> None: ...


@runtime_checkable
class Publisher(Protocol[R_co]):
    """Produces elements as demanded (spec section 1)."""

    def subscribe(self, subscriber: Subscriber[R_co]) -> None: ...


@runtime_checkable
class Processor(Subscriber[T_contra], Publisher[R_co], Protocol[T_contra, R_co]):
    """A stage that is both a Subscriber and a Publisher (spec section 4)."""


@runtime_checkable
class Replayable(Protocol[R_co]):
    """A Publisher that can start at a position: rows (elements) since its beginning.

    ``subscribe_at(subscriber, position)`` subscribes like ``subscribe`` but the first element
    signalled is the one at ``position`` (0 is the first one ever). A rs_spark extension, not
    part of the Reactive Streams specification: the ``reactive`` source uses it to resume where
    Spark last committed after a restart, so a replayable publisher needs no replay log.
    """

    def subscribe_at(self, subscriber: Subscriber[R_co], position: int) -> None:
        """Subscribe ``subscriber`` with the element at ``position`` (0-based) first."""
        ...


@runtime_checkable
class Committable(Protocol):
    """Told when the rows before ``position`` are safe downstream (a rs_spark extension).

    The ``reactive`` source calls ``on_commit(position)`` on the Subscription it holds, or else on
    the Publisher, after Spark committed the micro-batch ending at ``position`` (rows since the
    subscription, or since the publisher's beginning for a :class:`Replayable` one): never before
    that commit, once per committed micro-batch, positions increasing. A publisher reading a
    broker acknowledges its upstream there. After a restart a position already seen may come
    again once: compare with the last one.
    """

    def on_commit(self, position: int) -> None:
        """Every row before ``position`` is committed downstream."""
        ...


__all__ = ["Publisher", "Subscriber", "Subscription", "Processor", "Replayable", "Committable"]
