"""The hub's decisions against its ledger (rs_spark/delivery/decide.py) walked as tables: one row per case,
the partition's ledger line and the record batch offered in, the decision out; then the rows taken and a
finished commit's answer, each a table; then properties over any line and batch."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rs_spark.delivery.decide import (
    Answer,
    Decision,
    LedgerStep,
    MovedOn,
    Offered,
    Verdict,
    answer,
    decide,
    delivered_ahead,
    taken,
)
from rs_spark.delivery.ledger import Entry

# One row a case: the partition's ledger line | the record batch offered | the first row of the
# partition not yet queued ("-": nothing queued) | the decision | the case. T/F: true/false.
#
# ledger line:  batch rows total carry ended     offered:  batch start rows total open-ended
TABLE = """
-1  0  0 0 T | 0 0  5  5 F | -  | QUEUE     BEGIN  NOTHING 0 | the first batch of a new ledger
 5 10 10 0 T | 6 0 10 10 F | -  | QUEUE     BEGIN  NOTHING 0 | a batch after one delivered whole
 5  4 10 0 T | 6 0 10 10 F | -  | QUEUE     BEGIN  CUT_OFF 0 | a batch after one cut off and not retried
 5 10 10 0 T | 6 3  7 10 F | -  | GAP       BEGIN  NOTHING 0 | a batch after the ledger's, its first rows missing
 5 10 10 0 T | 5 0 10 10 F | -  | DUPLICATE KEEP   NOTHING 0 | the ledger's batch again, delivered whole: a replay
 5 10 10 0 T | 4 0 10 10 F | -  | OLDER     KEEP   NOTHING 0 | an older batch: a late attempt, or a checkpoint behind
 5  4 10 0 T | 3 0  2  2 F | -  | OLDER     KEEP   NOTHING 0 | an older batch, the ledger's own one unfinished
 5  4 10 0 T | 5 0 10 10 F | -  | QUEUE     KEEP   NOTHING 4 | a cut-off batch retried: from the first row not delivered
 5  4 10 0 T | 5 4  6 10 F | -  | QUEUE     KEEP   NOTHING 4 | a retry's record batch from the first row not delivered
 5  4 10 0 T | 5 0  3 10 F | -  | SKIP      KEEP   NOTHING 0 | a retry's record batch delivered whole before
 5  4 10 0 T | 5 6  4 10 F | -  | GAP       KEEP   NOTHING 4 | a retry's record batch beyond the first row not delivered
 5 10 10 0 T | 5 0 10 10 F | 10 | SKIP      KEEP   NOTHING 0 | the ledger's batch delivered whole, rows of it queued
 5  4 10 0 T | 5 0  8 10 F | 6  | QUEUE     KEEP   NOTHING 6 | rows a superseded commit queued count as sent
 5  4 10 0 T | 5 6  4 10 F | 6  | QUEUE     KEEP   NOTHING 6 | a record batch the queue reaches: no gap
 7  3  3 0 F | 7 3  2  5 T | -  | QUEUE     REOPEN NOTHING 3 | more rows of the epoch under way
 7  3  3 0 F | 7 3  0  3 T | -  | SKIP      REOPEN NOTHING 0 | an empty record batch naming the epoch under way
 7  5  5 0 T | 7 0  5  5 T | -  | SKIP      REOPEN NOTHING 0 | an epoch delivered whole run again: never a duplicate
 7  3  3 2 T | 7 4  3  7 T | -  | QUEUE     REOPEN NOTHING 5 | an epoch run again after an attempt ended: carry counts
 7  3  3 2 T | 7 0  4  4 T | -  | SKIP      REOPEN NOTHING 0 | an epoch run again, its record batch within the carry
 7  3  3 2 T | 8 0  4  4 T | -  | QUEUE     BEGIN  NOTHING 2 | the next epoch after an attempt that ended shorter
 7  3  3 0 F | 8 0  5  5 T | -  | QUEUE     BEGIN  CARRIED 3 | the next epoch after an attempt cut off: its rows carried
 7  0  0 0 F | 8 0  2  2 T | -  | QUEUE     BEGIN  NOTHING 0 | the next epoch after an attempt cut off before any row
 7  3  3 0 F | 6 0  3  3 T | -  | OLDER     KEEP   NOTHING 0 | an older epoch
"""


def _row(text: str) -> tuple[tuple[int, int, int, int, bool], Offered, int | None, Decision, str]:
    line, offered, queued, decision, case = (part.split() for part in text.split("|", 4))
    verdict, step, moved, first = decision
    return (
        (int(line[0]), int(line[1]), int(line[2]), int(line[3]), line[4] == "T"),
        Offered(*map(int, offered[:4]), offered[4] == "T"),
        None if queued == ["-"] else int(queued[0]),
        Decision(Verdict[verdict], LedgerStep[step], MovedOn[moved], int(first)),
        " ".join(case),
    )


ROWS = [_row(text) for text in TABLE.strip().splitlines()]


def test_the_table_has_every_verdict_step_and_moved_on():
    decisions = [row[3] for row in ROWS]
    assert {d.verdict for d in decisions} == set(Verdict)
    assert {d.step for d in decisions} == set(LedgerStep)
    assert {d.moved for d in decisions} == set(MovedOn)


@pytest.mark.parametrize(("line", "offered", "queued_to", "expected"), [r[:4] for r in ROWS], ids=[r[4] for r in ROWS])
def test_each_case_of_the_table_decides_as_written(line, offered, queued_to, expected):
    entry = Entry(*line)
    assert decide(entry, offered, queued_to) == expected
    assert _fields(entry) == line  # decided against, never changed


# (case, ledger line, batch_id of the queued record batch, the row the drain hands out next, expected)
AHEAD = [
    ("a newer batch in the ledger: nothing to trim", (6, 2, 10, 0, True), 5, 0, None),
    ("the ledger behind the drain", (5, 2, 10, 0, True), 5, 4, None),
    ("the ledger at the drain's row", (5, 4, 10, 0, True), 5, 4, None),
    ("a superseded commit's drain counted rows past it", (5, 7, 10, 0, True), 5, 4, 7),
]


@pytest.mark.parametrize(
    ("line", "batch_id", "next_row", "expected"), [r[1:] for r in AHEAD], ids=[r[0] for r in AHEAD]
)
def test_the_drain_trims_what_the_ledger_says_was_delivered(line, batch_id, next_row, expected):
    assert delivered_ahead(Entry(*line), batch_id, next_row) == expected


# (case, ledger line, the commit's last record batch (None: it sent none), expected answer)
ANSWERS = [
    ("an empty micro-batch: nothing sent", (5, 10, 10, 0, True), None, Answer(None, "delivered", -1, 0, 0)),
    ("a batch delivered whole", (5, 10, 10, 0, True), Offered(5, 4, 6, 10), Answer(None, "delivered", 5, 10, 10)),
    ("a batch cut short", (5, 4, 10, 0, True), Offered(5, 0, 4, 10), Answer(None, "incomplete", 5, 10, 4)),
    ("a duplicate's late answer", (6, 3, 3, 0, True), Offered(5, 0, 10, 10), Answer(None, "delivered", 6, 3, 3)),
    ("an epoch's attempt ends", (7, 3, 5, 0, False), Offered(7, 3, 0, 3, True), Answer(3, "delivered", 7, 3, 3)),
    (
        "an epoch ends shorter than an earlier attempt: the rest carried",
        (7, 5, 5, 0, False),
        Offered(7, 0, 3, 3, True),
        Answer(3, "delivered", 7, 3, 3),
    ),
    (
        "an attempt of an older epoch: nothing settles",
        (8, 2, 2, 0, False),
        Offered(7, 0, 3, 3, True),
        Answer(None, "delivered", 8, 2, 2),
    ),
]


@pytest.mark.parametrize(("line", "last", "expected"), [r[1:] for r in ANSWERS], ids=[r[0] for r in ANSWERS])
def test_a_commit_that_sent_everything_is_answered_as_the_table_says(line, last, expected):
    entry = Entry(*line)
    assert answer(entry, last) == expected
    assert _fields(entry) == line  # decided against, never changed


# (case, ledger line, batch_id of the rows taken, the row they reached, the line's delivered rows after)
TAKEN = [
    ("rows of the ledger's batch", (5, 2, 10, 0, True), 5, 6, 6),
    ("a superseded commit's rows after the ledger moved on", (6, 2, 10, 0, True), 5, 8, None),
]


@pytest.mark.parametrize(("line", "batch_id", "upto", "expected"), [r[1:] for r in TAKEN], ids=[r[0] for r in TAKEN])
def test_rows_taken_count_into_the_ledger_only_for_its_batch(line, batch_id, upto, expected):
    assert taken(Entry(*line), batch_id, upto) == expected


def _fields(e: Entry) -> tuple[int, int, int, int, bool]:
    return (e.batch_id, e.rows, e.total, e.carry, e.ended)


@st.composite
def _lines(draw: st.DrawFn) -> Entry:
    total = draw(st.integers(0, 12))
    rows, carry = draw(st.integers(0, total)), draw(st.integers(0, 4))
    return Entry(draw(st.integers(-1, 6)), rows, total, carry, draw(st.booleans()))


@st.composite
def _offers(draw: st.DrawFn) -> Offered:
    start, rows, open_ended = draw(st.integers(0, 12)), draw(st.integers(0, 6)), draw(st.booleans())
    total = start + rows if open_ended else draw(st.integers(start + rows, 20))
    return Offered(draw(st.integers(0, 7)), start, rows, total, open_ended)


@settings(max_examples=400, deadline=None)
@given(_lines(), _offers(), st.none() | st.integers(0, 14))
def test_any_decision_keeps_the_ledger_and_queues_only_new_rows_within_the_batch(line, offered, queued_to):
    before = _fields(line)
    d = decide(line, offered, queued_to)
    assert _fields(line) == before
    assert (d.verdict is Verdict.OLDER) == (offered.batch_id < line.batch_id)
    assert (d.step is LedgerStep.BEGIN) == (offered.batch_id > line.batch_id and d.verdict is not Verdict.OLDER)
    if d.verdict is Verdict.DUPLICATE:
        assert not offered.open_ended and queued_to is None and offered.batch_id == line.batch_id
    if d.verdict is Verdict.QUEUE:
        assert offered.start <= d.first_row < offered.end
        assert queued_to is None or d.first_row == max(offered.start, queued_to)
    if d.verdict is Verdict.GAP:
        assert d.first_row < offered.start
