"""The hook through which a stream that keeps its rows until acknowledged plugs into an outbound stream.

An :class:`~.outbound.OutboundStream` built with a :class:`Keeper` (and the keeper's
:class:`~.stream_state.StateTable`) asks it at the three points where keeping rows changes what
the stream does; everything else a keeper needs it does through the stream's public calls, under
the stream's ``lock``. The zero-loss room's :class:`~rs_spark.net.zero_loss.retaining_stream.RetainingStream`
is the keeper; this room never imports it.
"""

from __future__ import annotations

from typing import Any, Protocol

from .credit import CreditPump


class Keeper(Protocol):
    """What an outbound stream asks the side that keeps its rows."""

    def send_rows(self, conn: Any, pump: CreditPump) -> bool:
        """Under the stream's lock: send what ``pump``'s credit allows the keeper's way on ``conn``;
        False when the rows go the stream's way (as PAYLOAD frames)."""

    def ends_when_sent(self) -> bool:
        """Under the stream's lock: whether the stream is over once its end was sent (False while
        rows it sent wait for the reader's acknowledgement: the reader may need them again)."""

    def on_connection_closed(self) -> bool:
        """The connection closed under the stream (not under its lock): True when the keeper keeps
        the stream for a resume; False when the stream ends with its connection."""


__all__ = ["Keeper"]
