"""An outbound stream's one state, moved only by its table: each table written out here, walked
row by row, and every (state, event) pair it has no row for leaves the state where it is."""

import itertools

import pytest

from rs_spark.net.protocol.stream_state import PLAIN, Event, State
from rs_spark.net.zero_loss.retaining_states import RETAINING, RetainEvent, RetainingState

P, R, E, K = State, RetainingState, Event, RetainEvent

# (state, event) -> state: a plain stream ends with its connection.
PLAIN_ROWS = [
    (P.UNBOUND, E.ATTACH, P.ATTACHED),
    (P.UNBOUND_ENDING, E.ATTACH, P.ENDING),
    (P.UNBOUND, E.PUBLISHER_ENDED, P.UNBOUND_ENDING),
    (P.ATTACHED, E.PUBLISHER_ENDED, P.ENDING),
    (P.ENDING, E.END_SENT, P.ENDED),
    (P.UNBOUND, E.END, P.ENDED),
    (P.UNBOUND_ENDING, E.END, P.ENDED),
    (P.ATTACHED, E.END, P.ENDED),
    (P.ENDING, E.END, P.ENDED),
]

# (state, event) -> state: a retaining stream moves as a plain one (its states of the same names),
# and survives its connection and waits for acknowledgements.
RETAINING_ROWS = [
    *[(R[s.name], e, R[to.name]) for s, e, to in PLAIN_ROWS],
    (R.UNBOUND, K.PRELOADED, R.DETACHED),
    (R.RESUMED, E.PUBLISHER_ENDED, R.RESUMED_ENDING),
    (R.DETACHED, E.PUBLISHER_ENDED, R.DETACHED_ENDING),
    (R.RESUMED, E.ASKED, R.ATTACHED),
    (R.RESUMED_ENDING, E.ASKED, R.ENDING),
    (R.ENDING, E.END_SENT_HELD, R.FINISHING),
    (R.UNBOUND, K.RESUMED, R.RESUMED),
    (R.ATTACHED, K.RESUMED, R.RESUMED),
    (R.RESUMED, K.RESUMED, R.RESUMED),
    (R.DETACHED, K.RESUMED, R.RESUMED),
    (R.UNBOUND_ENDING, K.RESUMED, R.RESUMED_ENDING),
    (R.ENDING, K.RESUMED, R.RESUMED_ENDING),
    (R.RESUMED_ENDING, K.RESUMED, R.RESUMED_ENDING),
    (R.DETACHED_ENDING, K.RESUMED, R.RESUMED_ENDING),
    (R.FINISHING, K.RESUMED, R.RESUMED_ENDING),
    (R.UNBOUND, K.DETACHED, R.DETACHED),
    (R.ATTACHED, K.DETACHED, R.DETACHED),
    (R.RESUMED, K.DETACHED, R.DETACHED),
    (R.DETACHED, K.DETACHED, R.DETACHED),
    (R.UNBOUND_ENDING, K.DETACHED, R.DETACHED_ENDING),
    (R.ENDING, K.DETACHED, R.DETACHED_ENDING),
    (R.RESUMED_ENDING, K.DETACHED, R.DETACHED_ENDING),
    (R.DETACHED_ENDING, K.DETACHED, R.DETACHED_ENDING),
    (R.FINISHING, K.DETACHED, R.DETACHED_ENDING),
    *[(s, E.END, R.ENDED) for s in (R.RESUMED, R.RESUMED_ENDING, R.DETACHED, R.DETACHED_ENDING, R.FINISHING)],
]

# state: on_connection, publisher_ended, sends_end, takes_frames, ended, shown
PLAIN_TRAITS = {
    P.UNBOUND: (False, False, False, True, False, "attached"),
    P.UNBOUND_ENDING: (False, True, False, True, False, "attached"),
    P.ATTACHED: (True, False, False, True, False, "attached"),
    P.ENDING: (True, True, True, True, False, "attached"),
    P.ENDED: (False, True, False, True, True, "ended"),
}
RETAINING_TRAITS = {
    **{R[s.name]: traits for s, traits in PLAIN_TRAITS.items()},
    R.RESUMED: (True, False, False, True, False, "attached"),
    R.RESUMED_ENDING: (True, True, False, True, False, "attached"),
    R.DETACHED: (False, False, False, True, False, "detached"),
    R.DETACHED_ENDING: (False, True, False, True, False, "detached"),
    R.FINISHING: (True, True, False, False, False, "attached"),
    R.ENDED: (False, True, False, True, True, "ended"),
}


@pytest.mark.parametrize(
    "table,rows,states,events",
    [(PLAIN, PLAIN_ROWS, P, list(E)), (RETAINING, RETAINING_ROWS, R, [*E, *K])],
    ids=["plain", "retaining"],
)
def test_each_table_is_its_written_rows_and_nothing_else_moves(table, rows, states, events):
    written = {(s, e): to for s, e, to in rows}
    assert len(written) == len(rows), "a (state, event) pair written twice"
    for state, event in itertools.product(states, events):
        assert table.next(state, event) is written.get((state, event)), (state, event)
    assert dict(table.rows) == written


@pytest.mark.parametrize("table,start", [(PLAIN, P.UNBOUND), (RETAINING, R.UNBOUND)], ids=["plain", "retaining"])
def test_a_stream_starts_unbound(table, start):
    assert table.start is start


@pytest.mark.parametrize("traits", [PLAIN_TRAITS, RETAINING_TRAITS], ids=["plain", "retaining"])
def test_what_each_state_says(traits):
    for state, want in traits.items():
        got = (
            state.on_connection,
            state.publisher_ended,
            state.sends_end,
            state.takes_frames,
            state.ended,
            state.shown,
        )
        assert got == want, state
    assert set(traits) == set(type(next(iter(traits))))


def test_every_state_is_reached_and_only_the_end_is_left_by_nothing():
    for table, states, end in ((PLAIN, P, P.ENDED), (RETAINING, R, R.ENDED)):
        reached = {table.start} | set(table.rows.values())
        assert reached == set(states)
        left = {s for s, _ in table.rows}
        assert set(states) - left == {end}
