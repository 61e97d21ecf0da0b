"""Interop with ReactiveX (``reactivex`` package, extra ``rs-spark[reactivex]``).

Observables have no backpressure of their own, so an Observable becomes a Publisher through
:func:`rs_spark.streams.create` and one of its bounded overflow strategies.
"""

from __future__ import annotations

from typing import Any

from ..create import Emitter, Overflow, create
from ..pipeline import PublisherBase
from ..subscribers import subscribe_callbacks
from ..types import Publisher


def from_observable(
    observable: Any, overflow: Overflow | str = Overflow.ERROR, *, buffer_size: int = 1024
) -> PublisherBase[Any]:
    """A Publisher of an Observable's items; at most ``buffer_size`` wait for demand, then
    ``overflow`` decides. Cancelling disposes the Observable subscription."""

    def run(emitter: Emitter) -> None:
        disposable = observable.subscribe(on_next=emitter.next, on_error=emitter.error, on_completed=emitter.complete)
        emitter.on_cancel(disposable.dispose)

    return create(run, overflow, buffer_size=buffer_size)


def to_observable(publisher: Publisher[Any], request_size: int = 256) -> Any:
    """An Observable that subscribes to ``publisher`` per observer, ``request_size`` at a time."""
    import reactivex
    from reactivex.disposable import Disposable

    def subscribe(observer: Any, scheduler: Any | None = None) -> Any:
        sub = subscribe_callbacks(
            publisher, observer.on_next, observer.on_error, observer.on_completed, request_size=request_size
        )
        return Disposable(sub.cancel)

    return reactivex.create(subscribe)


__all__ = ["from_observable", "to_observable"]
