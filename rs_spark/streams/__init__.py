"""Reactive Streams for Python: types, spec-safe building blocks, adapters, operators.

Pure Python; imports no pyspark. Quick tour::

    from rs_spark import streams as rs
    pub = rs.range_(1_000).pipe(rs.map(lambda x: x * 2), rs.filter(lambda x: x % 3))
    for x in rs.iterate(pub, prefetch=64):   # at most 64 elements in flight
        ...

Two rs_spark extensions of the specification: :class:`Replayable` (``subscribe_at``: start at a
position, as :class:`SequencePublisher` does) and :class:`Committable` (``on_commit``: told when
rows are safe downstream); the ``reactive`` source uses both.
"""

from typing import TYPE_CHECKING

from .aio import AsyncIteratorSubscriber, aiterate, from_async_iterable
from .create import Emitter, Overflow, create
from .demand import MAX_DEMAND, add_cap
from .drain import DrainSubscription, IteratorSubscription, QueueSubscription
from .errors import BufferOverflowError, SpecViolation
from .operators import batch, filter, map, take
from .pipeline import PublisherBase, pipe
from .sources import SequencePublisher, defer, empty, error, from_iterable, just, range_
from .subscribers import BlockingIterator, CallbackSubscriber, iterate, subscribe_callbacks, to_list
from .types import Committable, Processor, Publisher, Replayable, Subscriber, Subscription

__all__ = [
    "Publisher",
    "Subscriber",
    "Subscription",
    "Processor",
    "Replayable",
    "Committable",
    "MAX_DEMAND",
    "add_cap",
    "DrainSubscription",
    "IteratorSubscription",
    "QueueSubscription",
    "SpecViolation",
    "BufferOverflowError",
    "from_iterable",
    "from_async_iterable",
    "range_",
    "SequencePublisher",
    "just",
    "empty",
    "error",
    "defer",
    "create",
    "Overflow",
    "Emitter",
    "iterate",
    "BlockingIterator",
    "aiterate",
    "AsyncIteratorSubscriber",
    "to_list",
    "subscribe_callbacks",
    "CallbackSubscriber",
    "map",
    "filter",
    "take",
    "batch",
    "pipe",
    "PublisherBase",
]

if not TYPE_CHECKING:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from .._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
