"""An outbound stream's one state and the one table that moves it; what the stream shows (its stats).

A stream is in one state at a time, and only its :class:`StateTable` moves it: a row per
(state, :class:`Event`) -> next state; an event without a row leaves the state as it is (a
duplicate end, a frame after the end). The state says everything the stream's decisions read:
whether it is on a connection, whether its publisher ended, whether its end may go now.
What stays beside it is data, not state: which connection and stream id, how the publisher ended
(read only once the state says it did), and the first frame's route of a channel not opened yet.

A plain stream moves through :data:`PLAIN` (:class:`State`). A stream that keeps its rows until
acknowledged brings its own states and table (:mod:`rs_spark.net.zero_loss.retaining_states`),
which this module never imports: the stream reads any state through :class:`StreamState`.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol


class StreamState(Protocol):
    """What an outbound stream's code reads from its state, whichever table it moves through."""

    @property
    def on_connection(self) -> bool:
        """Bound to a connection: frames may be sent and the publisher asked."""

    @property
    def publisher_ended(self) -> bool:
        """The local publisher signalled its end: it is asked for nothing more."""

    @property
    def sends_end(self) -> bool:
        """The publisher's end goes to the peer once no row waits for credit."""

    @property
    def takes_frames(self) -> bool:
        """The peer's REQUEST_N, CANCEL and ERROR frames act on the stream."""

    @property
    def ended(self) -> bool:
        """Over: nothing is sent or asked again."""

    @property
    def shown(self) -> str:
        """As ``Server.stats()`` shows it: ``attached``, ``detached`` or ``ended``."""


class Event(enum.Enum):
    """What happens to any outbound stream (a kept stream's table adds its own events)."""

    ATTACH = "attach"  # bound to a connection and stream id
    ASKED = "asked"  # the peer's REQUEST_N
    PUBLISHER_ENDED = "publisher ended"  # the local publisher's on_complete or on_error
    END_SENT = "end sent"  # COMPLETE or ERROR went to the peer; nothing sent waits for an acknowledgement
    END_SENT_HELD = "end sent, rows held"  # the same, while rows sent wait for the peer's acknowledgement
    END = "end"  # cancelled by the peer, failed, expired, or finished


@dataclass(frozen=True, slots=True)
class StateTable:
    """A stream's states and moves: where it starts, and a row per (state, event) -> state."""

    start: StreamState
    rows: Mapping[tuple[StreamState, Hashable], StreamState]

    def next(self, state: StreamState, event: Hashable) -> StreamState | None:
        """The state ``event`` moves ``state`` to; None when the table has no row (no move)."""
        return self.rows.get((state, event))


class State(enum.Enum):
    """A plain stream's states: it ends with its connection."""

    UNBOUND = "unbound"  # made, not yet bound to a connection
    UNBOUND_ENDING = "unbound, ending"  # the same, and its publisher ended
    ATTACHED = "attached"  # on a connection: sending
    ENDING = "ending"  # on a connection, its publisher ended: its end follows the queued rows
    ENDED = "ended"  # over: cancelled, failed, or its end sent

    @property
    def on_connection(self) -> bool:
        return self in (State.ATTACHED, State.ENDING)

    @property
    def publisher_ended(self) -> bool:
        return self in (State.UNBOUND_ENDING, State.ENDING, State.ENDED)

    @property
    def sends_end(self) -> bool:
        return self is State.ENDING

    @property
    def takes_frames(self) -> bool:
        return True

    @property
    def ended(self) -> bool:
        return self is State.ENDED

    @property
    def shown(self) -> str:
        return "ended" if self is State.ENDED else "attached"  # unbound: about to be attached


def ending_everywhere(
    states: Iterable[StreamState], end: StreamState
) -> dict[tuple[StreamState, Hashable], StreamState]:
    """The rows of ``Event.END``: from every state but ``end`` itself, to ``end``."""
    return {(s, Event.END): end for s in states if s is not end}


PLAIN = StateTable(
    State.UNBOUND,
    {
        (State.UNBOUND, Event.ATTACH): State.ATTACHED,
        (State.UNBOUND_ENDING, Event.ATTACH): State.ENDING,
        (State.UNBOUND, Event.PUBLISHER_ENDED): State.UNBOUND_ENDING,
        (State.ATTACHED, Event.PUBLISHER_ENDED): State.ENDING,
        (State.ENDING, Event.END_SENT): State.ENDED,
        **ending_everywhere(State, State.ENDED),
    },
)
"""A plain stream's moves (its table in tests/net/test_stream_states.py)."""


@dataclass(frozen=True, slots=True)
class OutboundStreamStats:
    """What one outbound stream holds and has done (rows for record batches, else elements)."""

    # Where it is: its state (StreamState.shown) and the connections that carried it.
    state: str
    attaches: int
    # Positions: the next row to send, and after the newest row the publisher sent.
    sent_position: int
    end_position: int
    # Held now (waiting for credit; a kept stream also holds what it sent until acknowledged).
    held_records: int
    held_bytes: int
    # Dropped at the end: rows held when the stream ended; elements the publisher sent after it (rule 2.8).
    released_records: int
    after_end: int


__all__ = ["State", "Event", "StreamState", "StateTable", "PLAIN", "OutboundStreamStats", "ending_everywhere"]
