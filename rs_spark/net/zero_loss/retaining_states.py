"""A retaining stream's states and its one table: a plain stream's, and the moves resumption adds.

A :class:`~.retaining_stream.RetainingStream` survives its connection: closed under it, it is
*detached* and waits for a reader to resume it; resumed, its end waits for the reader's first
REQUEST_N (the reader first says how much it wants again); its end sent, it waits for the
acknowledgement of its last rows (*finishing*), and takes no frame but those. Whether its publisher
ended is part of each state (``*_ENDING``), so nothing beside the state qualifies it.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable

from ..protocol.stream_state import Event, StateTable, StreamState, ending_everywhere


class RetainEvent(enum.Enum):
    """What only happens to a retaining stream."""

    PRELOADED = "preloaded"  # read back from its spill after a restart: kept, no reader yet
    RESUMED = "resumed"  # a reader's RESUME bound it to a new connection
    DETACHED = "detached"  # its connection closed: kept for a resume


class RetainingState(enum.Enum):
    """Where a retaining stream is (``*_ENDING``: its publisher ended, its end not yet sent)."""

    UNBOUND = "unbound"  # made, not yet bound to a connection
    UNBOUND_ENDING = "unbound, ending"
    ATTACHED = "attached"  # on a connection: sending
    ENDING = "ending"  # its end follows the queued rows
    RESUMED = "resumed"  # on a new connection after a resume: its end waits for the reader's first REQUEST_N
    RESUMED_ENDING = "resumed, ending"
    DETACHED = "detached"  # its connection dropped: kept, waiting for a resume
    DETACHED_ENDING = "detached, ending"
    FINISHING = "finishing"  # its end was sent; kept rows wait for the reader's last acknowledgements
    ENDED = "ended"  # over: cancelled, failed, expired, or finished and acknowledged

    @property
    def on_connection(self) -> bool:
        return self in _ON_CONNECTION

    @property
    def publisher_ended(self) -> bool:
        return self in _PUBLISHER_ENDED

    @property
    def sends_end(self) -> bool:
        return self is RetainingState.ENDING

    @property
    def takes_frames(self) -> bool:
        return self is not RetainingState.FINISHING  # only acknowledgements (METADATA_PUSH) now

    @property
    def ended(self) -> bool:
        return self is RetainingState.ENDED

    @property
    def detached(self) -> bool:
        """Kept without a connection, waiting for a resume."""
        return self in (RetainingState.DETACHED, RetainingState.DETACHED_ENDING)

    @property
    def shown(self) -> str:
        """As ``Server.stats()`` shows it: ``attached`` (on a connection, or about to be),
        ``detached`` or ``ended``."""
        return "ended" if self.ended else "detached" if self.detached else "attached"


S = RetainingState
_ON_CONNECTION = frozenset({S.ATTACHED, S.ENDING, S.RESUMED, S.RESUMED_ENDING, S.FINISHING})
_PUBLISHER_ENDED = frozenset({S.UNBOUND_ENDING, S.ENDING, S.RESUMED_ENDING, S.DETACHED_ENDING, S.FINISHING, S.ENDED})
# Each state and its *_ENDING twin (a publisher's end, wherever the stream is, keeps where it is).
_RUNNING_TO_ENDING = {
    S.UNBOUND: S.UNBOUND_ENDING,
    S.ATTACHED: S.ENDING,
    S.RESUMED: S.RESUMED_ENDING,
    S.DETACHED: S.DETACHED_ENDING,
}


def _rows() -> dict[tuple[StreamState, Hashable], StreamState]:
    rows: dict[tuple[StreamState, Hashable], StreamState] = {
        (S.UNBOUND, Event.ATTACH): S.ATTACHED,
        (S.UNBOUND_ENDING, Event.ATTACH): S.ENDING,
        (S.UNBOUND, RetainEvent.PRELOADED): S.DETACHED,
        (S.RESUMED, Event.ASKED): S.ATTACHED,
        (S.RESUMED_ENDING, Event.ASKED): S.ENDING,
        (S.ENDING, Event.END_SENT): S.ENDED,
        (S.ENDING, Event.END_SENT_HELD): S.FINISHING,
        **ending_everywhere(S, S.ENDED),
    }
    for running, ending in _RUNNING_TO_ENDING.items():
        rows[running, Event.PUBLISHER_ENDED] = ending
        rows[running, RetainEvent.RESUMED] = S.RESUMED
        rows[ending, RetainEvent.RESUMED] = S.RESUMED_ENDING
        rows[running, RetainEvent.DETACHED] = S.DETACHED
        rows[ending, RetainEvent.DETACHED] = S.DETACHED_ENDING
    rows[S.FINISHING, RetainEvent.RESUMED] = S.RESUMED_ENDING  # its rows and its end are sent again
    rows[S.FINISHING, RetainEvent.DETACHED] = S.DETACHED_ENDING  # expires after its window if no reader acknowledges
    return rows


RETAINING = StateTable(S.UNBOUND, _rows())
"""A retaining stream's moves (its table in tests/net/test_stream_states.py)."""


__all__ = ["RetainingState", "RetainEvent", "RETAINING"]
