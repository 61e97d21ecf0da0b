"""The planner's table: what a micro-batch reads, for every trigger x limit x publisher x retention x
restart, each row's decision written down; and properties over many more views (hypothesis).

The planner (rs_spark/spark/source/planner.py) is a pure function: these tests need no Spark session,
no clock and no thread. The Spark-level matrix (tests/spark/test_triggers.py) runs each trigger x
mode for real.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.streaming.datasource import ReadAllAvailable

from rs_spark.spark.source.options import SourceOptions
from rs_spark.spark.source.planner import (
    Action,
    Limits,
    Part,
    Said,
    Stream,
    Trigger,
    View,
    ask,
    available_now_target,
    decide,
    share,
)
from rs_spark.spark.source.read_limits import default_read_limit, limits_of

S = 1000  # where the micro-batch starts

# The publisher, as the reader sees it when Spark asks: its stream's state and the rows held beyond S.
PUBLISHERS = {
    "finite": (Stream.COMPLETED, 250),  # completed, 250 rows not planned yet
    "drained": (Stream.COMPLETED, 0),  # completed, every row planned
    "busy": (Stream.OPEN, 5000),  # endless and busy: more than any limit
    "slow": (Stream.OPEN, 20),  # a few rows since the last batch
    "quiet": (Stream.OPEN, 0),  # bursty, between bursts (or an endpoint at its retention bound)
    "failing": (Stream.FAILED, 30),  # on_error after 30 rows not planned yet
    "broke": (Stream.FAILED, 0),  # broke a rule (or failed) after its rows were planned
    "opening": (Stream.OPENING, 0),  # subscribed, no on_subscribe yet
}
# AvailableNow's target per publisher, beyond S: the live edge the last ask found (finite, drained,
# failing, broke: the stream ended; slow, quiet: fewer rows than asked); none yet for the busy one
# (every ask filled) and the opening one.
TARGET = {"finite": 250, "drained": 0, "busy": None, "slow": 20, "quiet": 0, "failing": 30, "broke": 0, "opening": None}

LIMITS = {
    "none": Limits(),  # no limit option: ReadAllAvailable
    "max": Limits(max_rows=100),  # maxRecordsPerTrigger=100
    "min": Limits(min_rows=300, max_trigger_delay=1.0),  # minRecordsPerTrigger=300, maxTriggerDelay=1s
}
OPTIONS = {  # the options each limit comes from
    "none": {},
    "max": {"maxRecordsPerTrigger": "100"},
    "min": {"minRecordsPerTrigger": "300", "maxTriggerDelay": "1s"},
}
RETENTION = {
    "room": S,  # Spark committed up to S: the endpoint has room
    "bound": S - 200,  # 200 rows before S not committed: an endpoint at its bound sends nothing more
}

# trigger   limit  publisher  retention  restart   ->  decision [rows]
# (default and processingTime look alike to a source: "stream". Once is "once": Spark passes it
# ReadAllAvailable whatever the limit options say, so its rows are those of "stream none" with the
# options maxRecordsPerTrigger or minRecordsPerTrigger set, and decide as "stream none" does: it
# reads everything held, 5000 rows beyond maxRecordsPerTrigger=100, 20 rows below
# minRecordsPerTrigger=300 without waiting. "once none" would be "stream none" row for row: not
# written down.)
TABLE = """
stream  none  finite   room   -  PLAN 250
stream  none  finite   bound  -  PLAN 250
stream  none  drained  room   -  WAIT
stream  none  drained  bound  -  RELEASE
stream  none  busy     room   -  PLAN 5000
stream  none  busy     bound  -  PLAN 5000
stream  none  slow     room   -  PLAN 20
stream  none  slow     bound  -  PLAN 20
stream  none  quiet    room   -  WAIT
stream  none  quiet    bound  -  RELEASE
stream  none  failing  room   -  PLAN 30
stream  none  failing  bound  -  PLAN 30
stream  none  broke    room   -  FAIL
stream  none  broke    bound  -  FAIL
stream  none  opening  room   -  AWAIT_OPEN
stream  none  opening  bound  -  RELEASE
stream  max   finite   room   -  PLAN 100
stream  max   finite   bound  -  PLAN 100
stream  max   drained  room   -  WAIT
stream  max   drained  bound  -  RELEASE
stream  max   busy     room   -  PLAN 100
stream  max   busy     bound  -  PLAN 100
stream  max   slow     room   -  PLAN 20
stream  max   slow     bound  -  PLAN 20
stream  max   quiet    room   -  WAIT
stream  max   quiet    bound  -  RELEASE
stream  max   failing  room   -  PLAN 30
stream  max   failing  bound  -  PLAN 30
stream  max   broke    room   -  FAIL
stream  max   broke    bound  -  FAIL
stream  max   opening  room   -  AWAIT_OPEN
stream  max   opening  bound  -  RELEASE
stream  min   finite   room   -  PLAN 250
stream  min   finite   bound  -  PLAN 250
stream  min   drained  room   -  WAIT
stream  min   drained  bound  -  RELEASE
stream  min   busy     room   -  PLAN 5000
stream  min   busy     bound  -  PLAN 5000
stream  min   slow     room   -  WAIT
stream  min   slow     bound  -  RELEASE
stream  min   quiet    room   -  WAIT
stream  min   quiet    bound  -  RELEASE
stream  min   failing  room   -  PLAN 30
stream  min   failing  bound  -  PLAN 30
stream  min   broke    room   -  FAIL
stream  min   broke    bound  -  FAIL
stream  min   opening  room   -  AWAIT_OPEN
stream  min   opening  bound  -  RELEASE
once    max   finite   room   -  PLAN 250
once    max   finite   bound  -  PLAN 250
once    max   drained  room   -  WAIT
once    max   drained  bound  -  RELEASE
once    max   busy     room   -  PLAN 5000
once    max   busy     bound  -  PLAN 5000
once    max   slow     room   -  PLAN 20
once    max   slow     bound  -  PLAN 20
once    max   quiet    room   -  WAIT
once    max   quiet    bound  -  RELEASE
once    max   failing  room   -  PLAN 30
once    max   failing  bound  -  PLAN 30
once    max   broke    room   -  FAIL
once    max   broke    bound  -  FAIL
once    max   opening  room   -  AWAIT_OPEN
once    max   opening  bound  -  RELEASE
once    min   finite   room   -  PLAN 250
once    min   finite   bound  -  PLAN 250
once    min   drained  room   -  WAIT
once    min   drained  bound  -  RELEASE
once    min   busy     room   -  PLAN 5000
once    min   busy     bound  -  PLAN 5000
once    min   slow     room   -  PLAN 20
once    min   slow     bound  -  PLAN 20
once    min   quiet    room   -  WAIT
once    min   quiet    bound  -  RELEASE
once    min   failing  room   -  PLAN 30
once    min   failing  bound  -  PLAN 30
once    min   broke    room   -  FAIL
once    min   broke    bound  -  FAIL
once    min   opening  room   -  AWAIT_OPEN
once    min   opening  bound  -  RELEASE
now     none  finite   room   -  PLAN 250
now     none  finite   bound  -  PLAN 250
now     none  drained  room   -  END
now     none  drained  bound  -  END
now     none  busy     room   -  PLAN 5000
now     none  busy     bound  -  PLAN 5000
now     none  slow     room   -  PLAN 20
now     none  slow     bound  -  PLAN 20
now     none  quiet    room   -  END
now     none  quiet    bound  -  END
now     none  failing  room   -  PLAN 30
now     none  failing  bound  -  PLAN 30
now     none  broke    room   -  FAIL
now     none  broke    bound  -  FAIL
now     none  opening  room   -  AWAIT_OPEN
now     none  opening  bound  -  AWAIT_OPEN
now     max   finite   room   -  PLAN 100
now     max   finite   bound  -  PLAN 100
now     max   drained  room   -  END
now     max   drained  bound  -  END
now     max   busy     room   -  PLAN 100
now     max   busy     bound  -  PLAN 100
now     max   slow     room   -  PLAN 20
now     max   slow     bound  -  PLAN 20
now     max   quiet    room   -  END
now     max   quiet    bound  -  END
now     max   failing  room   -  PLAN 30
now     max   failing  bound  -  PLAN 30
now     max   broke    room   -  FAIL
now     max   broke    bound  -  FAIL
now     max   opening  room   -  AWAIT_OPEN
now     max   opening  bound  -  AWAIT_OPEN
now     min   finite   room   -  PLAN 250
now     min   finite   bound  -  PLAN 250
now     min   drained  room   -  END
now     min   drained  bound  -  END
now     min   busy     room   -  PLAN 5000
now     min   busy     bound  -  PLAN 5000
now     min   slow     room   -  PLAN 20
now     min   slow     bound  -  PLAN 20
now     min   quiet    room   -  END
now     min   quiet    bound  -  END
now     min   failing  room   -  PLAN 30
now     min   failing  bound  -  PLAN 30
now     min   broke    room   -  FAIL
now     min   broke    bound  -  FAIL
now     min   opening  room   -  AWAIT_OPEN
now     min   opening  bound  -  AWAIT_OPEN
stream  none  busy     room   planned  REPLAY
stream  max   quiet    bound  planned  REPLAY
stream  min   slow     bound  planned  REPLAY
once    max   finite   room   planned  REPLAY
now     max   busy     room   planned  REPLAY
now     none  broke    room   planned  REPLAY
stream  none  busy     room   newkey   RECORD_KEYS
stream  min   quiet    bound  newkey   RECORD_KEYS
once    min   finite   room   newkey   RECORD_KEYS
now     max   busy     room   newkey   RECORD_KEYS
stream  max   quiet    room   gone     START_OVER
now     none  quiet    room   gone     START_OVER
stream  min   slow     room   delayed  PLAN 20
stream  min   slow     bound  delayed  PLAN 20
now     none  finite   room   reached  END
now     max   busy     room   reached  END
now     none  failing  room   reached  END
now     none  busy     room   capped   PLAN 100
now     max   busy     room   capped   PLAN 100
"""
# Restart column: "-" none; "planned": a micro-batch from S was planned (logged) before a restart
# and not run; "newkey": the checkpoint does not name the stream yet; "gone": the endpoint cannot
# resume the stream; "delayed": maxTriggerDelay passed; "reached": AvailableNow's target is S;
# "capped": availableNowMaxRecords put the target 100 rows after S.


def _limits(trigger: str, limit: str) -> Limits:
    """The micro-batch's limits as the reader makes them (read_limits.limits_of) from the read limit
    Spark passes: the source's default one (from the options), or ReadAllAvailable under Once."""
    opts = SourceOptions.parse({"publisher": "tests.spark.publishers:numbers", **OPTIONS[limit]})
    spark_limit = ReadAllAvailable() if trigger == "once" else default_read_limit(opts)
    return limits_of(spark_limit, opts)


def _view(trigger: str, limit: str, publisher: str, retention: str, restart: str) -> View:
    stream, rows = PUBLISHERS[publisher]
    if restart == "gone":
        stream = Stream.GONE
    now = trigger == "now"
    target = None
    if now and restart == "reached":
        target = S
    elif now and restart == "capped":
        target = S + 100
    elif now and TARGET[publisher] is not None:
        target = S + TARGET[publisher]
    part = Part(S, S + rows, RETENTION[retention], stream, target)
    return View(
        {"": part},
        _limits(trigger, limit),
        Trigger.AVAILABLE_NOW if now else Trigger.STREAMING,
        waited=2.0 if restart == "delayed" else 0.5,
        new_keys=restart == "newkey",
        logged_end=S + 100 if restart == "planned" else None,
    )


ROWS = [line.split() for line in TABLE.strip().splitlines()]


def test_the_limits_are_made_from_spark_s_read_limit_as_the_reader_makes_them():
    for limit, want in LIMITS.items():
        assert _limits("stream", limit) == _limits("now", limit) == want, limit
    once = [_limits("once", limit) for limit in ("max", "min")]
    assert [(lim.max_rows, lim.min_rows) for lim in once] == [(None, None)] * 2, "Once: the options' bounds dropped"


def test_the_table_has_every_trigger_limit_publisher_and_retention():
    walked = {(r[0], r[1], r[2], r[3]) for r in ROWS if r[4] == "-"}
    for trigger, limits in {"stream": LIMITS, "once": ["max", "min"], "now": LIMITS}.items():
        for limit in limits:
            for publisher in PUBLISHERS:
                for retention in RETENTION:
                    assert (trigger, limit, publisher, retention) in walked


@pytest.mark.parametrize("row", ROWS, ids=[" ".join(r[:5]) for r in ROWS])
def test_planner_table(row):
    trigger, limit, publisher, retention, restart, action, *rows = row
    d = decide(_view(trigger, limit, publisher, retention, restart))
    assert d.action is Action[action], d.step
    if rows:
        assert d.rows == int(rows[0]) and d.take == {"": int(rows[0])}


# -- the partitioned reader's cases: several partitions -----------------------------------------------
def test_max_records_per_trigger_is_shared_in_proportion_to_what_each_partition_has():
    assert share(500, {"a": 900, "b": 100}) == {"a": 450, "b": 50}
    assert share(3, {"a": 900, "b": 100}) == {"a": 3, "b": 0}  # largest remainders first
    assert share(1000, {"a": 100, "b": 100}) == {"a": 100, "b": 100}  # all that is there
    assert share(None, {"a": 900, "b": 100}) == {"a": 900, "b": 100}


def test_a_failed_partition_fails_the_query_even_while_others_have_rows():
    parts = {"a": Part(0, 500, 0), "b": Part(40, 40, 40, Stream.FAILED)}
    d = decide(View(parts, Limits(max_rows=100)))
    assert d.action is Action.FAIL and d.parts == ("b",)


def test_partitions_without_rows_are_not_in_the_plan():
    parts = {"a": Part(0, 500, 0), "b": Part(40, 40, 40)}
    assert decide(View(parts, Limits(max_rows=100))).take == {"a": 100}


def test_one_partition_behind_its_commit_releases_although_the_other_is_quiet():
    parts = {"a": Part(10, 10, 10), "b": Part(40, 40, 0)}
    assert decide(View(parts)).action is Action.RELEASE


def test_available_now_ends_only_when_every_partition_reached_its_target():
    a_done = Part(100, 100, 100, target=100)
    assert decide(View({"a": a_done, "b": Part(0, 50, 0, target=50)}, trigger=Trigger.AVAILABLE_NOW)).take == {"b": 50}
    b_done = Part(50, 80, 50, target=50)  # rows that arrived after the target are not read
    assert decide(View({"a": a_done, "b": b_done}, trigger=Trigger.AVAILABLE_NOW)).action is Action.END


def test_a_partition_that_cannot_resume_starts_over_before_anything_is_planned():
    parts = {"a": Part(0, 500, 0), "b": Part(40, 40, 40, Stream.GONE)}
    d = decide(View(parts))
    assert d.action is Action.START_OVER and d.parts == ("b",)


# -- what is asked for before deciding ----------------------------------------------------------------
def test_ask_a_micro_batch_worth_and_under_available_now_wait_for_all_of_it_until_the_targets_are_fixed():
    assert ask(Trigger.STREAMING, Limits(max_rows=100), 1000, False) == ask(Trigger.STREAMING, Limits(100), 1000, True)
    a = ask(Trigger.STREAMING, Limits(max_rows=100), 1000, False)
    assert (a.per_part, a.wait_for, a.edge) == (100, 100, False)
    a = ask(Trigger.STREAMING, Limits(min_rows=300), 1000, False)
    assert (a.per_part, a.wait_for) == (300, 300)
    a = ask(Trigger.STREAMING, Limits(), 1000, False)
    assert (a.per_part, a.wait_for) == (1000, 1)  # everything it may hold; plan what came within pollTimeout
    a = ask(Trigger.AVAILABLE_NOW, Limits(max_rows=100), 1000, False)
    assert (a.per_part, a.wait_for, a.edge) == (100, 100, True)  # all of it: a shortfall is the live edge
    a = ask(Trigger.AVAILABLE_NOW, Limits(), 1000, False)
    assert (a.per_part, a.wait_for, a.edge) == (1000, 1000, True)
    a = ask(Trigger.AVAILABLE_NOW, Limits(max_rows=100), 1000, True)
    assert (a.per_part, a.wait_for, a.edge) == (100, 1, False)  # every target fixed: up to it (readers cut it)


# -- AvailableNow's target: the live edge, or the bound -----------------------------------------------
# The micro-batch starts at S; "held": rows available beyond S after an ask; "owes": whether rows the
# ask asked for did not come within pollTimeout; the run began at "run_start"; "most":
# availableNowMaxRecords. Target: a position, or - (not known yet).
# stream     held  owes  run_start  most  ->  target
EDGE = """
open         100   no    1000       1000  -
open         40    yes   1000       1000  1040
open         0     yes   1000       1000  1000
open         350   no    1000       1000  -
completed    100   no    1000       1000  1100
completed    0     no    1000       1000  1000
failed       30    no    1000       1000  1030
open         100   no    50         1000  1050
open         20    yes   50         1000  1020
open         100   no    0          1000  1000
opening      0     yes   1000       1000  -
"""


@pytest.mark.parametrize("row", [r.split() for r in EDGE.strip().splitlines()], ids=" ".join)
def test_available_now_target_is_the_live_edge_or_the_bound(row):
    stream, held, owes, run_start, most, want = row
    p = Part(S, S + int(held), S, Stream(stream), short=owes == "yes")
    assert available_now_target(p, int(run_start), int(most)) == (None if want == "-" else int(want))


# -- AvailableNow over a slow link or from a busy reader: the endpoint decides, not the reader's clock --
# Every ask below fell short by the reader's clock ("owes" yes), or did not ("no"); "said": the
# endpoint's answer beyond S (position:edge), "-" when it does not answer (an earlier build: the
# reader's own rule) or was not asked. The run began at S, availableNowMaxRecords is "most".
# Target beyond S ("-": none yet) and the decision (Limits(): no read limit).
# stream     held   owes  said        most     ->  target  decision [rows]
SAID = """
open         0      yes   -           1000000      0       END
open         0      yes   5000:no     1000000      -       AWAIT_ROWS
open         300    yes   5000:no     1000000      -       PLAN 300
open         0      yes   20000:yes   1000000      20000   AWAIT_ROWS
open         300    yes   20000:yes   1000000      20000   PLAN 300
open         40     yes   40:yes      1000000      40      PLAN 40
open         0      yes   0:yes       1000000      0       END
open         300    yes   20000:yes   1000         1000    PLAN 300
open         2000   yes   5000:no     1000         1000    PLAN 1000
completed    100    yes   5000:no     1000000      100     PLAN 100
completed    0      yes   5000:no     1000000      0       END
opening      0      yes   -           1000000      -       AWAIT_OPEN
"""
SAID_ROWS = [r.split() for r in SAID.strip().splitlines()]


@pytest.mark.parametrize("row", SAID_ROWS, ids=" ".join)
def test_available_now_ends_where_the_endpoint_says_not_where_the_reader_s_clock_says(row):
    stream, held, owes, said, most, want, action, *rows = row
    answer = None
    if said != "-":
        position, edge = said.split(":")
        answer = Said(S + int(position), edge == "yes")
    p = Part(S, S + int(held), S, Stream(stream), short=owes == "yes", said=answer)
    target = available_now_target(p, S, int(most))
    assert target == (None if want == "-" else S + int(want))
    d = decide(View({"": dataclasses.replace(p, target=target)}, trigger=Trigger.AVAILABLE_NOW))
    assert d.action is Action[action], d.step
    if rows:
        assert d.rows == int(rows[0])


def test_a_partition_whose_rows_are_on_their_way_keeps_the_run_going_while_another_is_at_its_target():
    done = Part(100, 100, 100, target=100)
    due = Part(0, 0, 0, target=50)  # the endpoint said 50 rows are ready: none has come yet
    d = decide(View({"a": done, "b": due}, trigger=Trigger.AVAILABLE_NOW))
    assert d.action is Action.AWAIT_ROWS and d.parts == ("b",)
    failed = dataclasses.replace(due, stream=Stream.FAILED, available=0)  # a stream that ended is not awaited
    assert decide(View({"a": done, "b": failed}, trigger=Trigger.AVAILABLE_NOW)).action is Action.FAIL


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 3000),  # rows the publisher holds ready (then it pauses: a live feed between bursts)
    st.integers(0, 6),  # the link: rows asked for at one ask arrive this many asks later
    st.lists(st.booleans(), min_size=1, max_size=30),  # a busy reader: asks that fell short by its clock anyway
    st.integers(1, 700),  # maxRecordsPerTrigger
)
def test_available_now_reads_a_ready_backlog_whole_whatever_the_link_and_the_reader_s_load(
    backlog, delay, busy, max_rows
):
    """The endpoint's publisher holds ``backlog`` rows and owes any asked beyond them (so it says
    edge once credit passed them); rows travel ``delay`` asks; the reader's own clock may call any
    ask short. The run ends having read the whole backlog, never more."""
    lim = Limits(max_rows=max_rows)
    start = available = credit = 0
    in_flight: list[tuple[int, int]] = []  # (the ask it arrives at, rows)
    target = None
    for i in range(20_000):
        a = ask(Trigger.AVAILABLE_NOW, lim, 10_000, target is not None)
        wanted = start + a.per_part if target is None else min(start + a.per_part, target)
        if wanted > credit:  # REQUEST_N: the publisher sends what it holds of it, over the link
            sent = max(0, min(wanted, backlog) - min(credit, backlog))
            in_flight.append((i + delay, sent))
            credit = wanted
        available += sum(n for at, n in in_flight if at <= i)
        in_flight = [(at, n) for at, n in in_flight if at > i]
        short = available < wanted or busy[i % len(busy)]
        p = Part(start, available, start, target=target, short=short)
        if a.edge:
            said = Said(min(credit, backlog), credit > backlog) if short else None
            p = dataclasses.replace(p, said=said)
            target = available_now_target(p, 0, 1_000_000)
            p = dataclasses.replace(p, target=target)
        d = decide(View({"": p}, lim, Trigger.AVAILABLE_NOW))
        if d.action is Action.END:
            break
        assert d.action in (Action.PLAN, Action.AWAIT_ROWS), d.step
        start += d.rows
    else:
        pytest.fail("AvailableNow never ended")
    assert start == target == backlog


# -- properties ---------------------------------------------------------------------------------------
counts = st.integers(min_value=0, max_value=10_000)
streams = st.sampled_from(list(Stream))
limits = st.builds(
    Limits,
    max_rows=st.none() | st.integers(1, 5000),
    min_rows=st.none() | st.integers(1, 5000),
    max_trigger_delay=st.floats(0, 10),
)


@st.composite
def parts(draw, trigger=None):
    start = draw(counts)
    available = start + draw(counts)
    committed = draw(st.integers(0, start))
    target = None
    if trigger is Trigger.AVAILABLE_NOW:
        target = start + draw(st.integers(0, available - start))
    return Part(start, available, committed, draw(streams), target)


@st.composite
def views(draw):
    trigger = draw(st.sampled_from(list(Trigger)))
    ps = draw(st.dictionaries(st.sampled_from("abcd"), parts(trigger), min_size=1, max_size=4))
    return View(ps, draw(limits), trigger, waited=draw(st.floats(0, 20)))


@settings(max_examples=500, deadline=None)
@given(views())
def test_the_planner_never_plans_rows_it_does_not_hold_nor_beyond_the_limit_or_target(v):
    d = decide(v)
    if d.action is not Action.PLAN:
        return
    assert d.rows > 0
    for pid, n in d.take.items():
        p = v.parts[pid]
        assert 0 < n <= p.available - p.start
        assert p.target is None or p.start + n <= p.target
    assert v.limits.max_rows is None or d.rows <= v.limits.max_rows


@settings(max_examples=500, deadline=None)
@given(views())
def test_the_planner_never_waits_while_rows_wait_for_spark_to_commit_them(v):
    d = decide(v)
    if v.trigger is Trigger.STREAMING and any(p.start > p.committed for p in v.parts.values()):
        assert d.action not in (Action.WAIT, Action.AWAIT_OPEN), d.step


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from("abcd"), parts(Trigger.AVAILABLE_NOW), min_size=1, max_size=4), limits)
def test_available_now_always_reaches_its_target_and_ends(ps, lim):
    # Spark plans each decision and asks again from its end; the run must end at every target.
    ps = {pid: dataclasses.replace(p, stream=Stream.OPEN) for pid, p in ps.items()}
    for _ in range(20_000):
        d = decide(View(ps, lim, Trigger.AVAILABLE_NOW))
        if d.action is Action.END:
            break
        assert d.action is Action.PLAN, d.step
        ps = {
            pid: dataclasses.replace(p, start=p.start + d.take.get(pid, 0), committed=p.start) for pid, p in ps.items()
        }
    else:
        pytest.fail("AvailableNow never ended")
    assert all(p.start == p.target for p in ps.values())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 300), min_size=1, max_size=50),
    st.booleans(),
    st.integers(1, 200),
    st.integers(1, 3000),
)
def test_available_now_ends_against_any_publisher_at_its_live_edge_or_bound(deliveries, completes, max_rows, most):
    """A publisher that sends ``deliveries[i]`` rows (at most what is asked) at the i-th ask, then as
    many as asked for ever (an endless generator), or completes after the list: the run ends, at the
    first shortfall or completion, or after ``most`` rows."""
    lim = Limits(max_rows=max_rows)
    start = available = 0
    target = None
    for i in range(10_000):
        a = ask(Trigger.AVAILABLE_NOW, lim, 10_000, target is not None)
        want = start + a.per_part - available
        ended = completes and i >= len(deliveries)
        sent = 0
        if a.per_part and not ended:
            sent = max(0, min(want, deliveries[i] if i < len(deliveries) else want))
            available += sent
        p = Part(start, available, start, Stream.COMPLETED if ended else Stream.OPEN, target, short=sent < want)
        if a.edge:
            target = available_now_target(p, 0, most)
            p = dataclasses.replace(p, target=target)
        d = decide(View({"": p}, lim, Trigger.AVAILABLE_NOW))
        if d.action is Action.END:
            break
        assert d.action is Action.PLAN, d.step
        start += d.rows
    else:
        pytest.fail("AvailableNow never ended")
    assert target is not None and start == target <= most
