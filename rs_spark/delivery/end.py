"""How the delivery hub ended: why it takes no more batches, with the error and where the stream stopped.

The first end counts: the query's (``finish``, an abort) or the Subscriber's own (it cancelled,
raised in ``on_next``, or broke a rule). Every later commit is refused with :meth:`HubEnd.refusal`.
After a failure the hub may keep its Subscriber for a restarted run instead (:class:`KeptEnd`).

"Kept" in delivery means only that: the Subscriber stays subscribed (no ``on_error`` yet) while the hub
waits for a run restarted from the checkpoint (option ``keepSubscriberOnAbort``). It is unrelated to the
rows rs_spark.net keeps for a resumable stream until they are acknowledged.
"""

from __future__ import annotations

import dataclasses
import enum
import threading
from collections.abc import Callable

from .errors import SinkError, SubscriberCancelled


class EndReason(enum.Enum):
    """Why the hub takes no more batches."""

    QUERY_ENDED = "the query ended"  # finish(): the Subscriber is owed on_complete
    QUERY_FAILED = "the query failed"  # finish(error) or an abort: the Subscriber is owed on_error
    SUBSCRIBER_CANCELLED = "the Subscriber cancelled its subscription"
    SUBSCRIBER_RAISED = "the Subscriber raised in on_next"  # rule 2.13: treated as cancellation
    SUBSCRIBER_VIOLATED = "the Subscriber broke the Reactive Streams spec"  # e.g. request(0), rule 3.9


@dataclasses.dataclass(frozen=True)
class HubEnd:
    """How the hub ended: the first of the query's end and the Subscriber's own end decides."""

    reason: EndReason
    error: BaseException | None = None  # the query's failure, what on_next raised, or the rule broken
    batch_id: int = -1  # where the Subscriber's stream stopped: its last element (or the one that raised)
    row: int = -1

    @property
    def text(self) -> str:
        """The end in words: ``the query ended``, ``the query failed: <error>``, ..."""
        if self.reason is EndReason.QUERY_FAILED:
            return f"{self.reason.value}: {self.error}"
        return self.reason.value

    @property
    def owes_terminal(self) -> bool:
        """The query ended: the Subscriber gets on_complete / on_error once what was queued is delivered.
        (A Subscriber that ended the stream itself is owed nothing.)"""
        return self.reason in (EndReason.QUERY_ENDED, EndReason.QUERY_FAILED)

    def refusal(self, sink: str) -> SinkError:
        """The error a commit gets from the hub after this end: what happened, where, what to do."""
        where = f"micro-batch {self.batch_id}, row {self.row}"
        error = self.error
        if self.reason is EndReason.SUBSCRIBER_RAISED:
            return SinkError(
                f"sink '{sink}': the Subscriber raised {type(error).__name__}: {error} in on_next at {where} "
                "(rule 2.13: treated as cancellation); the query stops. Fix the Subscriber, then restart "
                "the query from its checkpoint"
            )
        if self.reason is EndReason.SUBSCRIBER_VIOLATED:
            return SinkError(
                f"sink '{sink}': the Subscriber broke the Reactive Streams spec after {where}: {error} It got "
                "on_error and the query stops; fix the Subscriber, then restart the query from its checkpoint"
            )
        if self.reason is EndReason.SUBSCRIBER_CANCELLED:
            return SubscriberCancelled(
                f"sink '{sink}': the Subscriber cancelled its subscription after {where}; the query stops. "
                "Restart it with a new Subscriber to continue from the checkpoint"
            )
        return SinkError(f"sink '{sink}' takes no more batches: {self.text}")


class KeptEnd:
    """A Subscriber kept subscribed after the query failed (:meth:`DeliveryHub.keep`): the error it gets if
    no restarted run commits within the window, and the timer that gives it."""

    __slots__ = ("error", "timer", "on_expiry")

    def __init__(
        self,
        error: BaseException,
        window: float,
        expired: Callable[[KeptEnd], None],
        on_expiry: Callable[[], None] | None,
        name: str,
    ) -> None:
        self.error = error
        self.on_expiry = on_expiry
        self.timer = threading.Timer(window, expired, args=[self])
        self.timer.daemon = True
        self.timer.name = f"rs-spark-kept {name}"


__all__ = ["EndReason", "HubEnd", "KeptEnd"]
