"""What the hub does with a record batch a commit offers, decided against the ledger: pure functions.

The hub runs them under its lock and does what they say (its I/O, the ledger's change, the log
line); they read the ledger's line of the batch's partition and never change it. The cases, one
row each, walked by tests/delivery/test_hub_decisions.py:

=====================================================  ==========  ========  ============================
the record batch, against the partition's ledger line  verdict     ledger    what the hub does
=====================================================  ==========  ========  ============================
a batch older than the ledger's                        OLDER       KEEP      answers duplicate, warns
the ledger's batch, every row delivered, none queued   DUPLICATE   KEEP      answers duplicate
(not open-ended)
the ledger's batch, rows of it still queued or not     SKIP/QUEUE  KEEP      delivers what is new
yet delivered (a retry resumes at the first row not
delivered)
the ledger's open-ended epoch (run again, or more      SKIP/QUEUE  REOPEN    its total grows; a new
rows of it)                                                                  attempt counts the carried
                                                                             rows as delivered again
a batch after the ledger's                             SKIP/QUEUE  BEGIN     the ledger moves on (says
                                                                             so when the last was cut
                                                                             off: :class:`MovedOn`)
rows before this record batch neither delivered nor    GAP         (any)     refuses the commit
queued
=====================================================  ==========  ========  ============================

Within a batch the hub goes on with (not OLDER/DUPLICATE), the rows count against the first row not
yet delivered or queued: all below it is SKIP (the commit sends its next record batch), a start
beyond it a GAP, otherwise QUEUE from it (a record batch reaching below it is trimmed).

Two more decisions follow a batch's rows out: :func:`taken` (the ledger line once rows reached
``on_next``) and :func:`answer` (what a commit that sent everything is answered, an open-ended epoch's
attempt settled first); tables of their own in the same test.
"""

from __future__ import annotations

import dataclasses
import enum

from .ledger import Entry


class Verdict(enum.Enum):
    """What becomes of the offered record batch."""

    OLDER = "older"  # older than the ledger's batch (a late attempt, a checkpoint behind the ledger): duplicate
    DUPLICATE = "duplicate"  # the ledger's batch, wholly delivered: the commit is answered duplicate
    SKIP = "skip"  # its rows were all delivered or queued: the commit sends its next record batch
    QUEUE = "queue"  # rows from Decision.first_row on are new: queued for the Subscriber
    GAP = "gap"  # rows before it are missing: the commit sent its record batches out of order


class LedgerStep(enum.Enum):
    """How the partition's ledger line changes before the rows are counted."""

    KEEP = "keep"  # the ledger's own batch (or one never delivered): nothing changes
    REOPEN = "reopen"  # the ledger's open-ended epoch: its total grows with the rows sent (Entry.reopen)
    BEGIN = "begin"  # a batch after the ledger's: the ledger moves on to it (Entry.begin)

    def apply(self, line: Entry, offered: Offered) -> None:
        """Change ``line`` as this step says (the hub on the ledger; :func:`decide` on a copy)."""
        if self is LedgerStep.REOPEN:
            line.reopen(offered.total)
        elif self is LedgerStep.BEGIN:
            line.begin(offered.batch_id, offered.total, offered.open_ended)


class MovedOn(enum.Enum):
    """What became of the ledger's batch when a later one begins (what the hub logs)."""

    NOTHING = "nothing"  # it was delivered whole, or no later batch begins
    CUT_OFF = "cut off"  # cut off mid-way and Spark moved on without retrying it: its other rows are lost (warning)
    CARRIED = "carried"  # an open-ended epoch ran again without rows here: its rows are the next epoch's first


@dataclasses.dataclass(frozen=True, slots=True)
class Offered:
    """A record batch's identity: its micro-batch (epoch), its first row and row count, the batch's total
    (an open-ended epoch's: this record batch's end) and whether the epoch is open-ended."""

    batch_id: int
    start: int
    rows: int
    total: int
    open_ended: bool = False

    @property
    def end(self) -> int:
        return self.start + self.rows


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    """What the hub does with an offered record batch (see the module's table)."""

    verdict: Verdict
    step: LedgerStep = LedgerStep.KEEP
    moved: MovedOn = MovedOn.NOTHING
    first_row: int = 0  # QUEUE: the first row to queue; GAP: the first row missing


def decide(line: Entry, offered: Offered, queued_to: int | None) -> Decision:
    """The decision for ``offered`` against ``line`` (its partition's ledger line, not changed);
    ``queued_to``: the first row not yet queued of the partition (None: nothing of it is queued)."""
    if offered.batch_id < line.batch_id:
        return Decision(Verdict.OLDER)
    if offered.batch_id == line.batch_id and _delivered_whole(line, offered, queued_to):
        return Decision(Verdict.DUPLICATE)
    step = _step(line, offered)
    moved = _moved_on(line, offered) if step is LedgerStep.BEGIN else MovedOn.NOTHING
    after = line.copy()
    step.apply(after, offered)
    verdict, first = _rows(offered, after.rows if queued_to is None else queued_to)
    return Decision(verdict, step, moved, first)


def _delivered_whole(line: Entry, offered: Offered, queued_to: int | None) -> bool:
    # An open-ended epoch run again may go further than before: never a duplicate as a whole.
    return not offered.open_ended and line.complete and queued_to is None


def _step(line: Entry, offered: Offered) -> LedgerStep:
    if offered.batch_id > line.batch_id:
        return LedgerStep.BEGIN
    return LedgerStep.REOPEN if offered.open_ended else LedgerStep.KEEP


def _moved_on(line: Entry, offered: Offered) -> MovedOn:
    if offered.open_ended and not line.ended:  # an attempt cut off: Spark ran the epoch again without rows here
        return MovedOn.CARRIED if line.rows else MovedOn.NOTHING
    return MovedOn.NOTHING if line.complete else MovedOn.CUT_OFF


def _rows(offered: Offered, expect: int) -> tuple[Verdict, int]:
    """The rows of ``offered`` against ``expect``, the first row neither delivered nor queued."""
    if offered.end <= expect:
        return Verdict.SKIP, 0
    if offered.start > expect:
        return Verdict.GAP, expect
    return Verdict.QUEUE, max(offered.start, expect)


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    """What a commit that sent everything is answered once its rows were taken, and how its partition's
    ledger line settles first (``settle``: this run's attempt of an open-ended epoch ended after that
    many rows, :meth:`Entry.settle`; None: the line stays)."""

    settle: int | None
    status: str  # "delivered", or "incomplete" when rows of the batch never reached the Subscriber
    batch_id: int
    rows: int  # the batch's total
    delivered: int


def answer(line: Entry, last: Offered | None) -> Answer:
    """The answer to a commit whose last record batch was ``last`` (None: it sent none, an empty
    micro-batch), against its partition's ledger line (not changed)."""
    if last is None:
        return Answer(None, "delivered", -1, 0, 0)
    settle = last.end if last.open_ended and last.batch_id == line.batch_id else None
    after = line.copy()
    if settle is not None:
        after.settle(settle)
    status = "delivered" if after.complete else "incomplete"
    return Answer(settle, status, after.batch_id, after.total, after.rows)


def taken(line: Entry, batch_id: int, upto: int) -> int | None:
    """The line's delivered rows once the rows of ``batch_id`` before row ``upto`` reached ``on_next``;
    None when the line moved on to a newer batch (a newer commit's) and stays."""
    return upto if line.batch_id == batch_id else None


def delivered_ahead(line: Entry, batch_id: int, next_row: int) -> int | None:
    """Where the drain resumes a queued record batch of ``batch_id`` about to hand out ``next_row``: the
    ledger's delivered rows when they are past it (a superseded commit's drain counted them in after the
    newer commit queued from where the ledger stood), else None (nothing to trim)."""
    if line.batch_id != batch_id or line.rows <= next_row:
        return None
    return line.rows


__all__ = [
    "Answer",
    "Decision",
    "LedgerStep",
    "MovedOn",
    "Offered",
    "Verdict",
    "answer",
    "decide",
    "delivered_ahead",
    "taken",
]
