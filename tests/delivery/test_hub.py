"""The delivery hub without Spark: commits sent over real loopback channels, as the sink's
commit does, into one Subscriber; ledger, resume and duplicates; the hub checked as a Publisher
by rs_spark.tck."""

from __future__ import annotations

import json
import socket
import threading

import pyarrow as pa
import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.delivery import (
    BatchAborted,
    DeliveryHub,
    DeliveryHubStats,
    EndReason,
    HubEnd,
    QueryFailed,
    SinkError,
    send_control,
    serve_sink,
)
from rs_spark.delivery.commit_channel import CommitChannel
from rs_spark.delivery.wire import META_BATCH, META_OPEN, META_PARTITION, META_START, META_TOTAL, tag_batch
from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol import metadata as M
from rs_spark.net.protocol.address import parse
from rs_spark.net.protocol.auth import setup_metadata
from rs_spark.net.protocol.codecs import ARROW_MIME, make_codec
from rs_spark.tck import PublisherVerification, Timeouts
from tests.subscribers import Recorder
from tests.tck.skips import bounded
from tests.waits import wait_until
from tests.wire import RawFrames, raw


def rows(lo, hi):
    return pa.record_batch({"id": pa.array(range(lo, hi), pa.int64())})


def commit(address, batch_id, pieces, total=None, cut_after=None):
    """Send ``pieces`` (record batches) as micro-batch ``batch_id``, like the sink's commit.
    ``cut_after``: fail the sending side after that many pieces (a commit process dying)."""
    total = total if total is not None else sum(p.num_rows for p in pieces)
    tagged, start = [], 0
    for p in pieces:
        tagged.append(tag_batch(p, batch_id, start, total))
        start += p.num_rows

    def gen():
        for i, b in enumerate(tagged):
            if cut_after is not None and i == cut_after:
                raise ConnectionAbortedError("commit process killed")
            yield b

    proc = net.connect_processor(address, codec="arrow")
    rs.from_iterable(gen()).subscribe(proc)
    return rs.to_list(proc, timeout=20)


def ids(rec):
    return [r["id"] for r in rec.items]


def test_a_batch_cut_off_mid_way_resumes_at_the_first_row_not_delivered():
    rec = Recorder()
    ep = serve_sink(rec)
    try:
        with pytest.raises(ConnectionAbortedError, match="commit process killed"):
            commit(ep.address, 0, [rows(0, 100), rows(100, 200), rows(200, 300)], cut_after=2)
        assert ep.hub.wait_idle(10)
        assert ids(rec) == list(range(200)) and ep.hub.ledger.rows == 200
        ack = commit(ep.address, 0, [rows(0, 100), rows(100, 200), rows(200, 300)])  # Spark retries batch 0
        assert ack[0].to_pylist()[0]["status"] == "delivered"
        assert ids(rec) == list(range(300))
    finally:
        ep.stop()


def test_a_delivered_batch_is_acknowledged_as_duplicate_and_not_delivered_again(caplog):
    rec = Recorder()
    ep = serve_sink(rec)
    try:
        commit(ep.address, 0, [rows(0, 10)])
        commit(ep.address, 1, [rows(10, 20)])
        with caplog.at_level("WARNING", logger="rs_spark.sink"):
            ack = commit(ep.address, 1, [rows(10, 20)])  # the restart case: the last batch again
        assert ack[0].to_pylist()[0]["status"] == "duplicate"
        assert "older than" not in caplog.text
        with caplog.at_level("WARNING", logger="rs_spark.sink"):
            ack = commit(ep.address, 0, [rows(0, 10)])  # behind the ledger: dropped, but said loudly
        assert ack[0].to_pylist()[0]["status"] == "duplicate"
        assert "micro-batch 0 is older than micro-batch 1" in caplog.text and "checkpointLocation" in caplog.text
        assert ids(rec) == list(range(20))
    finally:
        ep.stop()


def test_ledger_file_keeps_exactly_once_across_a_hub_restart(tmp_path):
    ledger = str(tmp_path / "ledger.json")
    first = Recorder()
    ep = serve_sink(first, ledger=ledger)
    commit(ep.address, 0, [rows(0, 10)])
    commit(ep.address, 1, [rows(10, 20)])
    ep.stop()
    second = Recorder()
    ep = serve_sink(second, ledger=ledger)  # the hub's process restarted
    try:
        assert commit(ep.address, 1, [rows(10, 20)])[0].to_pylist()[0]["status"] == "duplicate"
        commit(ep.address, 2, [rows(20, 30)])
        assert ids(second) == list(range(20, 30))
    finally:
        ep.stop()


def test_demand_bounds_what_the_hub_holds():
    """A Subscriber that requested 5 and stopped: the hub holds at most one record batch of the
    commit (the channel is asked for the next only when the Subscriber took the previous)."""
    rec = Recorder(batch=5, refill=False)  # never requests more
    ep = serve_sink(rec)
    outcome = []

    def run():
        try:
            commit(ep.address, 0, [rows(i * 1000, (i + 1) * 1000) for i in range(50)])
        except net.RemoteError as exc:
            outcome.append(exc)

    t = threading.Thread(target=run, daemon=True)
    try:
        t.start()
        # The drain is done once the hub has counted the 5 rows as taken from the first record batch.
        wait_until(lambda: len(rec.items) == 5 and ep.hub.stats().buffered == 995, "5 rows taken and 995 buffered", 10)
        assert ep.hub.stats() == DeliveryHubStats(
            delivered=5, batches_delivered=0, outstanding=0, buffered=995, ended=None, kept=False
        )
        assert (ep.hub.delivered, ep.hub.outstanding, ep.hub.buffered) == (5, 0, 995)  # the attributes stay
        ep.hub.finish()  # the query ends: the commit still waiting for demand is refused
        t.join(20)
        assert not t.is_alive() and len(outcome) == 1 and "the query ended" in str(outcome[0])
        assert len(rec.items) == 5 and rec.completed
    finally:
        ep.stop()


def test_finish_completes_after_delivered_rows_and_refuses_later_commits():
    rec = Recorder()
    ep = serve_sink(rec)
    try:
        commit(ep.address, 0, [rows(0, 5)])
        ep.finish()
        assert rec.done.wait(5) and rec.completed and ids(rec) == list(range(5))
        with pytest.raises(net.RemoteError, match="takes no more batches"):
            commit(ep.address, 1, [rows(5, 6)])
    finally:
        ep.stop()


def test_finish_during_on_next_cuts_the_batch_off_and_completes():
    """The query ends while a record batch is being delivered (here: from inside on_next): the
    rest of that batch is not delivered and the Subscriber gets on_complete, not an error from
    the hub's own queue (it used to deliver on and then fail with IndexError)."""
    rec = Recorder()
    original = rec.on_next

    def on_next(x):
        original(x)
        if len(rec.items) == 3:
            ep.finish()

    rec.on_next = on_next
    ep = serve_sink(rec)
    try:
        with pytest.raises(net.RemoteError, match="the query ended"):
            commit(ep.address, 0, [rows(0, 10)])
        assert rec.done.wait(5) and rec.completed and rec.error is None
        assert ids(rec) == [0, 1, 2] and ep.hub.ledger.rows == 3 and ep.hub.stats().delivered == 3
        assert ep.hub.end == HubEnd(EndReason.QUERY_ENDED)
    finally:
        ep.stop()


@pytest.mark.parametrize("elements", ["dicts", "batches"])
def test_a_retried_commit_superseding_one_mid_delivery_delivers_each_row_once(caplog, elements):
    """Spark retries a task whose commit is still being delivered (its process is gone, or the
    real-time task attempt failed): the retry's commit supersedes the older one while the
    Subscriber is inside on_next for it. The rows that older delivery hands out before it sees
    the drop reach the ledger only when it returns, after the retry queued its rows: the retry
    must still start after them (it used to start where the ledger stood, delivering them twice)."""
    entered, go = threading.Event(), threading.Event()
    rec = Recorder()
    got: list[int] = []

    def on_next(x):
        rec.items.append(x)
        got.extend([x["id"]] if elements == "dicts" else x.column("id").to_pylist())
        if 3 in got and not go.is_set():
            entered.set()
            go.wait(20)  # the first attempt's delivery is inside on_next when the retry arrives

    rec.on_next = on_next
    ep = serve_sink(rec, elements=elements)
    outcomes = {}

    def attempt(name):
        try:
            outcomes[name] = commit(ep.address, 0, [rows(0, 10)])[0].to_pylist()[0]["status"]
        except Exception as exc:  # noqa: BLE001 - the superseded attempt is refused: recorded, checked below
            outcomes[name] = exc

    first = threading.Thread(target=attempt, args=("first",))
    retry = threading.Thread(target=attempt, args=("retry",))
    try:
        with caplog.at_level("WARNING", logger="rs_spark.sink"):
            first.start()
            assert entered.wait(20)
            retry.start()
            wait_until(lambda: "an older one was still open" in caplog.text, "the retry to supersede the first")
            go.set()
            first.join(20)
            retry.join(20)
        assert outcomes["retry"] == "delivered", outcomes
        assert isinstance(outcomes["first"], net.RemoteError) and "superseded" in str(outcomes["first"]), outcomes
        assert got == list(range(10)), "rows delivered twice or lost"
        assert ep.hub.ledger.rows == 10
    finally:
        go.set()
        ep.stop()


def open_epoch(address, epoch, partition, ids, cut=False):
    """A real-time sink task's commit (as SinkChannel sends it): ``ids`` as epoch ``epoch`` of
    ``partition``, open-ended, rows numbered from the epoch's start; no ids: a channel that sends
    nothing (a task of an epoch without rows). ``cut``: the task dies after sending them. The hub's
    answer's status."""
    ids = list(ids)
    md = {META_BATCH: str(epoch).encode(), META_START: b"0", META_TOTAL: str(len(ids)).encode(), META_OPEN: b"1"}
    md[META_PARTITION] = str(partition).encode()
    batch = pa.record_batch({"id": pa.array(ids, pa.int64())}).replace_schema_metadata(md)

    def gen():
        if ids:
            yield batch
        if cut:
            raise ConnectionAbortedError("the task died")

    proc = net.connect_processor(address, codec="arrow")
    rs.from_iterable(gen()).subscribe(proc)
    return rs.to_list(proc, timeout=20)[0].to_pylist()[0]["status"]


@pytest.mark.parametrize("rerun_rows", [4, 9, 0])
def test_a_real_time_epoch_run_again_shorter_carries_the_rows_delivered_beyond_it_to_the_next_epoch(
    tmp_path, rerun_rows
):
    """Spark runs the epoch a stopped real-time query was in again from the same start, but its end
    is decided afresh: it may end before the rows the stopped run delivered, or before any row (then
    the task's channel sends nothing). Those rows are then the first of the partition's next epoch,
    and must not be delivered again (they used to be)."""
    ledger = tmp_path / "ledger.json"
    first = Recorder()
    ep = serve_sink(first, ledger=str(ledger))
    assert open_epoch(ep.address, 4, 1, range(100, 110)) == "delivered"
    with pytest.raises(ConnectionAbortedError, match="the task died"):  # the query stops mid-epoch 5
        open_epoch(ep.address, 5, 1, range(110, 120), cut=True)
    assert ep.hub.wait_idle(10)
    ep.stop()
    assert ids(first) == list(range(100, 120))
    cut_off = {"batch_id": 5, "rows": 10, "total": 10, "ended": False}
    assert json.loads(ledger.read_text())["partitions"]["1"] == cut_off

    second = Recorder()
    ep = serve_sink(second, ledger=str(ledger))  # the restarted query's hub
    try:  # epoch 5 again from its start; this time it ends after rerun_rows rows, all delivered before
        assert open_epoch(ep.address, 5, 1, range(110, 110 + rerun_rows)) == "delivered"
    finally:
        ep.stop()
    carried = {"batch_id": 5, "rows": rerun_rows, "total": rerun_rows, "carry": 10 - rerun_rows}
    want = carried if rerun_rows else cut_off  # an attempt without rows never reaches the ledger
    assert json.loads(ledger.read_text())["partitions"]["1"] == want, "the carry is kept in the file"
    third = Recorder()
    ep = serve_sink(third, ledger=str(ledger))  # and survives another restart
    try:  # epoch 6 starts where epoch 5 ended this time: its first rows reached the Subscriber before
        assert open_epoch(ep.address, 6, 1, range(110 + rerun_rows, 130)) == "delivered"
    finally:
        ep.stop()
    assert ids(second) == [] and ids(third) == list(range(120, 130)), "rows delivered twice or lost"
    end = 20 - rerun_rows
    assert json.loads(ledger.read_text())["partitions"]["1"] == {"batch_id": 6, "rows": end, "total": end}


@pytest.mark.parametrize("third_end", [3, 6, 8, 12])
def test_a_real_time_epoch_run_a_third_time_counts_the_rows_carried_over_as_delivered_again(tmp_path, third_end):
    """Two stops within one epoch: the second attempt ended after 6 of the 10 rows the first had
    delivered (4 carried over), then the query stopped before Spark logged the epoch, so a third
    attempt runs it again to another end: the carried rows count as delivered rows of it again."""
    ledger = str(tmp_path / "ledger.json")
    seen = []
    for attempt in [range(110, 120), range(110, 116)]:
        rec = Recorder()
        ep = serve_sink(rec, ledger=ledger)
        try:
            if len(attempt) == 10:  # the first attempt: the query stops mid-epoch
                with pytest.raises(ConnectionAbortedError):
                    open_epoch(ep.address, 5, 1, attempt, cut=True)
                assert ep.hub.wait_idle(10)
            else:
                assert open_epoch(ep.address, 5, 1, attempt) == "delivered"
        finally:
            ep.stop()
        seen += ids(rec)
    rec = Recorder()
    ep = serve_sink(rec, ledger=ledger)
    try:
        assert open_epoch(ep.address, 5, 1, range(110, 110 + third_end)) == "delivered"
        assert open_epoch(ep.address, 6, 1, range(110 + third_end, 130)) == "delivered"
    finally:
        ep.stop()
    assert seen + ids(rec) == list(range(110, 130)), "rows delivered twice or lost"


def test_a_commits_last_batch_queued_while_the_drain_found_the_queue_empty_is_delivered_before_the_answer():
    """The drain saw an empty queue and released the hub's lock; before it acknowledged the commits,
    a commit queued its last record batch and completed. It must be answered after those rows reach
    the Subscriber (it was answered "incomplete", failing a commit that then delivered everything)."""
    rec = Recorder()
    hub = DeliveryHub(rec)
    hub.subscription.request(1000)
    ch = CommitChannel(hub)
    answers = Recorder()
    ch.subscribe(answers)
    ch.on_subscribe(_NoDemand())
    ch.on_next(tag_batch(rows(0, 5), 0, 0, 10))
    assert ids(rec) == [0, 1, 2, 3, 4]
    head, late = hub.head, []

    def head_then_the_last_batch():  # the window: after head() found nothing, before queue_empty()
        cur = head()
        if cur is None and not late:
            late.append(
                threading.Thread(target=lambda: (ch.on_next(tag_batch(rows(5, 10), 0, 5, 10)), ch.on_complete()))
            )
            late[0].start()
            late[0].join()
        return cur

    hub.head = head_then_the_last_batch
    hub.subscription.request(1)  # a drain pass (a request, another partition's commit) opens the window
    assert ids(rec) == list(range(10))
    assert [a["status"] for b in answers.items for a in b.to_pylist()] == ["delivered"]
    assert hub.ledger.rows == 10


class _NoDemand:
    def request(self, n):
        pass

    def cancel(self):
        pass


def _raw_commit(address: str) -> tuple[socket.socket, list[bytes]]:
    """A raw connection to the hub, as a hostile commit would open it (SETUP with the token), and
    the Arrow IPC bytes of a 0-row record batch naming epoch 5 of partition 1, open-ended."""
    a = parse(address)
    sock = socket.create_connection((a.host, a.port), timeout=5)
    sock.sendall(raw(F.encode_setup(1000, 10000, M.COMPOSITE, ARROW_MIME, metadata=setup_metadata(a.token))))
    md = {META_BATCH: b"5", META_START: b"0", META_TOTAL: b"0", META_OPEN: b"1", META_PARTITION: b"1"}
    empty = pa.record_batch({"id": pa.array([], pa.int64())}).replace_schema_metadata(md)
    return sock, [raw(make_codec("arrow").encode(empty))]


def _next_ok(frames: RawFrames) -> F.Frame:
    f = frames.next()
    assert f.type != F.ERROR, bytes(f.data).decode()
    return f


def test_a_commit_flooding_the_hub_with_empty_batches_within_its_credits_gets_one_answer():
    """An epoch without rows names itself in a 0-row batch, kept for the hub (other Subscribers
    never see empty batches) at one credit each, like a 1-row batch, and given back once taken. A
    hostile commit sends 100,000 of them, the first in REQUEST_CHANNEL (rsocket-java's
    convention), as fast as the hub's credits allow: the credits keep coming, the commit is
    answered once, nothing reaches the Subscriber, and the hub serves on. (The first in
    REQUEST_CHANNEL used to fail the commit with rule 1.1.)"""
    rec = Recorder()
    ep = serve_sink(rec)
    sock = None
    try:
        sock, (empty,) = _raw_commit(ep.address)
        route = M.request_metadata(M.COMPOSITE, parse(ep.address).name)
        sock.sendall(raw(F.encode_request(F.REQUEST_CHANNEL, 1, 1, metadata=route, data=[empty])))
        frames, one, left, credit = RawFrames(sock), raw(F.encode_payload(1, [empty])), 100_000 - 1, 0
        while left:
            while credit == 0:  # wait for the hub to grant more
                f = _next_ok(frames)
                if f.type == F.REQUEST_N and f.stream_id == 1:
                    credit += f.request_n
            k = min(credit, left, 10_000)
            sock.sendall(one * k)
            credit, left = credit - k, left - k
        sock.sendall(raw(F.encode_payload(1, next=False, complete=True)))
        while not ((f := _next_ok(frames)).type == F.PAYLOAD and f.flags & F.FLAG_NEXT):
            pass
        assert make_codec("arrow").decode(f.data).to_pylist()[0]["status"] == "delivered"
        assert rec.items == [] and ep.hub.buffered == 0
        assert ep.hub.ledger.partition(1).as_dict() == {"batch_id": 5, "rows": 0, "total": 0}
        assert commit(ep.address, 0, [rows(0, 3)])[0].to_pylist()[0]["status"] == "delivered"
    finally:
        if sock is not None:
            sock.close()
        ep.stop()


def test_the_first_end_decides_and_later_ends_change_nothing():
    rec = Recorder()
    ep = serve_sink(rec)
    try:
        ep.finish(SinkError("the query failed"))
        ep.finish()  # a later stop (or a second end message) neither completes nor changes the reason
        assert rec.done.wait(5) and isinstance(rec.error, SinkError) and not rec.completed
        assert ep.hub.end.reason is EndReason.QUERY_FAILED and ep.hub.ended == "the query failed: the query failed"
    finally:
        ep.stop()


def test_spec_2_13_on_next_raising_refuses_the_commit_naming_the_row_that_raised():
    rec = Recorder(raise_at=14)
    ep = serve_sink(rec)
    try:
        commit(ep.address, 0, [rows(0, 10)])
        with pytest.raises(
            net.RemoteError,
            match=r"raised RuntimeError: subscriber refuses element 14 in on_next at "
            r"micro-batch 1, row 4 \(rule 2.13",
        ):
            commit(ep.address, 1, [rows(10, 20)])
        assert ep.hub.end.reason is EndReason.SUBSCRIBER_RAISED and ep.hub.ledger.rows == 4
        with pytest.raises(net.RemoteError, match="rule 2.13"):  # and every later commit
            commit(ep.address, 1, [rows(10, 20)])
    finally:
        ep.stop()


def test_spec_3_9_a_bad_request_refuses_the_commit_naming_where_the_subscriber_was():
    rec = Recorder(batch=2, bad_request_after=4)
    ep = serve_sink(rec)
    try:
        with pytest.raises(net.RemoteError, match="broke the Reactive Streams spec after micro-batch 0, row 3"):
            commit(ep.address, 0, [rows(0, 10)])
        assert rec.done.wait(5) and "rule 3.9" in str(rec.error)
        assert ep.hub.end.reason is EndReason.SUBSCRIBER_VIOLATED and ids(rec) == [0, 1, 2, 3]
    finally:
        ep.stop()


def test_a_commit_that_skips_rows_is_refused():
    rec = Recorder()
    ep = serve_sink(rec)
    try:
        proc = net.connect_processor(ep.address, codec="arrow")
        rs.just(tag_batch(rows(0, 5), 0, 5, 10)).subscribe(proc)  # starts at row 5 of a new batch
        with pytest.raises(net.RemoteError, match="gap"):
            rs.to_list(proc, timeout=10)
    finally:
        ep.stop()


def test_hub_refuses_a_non_subscriber():
    with pytest.raises(TypeError, match="Subscriber"):
        DeliveryHub(object())
    with pytest.raises(ValueError, match="elements"):
        DeliveryHub(Recorder(), elements="frames")


class TestDeliveryHubAsPublisher(PublisherVerification):
    """The hub is a Publisher to the user's Subscriber: every publisher rule, with the elements
    arriving through one real commit channel and finish() as the end of the query."""

    timeouts = Timeouts(default=2.0, no_signals=0.1, poll=0.01, gc=0.5)
    skips = bounded(2000, "one commit of all rows")

    def max_elements_from_publisher(self):
        return 2000

    def create_publisher(self, elements):
        return _HubPublisher(elements)

    def create_failed_publisher(self):
        return _HubPublisher(0, error=SinkError("the query failed"))


class _HubPublisher:
    def __init__(self, n, error=None):
        self.n, self.error = n, error

    def subscribe(self, subscriber):
        if subscriber is None:
            raise TypeError("subscribe(None) (rule 1.9)")
        hub = DeliveryHub(subscriber, elements="tuples")
        address = hub.serve()

        def run():
            try:
                if self.n:
                    commit(address, 0, [rows(0, self.n)])
            except Exception:
                pass  # the subscriber cancelled: the commit is refused, as in a query
            hub.finish(self.error)
            hub.stop()

        threading.Thread(target=run, daemon=True).start()


def test_keep_subscriber_on_abort_a_restarted_runs_commits_go_on_after_the_ledger():
    """Option keepSubscriberOnAbort with a raw endpoint: the abort control message carries the window;
    the Subscriber gets no signal, and the restarted query's replay of the failed batch is delivered once."""
    rec = Recorder()
    ep = serve_sink(rec)
    try:
        commit(ep.address, 0, [rows(0, 10)])
        send_control(ep.address, {"op": "abort", "batch_id": 1, "reason": "a task failed", "keep": 60})
        wait_until(lambda: ep.hub.kept, "the hub to keep the Subscriber")
        assert not rec.done.is_set() and ep.hub.end is None
        ack = commit(ep.address, 0, [rows(0, 10)])  # the restart re-runs the last committed batch: a duplicate
        assert ack[0].to_pylist()[0]["status"] == "duplicate" and not ep.hub.kept
        commit(ep.address, 1, [rows(10, 20)])  # the failed batch, replayed under its id
        assert ids(rec) == list(range(20)) and not rec.done.is_set()
    finally:
        ep.stop()


def test_keep_subscriber_on_abort_ends_the_subscriber_with_the_failure_once_the_window_passed():
    rec = Recorder()
    ep = serve_sink(rec)
    expired = threading.Event()
    try:
        commit(ep.address, 0, [rows(0, 5)])
        ep.hub.keep(QueryFailed("the query failed: boom"), 1.0, on_expiry=expired.set)
        assert rec.wait_done(30).error is not None and "boom" in str(rec.error)
        assert expired.is_set() and not ep.hub.kept and ids(rec) == list(range(5))
        with pytest.raises(net.RemoteError, match="takes no more batches"):
            commit(ep.address, 1, [rows(5, 6)])
    finally:
        ep.stop()


def test_without_keep_an_abort_ends_the_subscriber_with_on_error():
    rec = Recorder()
    ep = serve_sink(rec)
    try:
        commit(ep.address, 0, [rows(0, 5)])
        send_control(ep.address, {"op": "abort", "batch_id": 1, "reason": "a task failed"})
        assert isinstance(rec.wait_done(30).error, BatchAborted) and not ep.hub.kept
    finally:
        ep.stop()


def test_a_stopped_runs_hub_ending_late_leaves_the_restarted_runs_ledger_file_alone(tmp_path):
    """Two runs of one query in one driver share a ledger file: the stopped run's hub ends (its
    query's end arrives late) after the restarted run's hub delivered more; the file keeps the newer ledger."""
    ledger = str(tmp_path / "ledger.json")
    first, second = Recorder(), Recorder()
    stopped = serve_sink(first, ledger=ledger)
    commit(stopped.address, 0, [rows(0, 10)])
    restarted = serve_sink(second, ledger=ledger)
    try:
        commit(restarted.address, 1, [rows(10, 20)])
        stopped.finish()  # the stopped run's late end: on_complete, the subscription ends
        assert first.wait_done(10).completed
        assert json.loads(open(ledger).read()) == {"batch_id": 1, "rows": 10, "total": 10}
    finally:
        stopped.stop()
        restarted.stop()
