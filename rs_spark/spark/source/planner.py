"""What each micro-batch of ``format("reactive")`` reads: one pure decision for both readers.

Spark asks a source for the end of the next micro-batch (``latestOffset(start, limit)``). Both
readers (one publisher through the reader process, :mod:`.single_reader`; several endpoints as
partitions, :mod:`.partitioned_reader`) gather what the decision needs into a :class:`View`
(subscribing, acknowledging, asking for rows and waiting are theirs: I/O) and act on the
:class:`Decision` :func:`decide` returns (planning, storing, raising: I/O again). The single reader
is one partition, named ``""``.

As in Spark's Kafka source, whose ``latestOffset`` reads the latest offsets, then applies
``rateLimit`` and ``delayBatch``, the decision is a sequence of named steps; the first that
applies wins:

=====  ==============================================================  ===================================
step   when                                                            decision
=====  ==============================================================  ===================================
1      the checkpoint does not name every stream yet (a new endpoint   RECORD_KEYS: an offset naming the
       stream or partition)                                            new keys, no rows (every trigger)
2      a micro-batch from ``start`` was planned before a restart       REPLAY it (its logged end)
3      an endpoint can no longer resume a partition's stream           START_OVER those (data loss rules)
4      a partition failed (on_error, a rule broken) and every row it   FAIL naming it
       made available is planned
5      AvailableNow, every partition open and at its target            END (the run is over)
6      rows to plan: ``min(available, target) - start`` per            rate limit: ``maxRecordsPerTrigger``
       partition                                                       shared in proportion to each
7      fewer than ``minRecordsPerTrigger``, ``maxTriggerDelay`` not    delay: RELEASE if step 9 would,
       passed, nothing ended, not AvailableNow                         else WAIT
8      rows to plan                                                    PLAN them
9      nothing to plan, rows before ``start`` not committed by Spark   RELEASE: an offset naming no new
                                                                       rows, so Spark commits ``start``
10     nothing to plan, a stream not open yet (no ``on_subscribe``)    AWAIT_OPEN (rule 1.9's bound)
10b    nothing to plan, AvailableNow, a partition short of its target  AWAIT_ROWS (they are on their way;
       or without one yet, its stream not ended                        ending now would end the run)
11     nothing to plan                                                 WAIT (Spark plans no batch)
=====  ==============================================================  ===================================

Why step 9 comes before waiting (steps 7, 11): Spark calls the source's ``commit`` for a batch only
when it plans the next one, and an endpoint (or a publisher taking ``on_commit``) at its retention
bound sends nothing more until then; planning nothing would wait for ever (docs/guarantees.md,
"Acknowledgements").

AvailableNow's target: Spark's contract is that the source fixes what a run reads, as Kafka's
source fixes the latest offsets. A Publisher has no latest offset; its live edge shows when it
falls short: it owes rows it was asked for. Each ask of the run asks a micro-batch's worth and waits
up to ``pollTimeout`` (:func:`ask`). Where that is decided:

* an endpoint that answers (rs_spark.net states it when the stream opens): an ask that fell
  short is put to the endpoint, which says how far its rows are ready and whether its publisher
  is at its live edge, measured where the publisher runs (it ended, or it owed rows for
  ``pollTimeout``: :class:`Said`). The reader's own clock (a slow link, a busy machine) decides
  nothing; the target may lie beyond the rows received (they are on their way: AWAIT_ROWS until
  they come);
* a publisher in the reader's process (factory, ``jvmPublisher``), or an endpoint that does not
  answer (one served by an earlier build: the reader logs a WARN once): the reader's ask itself, which for
  those is the measurement.

A partition whose publisher completed or is at its live edge has its target
(:func:`available_now_target`). One that never falls short (an endless generator) is bounded by
``availableNowMaxRecords`` rows a run.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping


class Trigger(enum.Enum):
    """What Spark tells a source of its trigger: AvailableNow or not (default, processingTime and
    Once look alike to a source: Once passes ReadAllAvailable and runs one micro-batch)."""

    STREAMING = "streaming"
    AVAILABLE_NOW = "availableNow"


class Stream(enum.Enum):
    """A partition's stream as the reader last saw it."""

    OPENING = "opening"  # subscribed, no on_subscribe yet
    OPEN = "open"
    COMPLETED = "completed"
    FAILED = "failed"  # on_error, or the publisher broke a rule
    GONE = "gone"  # the endpoint cannot resume it (its window ended, or it restarted without spill)

    @property
    def ended(self) -> bool:
        """No more rows will come."""
        return self in (Stream.COMPLETED, Stream.FAILED, Stream.GONE)


@dataclasses.dataclass(frozen=True)
class Said:
    """An endpoint's answer to "how far are your rows ready?", in the partition's positions: rows
    before ``position`` come without waiting on the publisher; ``edge``: the publisher is at its live
    edge (it ended, or it owed rows it was asked for ``pollTimeout``, measured where it runs)."""

    position: int
    edge: bool


@dataclasses.dataclass(frozen=True)
class Part:
    """One partition's positions (the single reader's are record offsets)."""

    start: int
    """Where the micro-batch starts (Spark's ``start``)."""
    available: int
    """Rows before this position can be planned now (``start`` plus what is held)."""
    committed: int
    """Rows before this position Spark committed (at least where this reader's stream began)."""
    stream: Stream = Stream.OPEN
    target: int | None = None
    """AvailableNow: the position the run ends at, once fixed."""
    short: bool = False
    """The publisher owes rows the last ask asked for: they did not come within ``pollTimeout``."""
    said: Said | None = None
    """AvailableNow: what the publisher's side said when the ask fell short (None: not asked, or
    it does not answer)."""

    @property
    def to_plan(self) -> int:
        """Rows that may be planned now: up to the target, if any."""
        end = self.available if self.target is None else min(self.available, self.target)
        return max(0, end - self.start)

    @property
    def uncommitted(self) -> bool:
        """Rows before ``start`` that Spark has not committed: only a planned batch lets it."""
        return self.start > self.committed


@dataclasses.dataclass(frozen=True)
class Limits:
    """A micro-batch's read limit: Spark's, with the options it does not carry."""

    max_rows: int | None = None
    min_rows: int | None = None
    max_trigger_delay: float = 900.0


@dataclasses.dataclass(frozen=True)
class View:
    """Everything :func:`decide` looks at."""

    parts: Mapping[str, Part]
    limits: Limits = Limits()
    trigger: Trigger = Trigger.STREAMING
    waited: float = 0.0
    """Seconds since the last micro-batch with rows was planned (for ``maxTriggerDelay``)."""
    new_keys: bool = False
    """Streams the checkpoint does not name yet."""
    logged_end: int | None = None
    """The single reader: the end of a micro-batch from ``start`` planned before a restart."""


class Action(enum.Enum):
    """What the reader does with :func:`decide`'s answer."""

    RECORD_KEYS = "record keys"
    REPLAY = "replay"
    START_OVER = "start over"
    END = "end"
    FAIL = "fail"
    PLAN = "plan"
    RELEASE = "release"
    AWAIT_OPEN = "await open"
    AWAIT_ROWS = "await rows"
    WAIT = "wait"


@dataclasses.dataclass(frozen=True)
class Decision:
    """An action, with the rows to take per partition (PLAN) or the partitions concerned."""

    action: Action
    take: Mapping[str, int] = dataclasses.field(default_factory=dict)
    parts: tuple[str, ...] = ()
    step: str = ""
    """The step that decided (as in the module's table), for logs and tests."""

    @property
    def rows(self) -> int:
        return sum(self.take.values())


def decide(v: View) -> Decision:
    """The micro-batch Spark should plan next (see the module's table)."""
    return (
        _opening(v)
        or _failed(v)
        or _available_now_end(v)
        or _planned(v, share(v.limits.max_rows, {pid: p.to_plan for pid, p in v.parts.items()}))
    )


def _opening(v: View) -> Decision | None:
    """Steps 1-3: what comes before any row is looked at."""
    if v.new_keys:
        return Decision(Action.RECORD_KEYS, step="1 new stream keys")
    if v.logged_end is not None:
        return Decision(Action.REPLAY, step="2 a planned batch not run")
    gone = tuple(pid for pid, p in v.parts.items() if p.stream is Stream.GONE)
    return Decision(Action.START_OVER, parts=gone, step="3 cannot resume") if gone else None


def _failed(v: View) -> Decision | None:
    """Step 4: a failed partition fails the query once what it made available is planned."""
    failed = tuple(pid for pid, p in v.parts.items() if p.stream is Stream.FAILED and p.available <= p.start)
    return Decision(Action.FAIL, parts=failed, step="4 failed") if failed else None


def _available_now_end(v: View) -> Decision | None:
    """Step 5: AvailableNow ends once every partition reached its target (one still opening is
    awaited: rule 1.9's bound fails it, rather than the run ending with nothing read)."""
    if v.trigger is not Trigger.AVAILABLE_NOW:
        return None
    done = (p.stream is not Stream.OPENING and p.target is not None and p.start >= p.target for p in v.parts.values())
    return Decision(Action.END, step="5 target reached") if all(done) else None


def _planned(v: View, take: dict[str, int]) -> Decision:
    """Steps 7-11: delay, plan, release or wait."""
    rows = sum(take.values())
    if rows and _delay(v, rows):
        return _nothing(v, "7 delayed: fewer than minRecordsPerTrigger")
    if rows:
        return Decision(Action.PLAN, take={pid: n for pid, n in take.items() if n}, step="8 rows")
    return _nothing(v, "11 nothing to plan")


def _delay(v: View, rows: int) -> bool:
    """Step 7 (Kafka's ``delayBatch``): wait for ``minRecordsPerTrigger`` rows, at most ``maxTriggerDelay``.
    Never under AvailableNow (it reads to the publisher's live edge: there is nothing to wait for) nor
    once a stream ended."""
    lim = v.limits
    if v.trigger is Trigger.AVAILABLE_NOW or lim.min_rows is None or rows >= lim.min_rows:
        return False
    if any(p.stream.ended for p in v.parts.values()):
        return False
    return v.waited < lim.max_trigger_delay


def _nothing(v: View, why: str) -> Decision:
    """Steps 9-11: no rows planned this time."""
    if v.trigger is Trigger.STREAMING and any(p.uncommitted for p in v.parts.values()):
        return Decision(Action.RELEASE, step=f"9 release ({why})")
    opening = tuple(pid for pid, p in v.parts.items() if p.stream is Stream.OPENING)
    if opening:
        return Decision(Action.AWAIT_OPEN, parts=opening, step="10 not open")
    owed = tuple(pid for pid, p in v.parts.items() if v.trigger is Trigger.AVAILABLE_NOW and _rows_due(p))
    if owed:
        return Decision(Action.AWAIT_ROWS, parts=owed, step="10b rows on their way")
    return Decision(Action.WAIT, step=why)


def _rows_due(p: Part) -> bool:
    """AvailableNow: the run must not end yet for ``p``: its stream goes on and it has no target, or
    rows before its target have not come."""
    if p.stream.ended:
        return False
    return p.target is None or p.available < p.target


def share(max_rows: int | None, avail: Mapping[str, int]) -> dict[str, int]:
    """Step 6 (Kafka's ``rateLimit``): rows to plan per partition: all of ``avail``, or ``max_rows``
    shared in proportion to what each has (largest remainders get the rows left)."""
    total = sum(avail.values())
    if max_rows is None or total <= max_rows:
        return dict(avail)
    exact = {pid: max_rows * a / total for pid, a in avail.items()}
    take = {pid: math.floor(x) for pid, x in exact.items()}
    left = max_rows - sum(take.values())
    for pid in sorted(exact, key=lambda p: exact[p] - take[p], reverse=True)[:left]:
        take[pid] += 1
    return take


@dataclasses.dataclass(frozen=True)
class Ask:
    """What a reader asks of its partitions before deciding: rows to have available beyond
    ``start`` in each (``per_part``), and how many rows in all to wait for, up to ``pollTimeout``
    (0: do not wait). ``edge``: AvailableNow looks for the live edge (:func:`available_now_target`)."""

    per_part: int
    wait_for: int
    edge: bool = False


def ask(trigger: Trigger, limits: Limits, max_buffered: int, targets_fixed: bool) -> Ask:
    """How much to ask for before :func:`decide`: a micro-batch's worth (``maxRecordsPerTrigger``,
    else ``minRecordsPerTrigger``, else ``maxBufferedRecords``), waiting for that many rows (or one).
    Under AvailableNow: a micro-batch's worth, waiting for all of it (a shortfall is the live edge),
    and once every target is fixed a micro-batch's worth up to each target (the readers cut it
    there), waiting for one row only where rows before the target are still due."""
    if trigger is Trigger.AVAILABLE_NOW:
        whole = min(limits.max_rows or max_buffered, max_buffered)
        return Ask(whole, 1) if targets_fixed else Ask(whole, whole, edge=True)
    batch = limits.max_rows or limits.min_rows
    return Ask(min(batch or max_buffered, max_buffered), batch or 1)


def available_now_target(p: Part, run_start: int, most: int) -> int | None:
    """AvailableNow: where the run ends for partition ``p`` after an ask (None: not known yet). At the
    publisher's live edge, what it sent: it completed or failed; or its endpoint said so (``said``:
    the rows it holds, also those still on their way); or, from a publisher whose side was not asked,
    rows asked for did not come within pollTimeout. Else ``most`` rows after ``run_start`` once it
    sent that many. An ask that fell short while the endpoint says its publisher is not at its edge
    (a slow link, a busy reader) fixes nothing."""
    cap = run_start + most
    if p.stream is Stream.OPENING:
        return None
    if p.stream.ended:
        return min(p.available, cap)
    if p.said is not None and p.said.edge:
        return min(max(p.said.position, p.available), cap)
    if p.said is None and p.short:
        return min(p.available, cap)
    return cap if p.available >= cap else None


def target_reason(p: Part, poll_timeout: float, most: int) -> str:
    """Why :func:`available_now_target` put the target where it is (for the log line that says so)."""
    if p.stream.ended:
        return f"the publisher {p.stream.value}"
    if p.said is not None and p.said.edge:
        return (
            f"the endpoint said its publisher is at its live edge with rows ready up to position {p.said.position} "
            f"(it owed rows for pollTimeout={poll_timeout}s where it runs, or ended)"
        )
    if p.short:
        return f"rows asked for did not come within pollTimeout={poll_timeout}s (the publisher's live edge)"
    return f"availableNowMaxRecords={most} reached"


__all__ = [
    "Action",
    "Ask",
    "Decision",
    "Limits",
    "Part",
    "Said",
    "Stream",
    "Trigger",
    "View",
    "ask",
    "available_now_target",
    "decide",
    "target_reason",
    "share",
]
