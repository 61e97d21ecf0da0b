"""What an outbound stream is (:class:`State`, one value) and what it shows (:class:`OutboundStreamStats`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class State(enum.Enum):
    """Where an outbound stream is in its life (one value: the stream holds no other flags)."""

    ATTACHED = "attached"  # bound to a connection (or about to be): sending
    RESUMED = "resumed"  # attached again after a resume: its end waits for the reader's first REQUEST_N
    FINISHING = "finishing"  # its end was sent; kept rows wait for the reader's last acknowledgements
    DETACHED = "detached"  # kept, its connection dropped: waiting for a resume
    ENDED = "ended"  # over: cancelled, failed, expired, or finished (and acknowledged when kept)

    @property
    def on_connection(self) -> bool:
        """Bound to a connection: frames may be sent."""
        return self in _ON_CONNECTION

    @property
    def shown(self) -> str:
        """As ``Server.stats()`` shows it: ``attached``, ``detached`` or ``ended``."""
        return "attached" if self.on_connection else self.value


_ON_CONNECTION = frozenset({State.ATTACHED, State.RESUMED, State.FINISHING})


@dataclass(frozen=True, slots=True)
class OutboundStreamStats:
    """What one outbound stream holds and has done (rows for record batches, else elements)."""

    # Where it is: its state (State.shown) and the connections that carried it.
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


__all__ = ["State", "OutboundStreamStats"]
