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


__all__ = ["Publisher", "Subscriber", "Subscription", "Processor"]
