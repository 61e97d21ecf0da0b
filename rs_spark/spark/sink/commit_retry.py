"""A micro-batch's commit that rides out an unreachable hub.

The commit (:func:`~.writer.deliver`) streams the staged micro-batch to the delivery hub over one
channel. When that channel cannot be opened, is reset, or goes silent past ``keepaliveTimeout``,
:func:`send_riding_outages` opens a new one and sends the whole micro-batch again, spaced by the
backoff (``reconnectBackoff`` / ``reconnectBackoffMax``), for up to ``reconnectTimeout``. No row
reaches the Subscriber twice: the hub's ledger knows how many rows of the micro-batch it delivered
and skips them (an acknowledgement lost in the outage comes back as ``duplicate``). An answer from
the hub (a refusal, the Subscriber's failure, commitTimeout) is final, as before.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import TypeVar

from ...delivery import SinkError
from ...net.protocol.address import redact
from ...net.protocol.errors import ConnectionLost
from ...net.zero_loss.outage import Outage
from .options import SinkOptions

T = TypeVar("T")


class HubUnreachable(Exception):
    """One try could not reach the hub (its cause: the connection error); another may."""


def send_riding_outages(send: Callable[[], T], where: str, opts: SinkOptions) -> T:
    """``send()`` (one try of the whole commit), tried again while it raises :class:`HubUnreachable`,
    for up to ``opts.reconnect_timeout`` seconds of outage."""
    outage: Outage | None = None
    pause = threading.Event()  # never set: a bounded wait the worker's kill can end
    while True:
        try:
            result = send()
        except HubUnreachable as exc:
            cause = exc.__cause__ or exc
            if outage is None:
                outage = Outage(
                    f"the sink's hub {redact(opts.endpoint or '?')}",
                    f"sending {where} again",
                    cause,
                    opts.reconnect_timeout,
                    bounded_by="option reconnectTimeout",
                )
            else:
                outage.failed(cause)
            if outage.over:
                outage.ended(f"gave up {where}")
                raise SinkError(
                    f"delivering {where}: the hub was unreachable for reconnectTimeout={opts.reconnect_timeout:g} s "
                    f"({cause}); is the process serving the Subscriber running? Restart the query from its checkpoint "
                    "once it is: no row is delivered twice"
                ) from cause
            pause.wait(outage.pause(opts.link.backoff, random.random()))
            continue
        if outage is not None:
            outage.ended(f"delivered {where}")
        return result


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the hub could not be reached (tried again), not what the hub answered."""
    return isinstance(exc, ConnectionLost)


__all__ = ["HubUnreachable", "send_riding_outages", "unreachable"]
