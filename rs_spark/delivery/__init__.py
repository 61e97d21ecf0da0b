"""The delivery hub: one subscription to a user's Subscriber, fed by every micro-batch commit.

The ``reactive`` sink's commits run in short-lived processes; the Subscriber lives here, in a
long-lived one (a notebook, a service), served on an rs_spark.net endpoint. Modules:
:mod:`.hub` (the hub and its :class:`DeliveryHubStats`), :mod:`.subscription` (the Subscription
the Subscriber holds), :mod:`.in_flight` (the commits in flight), :mod:`.queued` (their batches
queued for the Subscriber), :mod:`.lifecycle` (the hub's end; a Subscriber kept after a failure),
:mod:`.end` (why the hub ended: the query's end or the Subscriber's), :mod:`.ledger` (what was
delivered: exactly once across restarts), :mod:`.decide` (what the hub does with a record batch
against the ledger, and a finished commit's answer: pure, its cases tables), :mod:`.wire` (the commit
channel's record-batch tags and acknowledgement), :mod:`.commit_channel`, :mod:`.control` (abort /
end messages), :mod:`.endpoint` (:func:`serve_sink`), :mod:`.elements` (what a Subscriber receives per row).
Never imports pyspark: ``rows`` elements are registered by :mod:`rs_spark.spark`.
"""

from typing import TYPE_CHECKING

from .control import send_control
from .end import EndReason, HubEnd
from .endpoint import SinkEndpoint, serve_sink
from .errors import BatchAborted, QueryFailed, SinkError, SubscriberCancelled
from .hub import ELEMENTS, DeliveryHub, DeliveryHubStats, Offer
from .ledger import Ledger
from .subscription import DeliverySubscription

__all__ = [
    "DeliveryHub",
    "DeliveryHubStats",
    "DeliverySubscription",
    "HubEnd",
    "EndReason",
    "Offer",
    "SinkEndpoint",
    "serve_sink",
    "send_control",
    "SinkError",
    "SubscriberCancelled",
    "BatchAborted",
    "QueryFailed",
    "Ledger",
    "ELEMENTS",
]

if not TYPE_CHECKING:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from .._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
