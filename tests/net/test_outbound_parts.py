"""The parts an outbound stream is made of: its credit pump and its stats record (its states: test_stream_states.py)."""

import dataclasses

import pytest

from rs_spark.net.protocol.codecs import make_codec
from rs_spark.net.protocol.credit import ARROW_ASK, CHUNK, CreditPump
from rs_spark.net.protocol.outbound import OutboundStream
from rs_spark.net.protocol.stream_state import OutboundStreamStats
from rs_spark.net.zero_loss.resume_server import StreamStats, fields_of
from rs_spark.net.zero_loss.retaining_states import RetainingState
from rs_spark.net.zero_loss.retaining_stream import RetainingStream, RetainingStreamStats
from rs_spark.net.zero_loss.retention import Retention
from rs_spark.streams.demand import MAX_DEMAND


def _room(n):
    return lambda asked: max(0, n - asked)


def test_the_pump_asks_for_what_the_credit_calls_for_in_chunks():
    p = CreditPump(rows=False)
    p.grant(5000)
    assert p.want(_room(10**9), empty=True) == CHUNK
    p.asked_for(CHUNK)
    assert p.want(_room(10**9), empty=True) == 0  # more than half a chunk still on its way
    assert not p.wants_more(unsent=0)
    for _ in range(CHUNK // 2):
        assert p.received()
    assert p.wants_more(unsent=0)
    assert p.want(_room(10**9), empty=True) == CHUNK - CHUNK // 2


def test_the_pump_asks_only_for_what_the_queue_has_room_for():
    p = CreditPump(rows=False)
    p.grant(100)
    assert p.want(_room(7), empty=False) == 7
    assert p.want(_room(0), empty=True) == 0


def test_the_pump_counts_rows_and_sizes_arrow_requests_from_the_last_batch():
    p = CreditPump(rows=True)
    p.grant(1000)
    assert p.want(_room(10**9), empty=True) == 1  # no batch seen yet: one
    p.asked_for(1)
    assert p.received()
    p.sized(10)
    assert p.want(_room(10**9), empty=True) == ARROW_ASK  # 1000 rows of credit at 10 rows a batch, at most 16


def test_rule_1_1_an_element_not_asked_for_is_seen_by_the_pump():
    p = CreditPump(rows=False)
    assert not p.received()


def test_unbounded_credit_is_never_spent():
    p = CreditPump(rows=False)
    p.grant(MAX_DEMAND)
    p.spend(10)
    assert p.credit == MAX_DEMAND


def test_one_drain_is_queued_at_a_time_and_a_running_drain_lets_the_next_queue():
    p = CreditPump(rows=False)
    assert p.claim()
    assert not p.claim()  # a signal while a drain is queued folds into it
    p.draining()
    assert p.claim()


def test_stats_are_frozen_records_and_a_retaining_streams_show_the_documented_keys():
    plain = OutboundStream(make_codec("json"), "test stream")
    s = plain.stats()
    assert isinstance(s, OutboundStreamStats)
    assert (s.state, s.held_records, s.sent_position) == ("attached", 0, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.state = "ended"  # type: ignore[misc]
    kept = RetainingStream(make_codec("json"), "test kept stream", Retention())
    try:
        k = kept.stats()
        assert isinstance(k, RetainingStreamStats) and isinstance(k, OutboundStreamStats)
        shown = StreamStats(**fields_of(k), endpoint="e", window=1.0)
        assert set(shown.as_dict()) == {
            "endpoint", "window", "retainedRecords", "retainedBytes", "firstPosition", "sentPosition", "endPosition",
            "state", "ackedPosition", "resumes", "attaches", "resentRecords", "lostRecords", "releasedRecords",
            "afterEnd",
        }  # fmt: skip
    finally:
        kept.expire("the test is over")
    assert kept.ended


def test_a_detached_retaining_stream_whose_publisher_ended_ends_once_every_row_is_acknowledged():
    """No reader waits for its end (its connection closed), so the acknowledgement of its last row
    (from a reader on another connection) is all it waits for; while its publisher still runs it
    stays, however much is acknowledged."""
    from rs_spark import streams as rs
    from tests.waits import wait_until

    def detached(publisher):
        kept = RetainingStream(make_codec("json"), "test kept stream", Retention())
        kept.preload([(0, 1, b"0"), (1, 1, b"1")], 0)  # as read back from a spill: detached, two rows kept
        kept.subscribe_upstream(publisher)
        return kept

    running = detached(rs.range_(10))  # never asked (no reader): it does not end
    try:
        assert running.acknowledge(2) == 2 and running.state is RetainingState.DETACHED
    finally:
        running.expire("the test is over")
    ended = detached(rs.empty())
    assert ended.acknowledge(1) == 1 and not ended.ended
    wait_until(lambda: ended.acknowledge(2) >= 0 and ended.ended, what="the stream to end at its last acknowledgement")
    assert ended.error is None and ended.stats().held_records == 0


# -- whether the publisher pauses (AvailableNow's live edge, measured where it runs) ----------------
# A pump's publisher, asked for n elements at t=0 (askN; wait = 0.5 s): what it does, then the
# seconds until it has owed rows `wait` seconds at "now" (0: at its edge; none: it owes none).
# events (time:what)                      now    ->  left
OWING = """
-                                         0.0        none
ask4:0                                    0.3        0.2
ask4:0 got:0.2                            0.6        0.1
ask4:0 got:0.1                            0.7        0
ask100:0 got:4.7 got:4.8 got:4.9          4.95       0.05
ask100:0 got:4.7 got:4.8 got:4.9          5.1        0
ask4:0 returned:1.0                       1.2        0.3
ask4:0 returned:1.0                       1.6        0
ask4:0 got:0 got:0 got:0 got:0 returned:0 9.0        none
ask4:0 got:0 got:0 got:0 returned:0.1     0.3        0.3
"""


@pytest.mark.parametrize("row", [r.split() for r in OWING.strip().splitlines()], ids=" ".join)
def test_owing_counts_from_when_request_returned_and_inside_it_only_a_quiet_or_blocking_publisher(row):
    *events, now, want = row
    p = CreditPump(rows=False)
    for e in events:
        if e == "-":
            continue
        what, at = e.split(":")
        if what.startswith("ask"):
            p.asked_for(int(what[3:]), float(at))
        else:
            {"got": p.received, "returned": p.returned}[what](float(at))
    left = p.owing(float(now), 0.5)
    assert (None if left is None else round(left, 6)) == (None if want == "none" else float(want))
