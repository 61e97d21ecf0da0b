"""What the sink's delivery can end with, as the user and the query see it."""

from __future__ import annotations


class SinkError(RuntimeError):
    """The Subscriber behind the sink stopped taking elements (cancelled, raised, or ended)."""


class SubscriberCancelled(SinkError):
    """The Subscriber cancelled its subscription: the query must stop."""


class BatchAborted(RuntimeError):
    """Spark aborted a micro-batch: none of its rows were delivered."""


class QueryFailed(RuntimeError):
    """The streaming query writing into the Subscriber failed."""


__all__ = ["SinkError", "SubscriberCancelled", "BatchAborted", "QueryFailed"]
