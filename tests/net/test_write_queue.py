"""The write queue's invariant, without a socket: its bytes and the server's budget move together
(charged when a frame is queued, given back exactly when it is written or dropped), frames leave in
the order they came, and its bounds tell its owner."""

from __future__ import annotations

import threading
import types

import pytest

from rs_spark.net.protocol import write_queue
from rs_spark.net.protocol.budget import FRAME_OVERHEAD, OutboundBudget
from rs_spark.net.protocol.limits import Limits
from rs_spark.net.protocol.write_queue import BATCH_BYTES, WriteQueue
from tests.waits import wait_until

LIMITS = Limits(max_frame_bytes=1024, high_water_bytes=1000, max_backlog_bytes=5000, reply_high_water_bytes=600)


class Owner:
    """What the queue tells its owner; closing the owner closes and drops its queue, as a connection does."""

    def __init__(self) -> None:
        self.over_budget: list[int] = []
        self.over_cap: list[int] = []
        self.queue: WriteQueue | None = None

    def on_over_budget(self, budget: OutboundBudget) -> None:
        self.over_budget.append(budget.used)
        assert self.queue is not None
        self.queue.close()
        self.queue.drop()


def _queue(budget: OutboundBudget | None = None, send_now=None) -> tuple[WriteQueue, Owner]:
    owner = Owner()
    owner.queue = WriteQueue(
        LIMITS, over_budget=owner.on_over_budget, over_cap=owner.over_cap.append, budget=budget, send_now=send_now
    )
    return owner.queue, owner


def _frame(tag: bytes, n: int) -> list[bytes]:
    return [tag, b"." * (n - len(tag))]


def test_frames_leave_in_the_order_they_came_and_the_budget_is_given_back_exactly():
    budget = OutboundBudget(1 << 20)
    q, _ = _queue(budget)
    for i in range(3):
        assert q.put(_frame(b"%d" % i, 100 + i), reply=False)
    assert q.bytes == 303
    assert budget.used == 303 + 3 * FRAME_OVERHEAD
    taken = q.take()
    assert taken is not None
    batch, n = taken
    assert n == 303 and b"".join(batch) == b"".join(b"".join(_frame(b"%d" % i, 100 + i)) for i in range(3))
    assert q.bytes == 303 and budget.used == 303 + 3 * FRAME_OVERHEAD, "taken is not written yet"
    assert q.written() == []
    assert q.bytes == 0 and budget.used == 0


def test_the_writer_takes_about_a_batch_at_a_time():
    q, _ = _queue()
    big = BATCH_BYTES // 2 + 1
    for tag in (b"a", b"b", b"c"):
        q.put(_frame(tag, big), reply=False)
    first = q.take()
    assert first is not None and first[1] == 2 * big  # the batch passed BATCH_BYTES with its second frame
    q.written()
    second = q.take()
    assert second is not None and second[1] == big and bytes(second[0][0]) == b"c"


def test_a_queue_past_its_cap_tells_its_owner_with_its_bytes():
    q, owner = _queue()
    assert q.cap == max(LIMITS.max_backlog_bytes, LIMITS.high_water_bytes + 2 * LIMITS.max_frame_bytes)
    while q.bytes <= q.cap:
        assert owner.over_cap == []
        q.put(_frame(b"x", 700), reply=False)
    assert owner.over_cap == [q.bytes]


def test_a_stream_waits_above_high_water_and_is_resumed_below_half_of_it():
    q, _ = _queue()
    resumed: list[int] = []
    q.put(_frame(b"a", 600), reply=False)
    assert not q.wait_drain(1, lambda: resumed.append(1)), "below high water: no wait"
    q.put(_frame(b"b", 600), reply=False)
    assert q.wait_drain(1, lambda: resumed.append(1))
    assert q.wait_drain(2, lambda: resumed.append(2))
    q.forget(2)  # the stream ended: not resumed
    taken = q.take()
    assert taken is not None
    for r in q.written():
        r()
    assert resumed == [1]


def test_a_paused_stream_stays_paused_below_high_water_until_the_queue_drained_below_half():
    """Resuming as soon as the queue is below high water would pause the stream again at its next
    frame or two: it resumes once the queue is below half of it (1000 // 2 bytes here)."""
    q, _ = _queue()
    resumed: list[int] = []
    q.put(_frame(b"a", 600), reply=False)
    taken = q.take()  # the writer is inside a send of frame a
    assert taken is not None and taken[1] == 600
    q.put(_frame(b"b", 600), reply=False)
    assert q.bytes == 1200 and q.wait_drain(1, lambda: resumed.append(1))
    assert q.written() == [] and q.bytes == 600, "below high water, above half: still paused"
    taken = q.take()
    assert taken is not None and taken[1] == 600
    for r in q.written():
        r()
    assert resumed == [1] and q.bytes == 0


def test_closing_drops_the_queue_gives_the_budget_back_and_refuses_more():
    budget = OutboundBudget(1 << 20)
    q, _ = _queue(budget)
    q.put(_frame(b"a", 100), reply=True)
    q.put(_frame(b"b", 200), reply=False)
    q.close()
    assert not q.put(_frame(b"c", 300), reply=False)
    assert budget.used == 100 + 200 + 2 * FRAME_OVERHEAD, "a refused frame is given back at once"
    q.drop()
    assert q.bytes == 0 and budget.used == 0 and q.unread_replies == 0
    assert q.take() is None, "closed and nothing to flush: the writer stops"


def test_final_frames_are_written_after_the_queue_whatever_the_budget_then_the_writer_stops():
    budget = OutboundBudget(1000)
    q, owner = _queue(budget)
    q.put(_frame(b"a", 500), reply=False)
    q.close()
    q.flush([_frame(b"E", 900)])  # does not fit the budget: charged anyway
    assert owner.over_budget == [] and budget.used == 1400 + 2 * FRAME_OVERHEAD
    taken = q.take()
    assert taken is not None and bytes(taken[0][0]) == b"a" and bytes(taken[0][2]) == b"E"
    q.written()
    assert budget.used == 0
    assert q.take() is None
    assert q.writer_done(), "closed with final frames: the owner sends its FIN"


def test_a_writer_that_looks_between_close_and_flush_waits_for_the_final_frames():
    """A connection closes its queue, ends its streams, then flushes its final frames (the ERROR
    saying why): a writer that finished a send in between waits for them instead of stopping, or the
    peer never learns why (it did, on a connection busy sending rows when a malformed frame came)."""
    q, _ = _queue()
    q.put(_frame(b"a", 100), reply=False)
    assert q.take() is not None  # the writer is in a send...
    q.close()  # ...when the connection closes
    q.written()
    got: list = []
    writer = threading.Thread(target=lambda: got.append(q.take()), daemon=True)
    writer.start()
    wait_until(lambda: got or q._cond._waiters, what="the writer to take or wait")  # white box: it waits
    q.flush([_frame(b"E", 100)])
    writer.join(10)
    assert got and got[0] is not None, "the writer stopped before the final frames were flushed"
    assert bytes(got[0][0][0]) == b"E"
    q.written()
    assert q.take() is None and q.writer_done()


def test_a_dropped_queue_stops_a_waiting_writer():
    q, _ = _queue()
    q.close()
    got: list = []
    writer = threading.Thread(target=lambda: got.append(q.take()), daemon=True)
    writer.start()
    wait_until(lambda: got or q._cond._waiters, what="the writer to take or wait")
    q.drop()
    writer.join(10)
    assert got == [None]


def test_a_stopped_writer_gives_back_what_it_had_taken_and_what_was_queued():
    budget = OutboundBudget(1 << 20)
    q, _ = _queue(budget)
    q.put(_frame(b"a", 100), reply=False)
    q.take()
    q.put(_frame(b"b", 100), reply=False)
    assert not q.writer_done(), "not closed: no FIN"
    assert q.bytes == 0 and budget.used == 0
    assert not q.put(_frame(b"c", 100), reply=False)
    assert budget.used == 0


def test_over_the_budget_the_queue_holding_the_most_is_closed_and_the_frame_fits():
    budget = OutboundBudget(1000 + 2 * FRAME_OVERHEAD)
    hog, hog_owner = _queue(budget)
    small, small_owner = _queue(budget)
    hog.put(_frame(b"h", 800), reply=False)
    small.put(_frame(b"s", 100), reply=False)
    assert small.put(_frame(b"t", 400), reply=False)
    assert hog_owner.over_budget == [900 + 2 * FRAME_OVERHEAD] and small_owner.over_budget == []
    assert hog.bytes == 0 and budget.used == 500 + 2 * FRAME_OVERHEAD


def test_a_frame_that_never_fits_closes_its_own_queue():
    budget = OutboundBudget(500)
    q, owner = _queue(budget)
    assert not q.put(_frame(b"x", 600), reply=False)
    assert owner.over_budget == [0] and budget.used == 0


@pytest.mark.parametrize("size", [100, 65536])
@pytest.mark.parametrize("part", [0.0, 0.5, 1.0])
def test_a_frame_is_sent_at_once_when_the_writer_is_idle_and_the_rest_waits_in_order(size, part, monkeypatch, clock):
    monkeypatch.setattr(write_queue, "BURST_SECONDS", 0.0)
    sent = int(size * part)
    budget = OutboundBudget(1 << 20)
    calls: list[int] = []

    def send_now(frame) -> int:
        calls.append(sum(len(b) for b in frame))
        return sent

    q, _ = _queue(budget, send_now)
    q.put(_frame(b"BIG", size), reply=False)
    assert calls == [size], "the writer is idle and nothing is queued: the frame goes out at once"
    left = size - sent
    assert q.bytes == left and budget.used == left + (FRAME_OVERHEAD if left else 0)
    if left:
        taken = q.take()
        assert taken is not None and b"".join(bytes(b) for b in taken[0]) == b"".join(_frame(b"BIG", size))[sent:], (
            "what the socket did not take waits for the writer, in order"
        )
        q.written()


def test_a_frame_waits_for_a_busy_writer_or_for_frames_before_it(monkeypatch, clock):
    monkeypatch.setattr(write_queue, "BURST_SECONDS", 0.0)
    calls: list[int] = []

    def send_now(frame) -> int:
        calls.append(sum(len(b) for b in frame))
        return 0  # the socket takes nothing: every frame waits for the writer

    q, _ = _queue(OutboundBudget(1 << 20), send_now)
    q.put(_frame(b"a", 100), reply=False)
    assert calls == [100]
    q.put(_frame(b"b", 200), reply=False)
    assert calls == [100], "a frame waits before it: no direct send"
    taken = q.take()
    assert taken is not None and taken[1] == 300
    q.put(_frame(b"c", 50), reply=False)
    assert calls == [100], "the writer is inside a send: the frame waits for it"
    q.written()
    taken = q.take()
    assert taken is not None and taken[1] == 50
    q.written()
    q.put(_frame(b"d", 10), reply=False)
    assert calls == [100, 10], "idle again, nothing queued: at once"


class _BootClock:
    """time.monotonic() of a machine booted just now: it starts at 0 and creeps up."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 1e-6
        return self.now


@pytest.fixture(params=["this machine's clock", "a clock that starts at 0"])
def clock(request, monkeypatch):
    """The queue's verdicts must not depend on how long the machine has been up."""
    if request.param == "a clock that starts at 0":
        boot = _BootClock()
        monkeypatch.setattr(write_queue, "time", types.SimpleNamespace(monotonic=boot.monotonic))
    return request.param


def test_a_burst_of_frames_waits_for_the_writer_after_its_first(monkeypatch, clock):
    monkeypatch.setattr(write_queue, "BURST_SECONDS", 3600.0)  # every frame after the first is "soon"
    calls: list[int] = []

    def send_now(frame) -> int:
        calls.append(sum(len(b) for b in frame))
        return calls[-1]

    q, _ = _queue(OutboundBudget(1 << 20), send_now)
    for n in (10, 20, 30):
        q.put(_frame(b"x", n), reply=False)
    assert calls == [10], "the first frame goes at once; the burst behind it waits for one send"
    taken = q.take()
    assert taken is not None and taken[1] == 50


def test_unread_replies_pause_reading_until_half_are_written():
    q, _ = _queue()
    q.put(_frame(b"r", 300), reply=True)
    q.put(_frame(b"r", 300), reply=True)
    assert q.reading_paused and q.unread_replies == 600 + 2 * FRAME_OVERHEAD
    assert q.wait_replies_drained(0.0) == 600 + 2 * FRAME_OVERHEAD
    q.take()
    q.written()
    assert not q.reading_paused and q.wait_replies_drained(0.0) is None
