"""Resumable streams over real sockets: the server keeps what it sent until the reader
acknowledges it; a reader that comes back (a new process, or the same one after a network drop)
continues at any kept position; a stream nobody resumes is cancelled after its window."""

from __future__ import annotations

import socket
import threading

import pyarrow as pa
import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol.auth import setup_metadata
from rs_spark.net.protocol.errors import ResumeRejected
from rs_spark.net.protocol.metadata import COMPOSITE, request_metadata
from rs_spark.net.zero_loss.resume import (
    STREAM_ID,
    ResumeRequest,
    commit_metadata,
    new_key,
    parse_push,
    resume_token,
)
from rs_spark.net.zero_loss.retention import Retention
from tests.net._procs import serve_spilling
from tests.net._serving import serving
from tests.publishers import Counting
from tests.subscribers import Recorder
from tests.waits import wait_until
from tests.wire import RawFrames

TOKEN = "resume-test-token"


serve = serving(TOKEN)


def _stream(server):
    streams = server.stats().streams
    assert len(streams) == 1, streams
    return streams[0]


def _read_then_detach(server, rows: int, acked: int | None = None) -> str:
    """A resumable reader of ``server`` takes ``rows`` rows, acknowledges the first ``acked`` (when
    given) and goes as a reader process that dies goes (no CANCEL, the connection just closes); its
    stream key, once the server holds the stream detached."""
    reader = net.connect(server.address, token=TOKEN).resumable()
    r = Recorder(rows, refill=False)
    reader.subscribe(r)
    wait_until(lambda: len(r.items) == rows, what=f"{rows} rows")
    if acked is not None:
        r.s.on_commit(acked)
        wait_until(lambda: _stream(server).acked_position == acked, what="the acknowledgement")
    r.s.detach()
    wait_until(lambda: _stream(server).state == "detached", what="the stream to wait for a resume")
    return reader.key


def test_a_new_reader_resumes_at_its_acknowledged_position_and_gets_every_later_row_once(serve):
    server = serve(rs.range_(1000))
    key = _read_then_detach(server, 100, acked=40)
    second = net.connect(server.address, token=TOKEN).resumable(key)
    r2 = Recorder(10_000, refill=False)
    second.subscribe_at(r2, 40)
    assert r2.done.wait(20) and r2.error is None, r2.error
    assert r2.items == list(range(40, 1000))
    s = _stream(server)
    assert (s.resumes, s.resent_records) == (1, 60)


def test_retention_keeps_only_rows_not_acknowledged(serve):
    server = serve(rs.range_(1000))
    pub = net.connect(server.address, token=TOKEN).resumable()
    r = Recorder(300, refill=False)
    pub.subscribe(r)
    wait_until(lambda: len(r.items) == 300, what="300 rows")
    r.s.on_commit(250)
    wait_until(lambda: r.s.retention.get("ackedPosition") == 250, what="the server's answer")
    assert r.s.retention["retainedRecords"] == 50
    assert _stream(server).held_records == 50


def test_a_full_retention_stops_asking_the_publisher_until_acknowledged(serve):
    pub = Counting(10_000)
    server = serve(pub, retention=Retention(max_records=200))
    r = Recorder(5000, refill=False)
    net.connect(server.address, token=TOKEN).resumable().subscribe(r)
    wait_until(lambda: len(r.items) == 200, what="the first 200 rows")
    assert pub.requested == 200  # the reader wants 5000; the bound held the publisher at 200
    assert _stream(server).held_records == 200
    r.s.on_commit(150)  # room for 150 more: the publisher is asked for them
    wait_until(lambda: len(r.items) == 350, what="rows after the acknowledgement")
    assert pub.requested == 350 and _stream(server).held_records == 200


def test_the_publisher_hears_on_commit_once_per_position_in_order(serve):
    pub = Counting(1000)
    server = serve(pub)
    r = Recorder(500, refill=False)
    net.connect(server.address, token=TOKEN).resumable().subscribe(r)
    wait_until(lambda: len(r.items) == 500, what="500 rows")
    for p in (100, 100, 50, 300, 500):
        r.s.on_commit(p)
    wait_until(lambda: pub.commits == [100, 300, 500], what="the commits")


def test_a_stream_nobody_resumes_is_cancelled_after_its_window_and_its_rows_counted_lost(serve):
    pub = Counting(1000)
    server = serve(pub, retention=Retention(window=0.5))
    r = Recorder(100, refill=False)
    net.connect(server.address, token=TOKEN).resumable().subscribe(r)
    wait_until(lambda: len(r.items) == 100, what="100 rows")
    r.s.on_commit(30)
    wait_until(lambda: _stream(server).acked_position == 30, what="the acknowledgement")
    r.s.detach()
    assert pub.cancelled.wait(10), "the publisher was not cancelled after the window"
    wait_until(lambda: server.stats().expired_streams == 1, what="the expiry")
    stats = server.stats()
    assert stats.streams == () and stats.lost_records >= 70


def test_a_reader_that_cancels_ends_the_stream_at_once(serve):
    pub = Counting(1000)
    server = serve(pub)
    r = Recorder(10, refill=False)
    net.connect(server.address, token=TOKEN).resumable().subscribe(r)
    wait_until(lambda: len(r.items) == 10, what="10 rows")
    r.s.cancel()
    assert pub.cancelled.wait(10)
    wait_until(lambda: server.stats().streams == (), what="the stream to be forgotten")


def test_resuming_an_unknown_stream_past_its_start_is_refused_saying_why(serve):
    server = serve(rs.range_(10))
    pub = net.connect(server.address, token=TOKEN).resumable("0" * 32)
    r = Recorder(10, refill=False)
    pub.subscribe_at(r, 5)
    assert r.done.wait(10)
    assert isinstance(r.error, ResumeRejected)
    assert "does not know this stream" in str(r.error) and "0" * 32 in str(r.error)


def test_a_stream_named_before_it_was_opened_is_opened_under_its_key_at_position_0(serve):
    """The source puts a new stream's key into Spark's checkpoint before it opens the stream; a
    reader restarted with that key and nothing received opens it then, under the same key."""
    server = serve(rs.range_(10))
    pub = net.connect(server.address, token=TOKEN).resumable("1" * 32)
    r = Recorder(100, refill=False)
    pub.subscribe_at(r, 0)
    assert r.done.wait(10) and r.error is None
    assert r.items == list(range(10))


def test_an_expired_stream_is_not_opened_again_as_new(serve):
    server = serve(rs.range_(100), retention=Retention(window=0.2))
    first = net.connect(server.address, token=TOKEN).resumable()
    r1 = Recorder(5, refill=False)
    first.subscribe(r1)
    wait_until(lambda: len(r1.items) == 5, what="5 rows")
    r1.s.detach()
    wait_until(lambda: server.stats().expired_streams == 1, what="the expiry")
    r2 = Recorder(5, refill=False)
    net.connect(server.address, token=TOKEN).resumable(first.key).subscribe_at(r2, 0)
    assert r2.done.wait(10) and isinstance(r2.error, ResumeRejected)
    assert "the stream expired" in str(r2.error) and r2.items == []


def test_resuming_before_the_acknowledged_position_is_refused(serve):
    server = serve(rs.range_(1000))
    key = _read_then_detach(server, 100, acked=60)
    r2 = Recorder(10, refill=False)
    net.connect(server.address, token=TOKEN).resumable(key).subscribe_at(r2, 10)
    assert r2.done.wait(10) and isinstance(r2.error, ResumeRejected)
    assert "earlier rows were acknowledged and freed" in str(r2.error)


def test_the_resume_token_needs_the_endpoint_token(serve):
    server = serve(rs.range_(1000))
    key = _read_then_detach(server, 10)
    thief = Recorder(10, refill=False)  # knows the stream key (it is in Spark's offsets), not the endpoint's token
    net.connect(server.address, token="guessed").resumable(key).subscribe_at(thief, 0)
    assert thief.done.wait(10) and isinstance(thief.error, net.Refused)  # not resumed, and not let in as new
    assert "wrong token" in str(thief.error) and thief.items == []


def test_a_peer_asking_for_rsocket_byte_position_resumption_is_refused():
    server = net.serve(rs.range_(10), name="nums")
    try:
        host, port = server.base_address.split("//")[1].split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            frame = F.encode_setup(1000, 5000, COMPOSITE, "application/json", resume_token=b"java-style-token")
            sock.sendall(b"".join(bytes(b) for b in frame))
            data = sock.recv(4096)
        f = F.decode(data[3:])
        assert f.type == F.ERROR and f.error_code == F.REJECTED_SETUP
        assert b"row position" in bytes(f.data)
    finally:
        server.stop()


def test_acknowledging_more_than_was_received_is_a_value_error(serve):
    server = serve(rs.range_(100))
    r = Recorder(10, refill=False)
    net.connect(server.address, token=TOKEN).resumable().subscribe(r)
    wait_until(lambda: len(r.items) == 10, what="10 rows")
    with pytest.raises(ValueError, match="cannot acknowledge position 11: only 10 received"):
        r.s.on_commit(11)


class _Proxy:
    """A TCP proxy whose connections the test can cut, as a network would."""

    def __init__(self, target: str) -> None:
        host, port = target.split("//")[1].split(":")
        self.target = (host, int(port.split("/")[0]))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                a, _ = self.listener.accept()
            except OSError:
                return
            b = socket.create_connection(self.target)
            self.pairs.append((a, b))
            self.accepted += 1
            for x, y in ((a, b), (b, a)):
                threading.Thread(target=self._copy, args=(x, y), daemon=True).start()

    @staticmethod
    def _copy(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        for a, b in self.pairs:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self.pairs.clear()

    def close(self) -> None:
        self.cut()
        self.listener.close()


@pytest.mark.parametrize("codec", ["json", "arrow"])
def test_a_reader_whose_connection_drops_resumes_by_itself_and_loses_nothing(serve, codec):
    rows = 3000
    if codec == "arrow":
        data = [pa.record_batch([pa.array(range(i, i + 100), pa.int64())], names=["v"]) for i in range(0, rows, 100)]
        server = serve(rs.from_iterable(data))
    else:
        server = serve(rs.range_(rows))
    proxy = _Proxy(server.base_address)
    try:
        pub = net.connect(f"tcp://127.0.0.1:{proxy.port}/nums", token=TOKEN, codec=codec, batch_rows=37).resumable()
        got: list[int] = []
        done = threading.Event()
        errors: list[BaseException] = []
        cut_at = [300, 700, 1100, 1500, 2000, 2500]

        class Reader:
            def on_subscribe(self, s):
                self.s = s
                s.request(1)

            def on_next(self, x):
                got.extend(x.column(0).to_pylist() if codec == "arrow" else [x])
                if cut_at and len(got) >= cut_at[0]:
                    cut_at.pop(0)
                    self.s.on_commit(len(got) - 10)
                    proxy.cut()
                self.s.request(1)

            def on_error(self, e):
                errors.append(e)
                done.set()

            def on_complete(self):
                done.set()

        pub.subscribe(Reader())
        assert done.wait(60), f"stalled at {len(got)} rows"
        assert not errors, errors
        assert got == list(range(rows))
        assert proxy.accepted >= 4  # resumed at least three times (a cut can land while a resume is under way)
    finally:
        proxy.close()


def test_cancel_reaches_a_publisher_whose_request_is_still_running(serve):
    """Rules 1.8 and 3.12: a publisher that emits synchronously inside request() (slowly) is told
    to stop while that request() is still running, not after it returns; what it sends after the
    cancel is counted."""
    started = threading.Event()
    release = threading.Event()
    cancelled_while_requesting = threading.Event()
    inside = threading.Event()

    class Slow:
        def subscribe(self, subscriber):
            state = {"cancelled": False}

            class S:
                def request(self, n):
                    inside.set()
                    for i in range(n):
                        if state["cancelled"]:
                            cancelled_while_requesting.set()
                            return
                        subscriber.on_next(i)
                        started.set()
                        release.wait(0.01)

                def cancel(self):
                    state["cancelled"] = True

            subscriber.on_subscribe(S())

    server = serve(Slow(), retention=Retention.off())
    r = Recorder(1000, refill=False)
    net.connect(server.address, token=TOKEN).subscribe(r)
    assert started.wait(10)
    r.s.cancel()
    assert cancelled_while_requesting.wait(10), "cancel waited for the publisher's request() to return"
    release.set()


def test_streams_of_readers_that_do_not_resume_work_as_before(serve):
    server = serve(rs.range_(500))
    assert rs.to_list(net.connect(server.address, token=TOKEN), timeout=20) == list(range(500))
    assert server.stats().streams == ()


def test_elements_that_arrive_while_the_reader_is_away_are_kept_not_dropped(serve):
    gate = threading.Event()
    emitted = []

    class Late:
        """Emits its first 10 at once, the rest of the demand only once the gate opens."""

        def subscribe(self, subscriber):
            class S:
                def __init__(self):
                    self.sent = 0

                def request(self, n):
                    for _ in range(n):
                        if self.sent >= 10 and not gate.is_set():
                            threading.Thread(target=self._later, args=(n - (self.sent % n),), daemon=True).start()
                            return
                        subscriber.on_next(self.sent)
                        emitted.append(self.sent)
                        self.sent += 1

                def _later(self, k):
                    gate.wait(10)
                    for _ in range(k):
                        subscriber.on_next(self.sent)
                        emitted.append(self.sent)
                        self.sent += 1

                def cancel(self):
                    pass

            subscriber.on_subscribe(S())

    server = serve(Late())
    first = net.connect(server.address, token=TOKEN).resumable()
    r1 = Recorder(20, refill=False)
    first.subscribe(r1)
    wait_until(lambda: len(r1.items) == 10, what="the first 10")
    r1.s.detach()
    wait_until(lambda: _stream(server).state == "detached", what="detached")
    gate.set()  # the publisher answers the demand it already had while nobody is connected
    wait_until(lambda: _stream(server).end_position > 10, what="late elements kept")
    r2 = Recorder(len(emitted) + 100, refill=False)
    net.connect(server.address, token=TOKEN).resumable(first.key).subscribe_at(r2, 10)
    wait_until(lambda: len(r2.items) >= len(emitted) - 10, what="the late elements")
    assert r2.items[: len(emitted) - 10] == emitted[10:]


def _spawn_spilling(port, spill, counter_file):
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    p = ctx.Process(target=serve_spilling, args=(port, str(spill), str(counter_file), child, TOKEN), daemon=True)
    p.start()
    assert parent.poll(60), "the serving process did not start"
    return p, parent.recv()


def test_with_spill_the_kept_rows_survive_a_sigkill_of_the_serving_process(tmp_path):
    """The serving process dies after sending rows the reader had not committed, and the reader
    dies too; a new serving process on the same spill folder and port serves them again to a new
    reader that resumes at its committed position, then continues with new rows: nothing lost."""
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    spill, counter = tmp_path / "spill", tmp_path / "counter"
    p1, address = _spawn_spilling(port, spill, counter)
    try:
        first = net.connect(address, token=TOKEN).resumable()
        r1 = Recorder(300, refill=False)
        first.subscribe(r1)
        wait_until(lambda: len(r1.items) == 300, what="300 rows")
        r1.s.on_commit(100)
        wait_until(lambda: r1.s.retention.get("ackedPosition") == 100, what="the acknowledgement")
        r1.s.detach()
    finally:
        p1.kill()
        p1.join(30)
    assert any(spill.iterdir()), "nothing was spilled"
    p2, _ = _spawn_spilling(port, spill, counter)
    try:
        r2 = Recorder(500, refill=False)
        net.connect(address, token=TOKEN).resumable(first.key).subscribe_at(r2, 100)
        wait_until(lambda: len(r2.items) == 500 or r2.error, what="500 rows from the restarted server")
        assert r2.error is None, r2.error
        assert r2.items == list(range(100, 600))
    finally:
        p2.kill()
        p2.join(30)


def test_a_tampered_spill_is_refused_naming_the_file(tmp_path):
    spill = tmp_path / "spill"
    server = net.serve(rs.range_(1000), name="nums", token=TOKEN, retention=Retention(spill=str(spill)))
    try:
        key = _read_then_detach(server, 50)
    finally:
        server.stop()  # a stopping server keeps what it spilled
    (segment,) = list(spill.glob("*/segment-*.spill"))
    data = bytearray(segment.read_bytes())
    data[8:12] = (10**6).to_bytes(4, "big")  # the first entry claims a million rows
    segment.write_bytes(bytes(data))
    again = net.serve(rs.range_(1000), name="nums", token=TOKEN, retention=Retention(spill=str(spill)))
    try:
        r2 = Recorder(10, refill=False)
        net.connect(again.address, token=TOKEN).resumable(key).subscribe_at(r2, 0)
        assert r2.done.wait(10) and isinstance(r2.error, ResumeRejected)
        assert segment.name in str(r2.error) and "the file was changed, or rows are missing" in str(r2.error)
    finally:
        again.stop()


def test_a_server_stopped_after_its_reader_left_discards_the_kept_rows_at_info_level_not_as_lost(serve, caplog):
    """A query that ended detaches its stream (so a restart could resume it); rows it was sent and
    never acknowledged (prefetched beyond its last commit) are discarded when the server stops:
    no loss for a query that ended, so no warning (the quickstart notebook's last cell)."""
    server = serve(Counting(1000))
    r = Recorder(100, refill=False)
    net.connect(server.address, token=TOKEN).resumable().subscribe(r)
    wait_until(lambda: len(r.items) == 100, what="100 rows")
    r.s.on_commit(30)
    wait_until(lambda: _stream(server).acked_position == 30, what="the acknowledgement")
    r.s.detach()
    wait_until(lambda: _stream(server).state == "detached", what="the stream to wait for a resume")
    with caplog.at_level("INFO", logger="rs_spark.net"):
        server.stop()
    stats = server.stats()
    assert (stats.lost_records, stats.discarded_records, stats.expired_streams) == (0, 70, 1), stats
    assert _warnings_about(server, caplog) == []
    (info,) = [rec.getMessage() for rec in caplog.records if "discarded" in rec.getMessage()]
    assert "had no reader" in info and "70 rows sent to it and not acknowledged" in info, info


def test_a_server_stopped_while_its_reader_reads_warns_that_the_kept_rows_are_lost(serve, caplog):
    server = serve(Counting(1000))
    r = Recorder(100, refill=False)
    net.connect(server.address, token=TOKEN).resumable().subscribe(r)
    wait_until(lambda: len(r.items) == 100, what="100 rows")
    r.s.on_commit(30)
    wait_until(lambda: _stream(server).acked_position == 30, what="the acknowledgement")
    with caplog.at_level("INFO", logger="rs_spark.net"):
        server.stop()  # the reader is still connected: a running query loses these rows
    stats = server.stats()
    assert (stats.lost_records, stats.discarded_records) == (70, 0), stats
    warnings = [rec.getMessage() for rec in caplog.records if rec.levelname == "WARNING"]
    assert any("70 rows it kept for its reader are lost" in w for w in warnings), warnings
    r.s.cancel()  # the reader would try to resume for the server's window


def test_a_finished_stream_whose_reader_left_is_discarded_at_info_level_when_the_server_stops(serve, caplog):
    """The stream sent all its rows and its end; the reader left before acknowledging the last ones
    (an AvailableNow query's reader process ends before it acknowledged its last micro-batches)."""
    server = serve(rs.range_(100))
    r = Recorder(1000, refill=False)
    net.connect(server.address, token=TOKEN).resumable().subscribe(r)
    assert r.done.wait(10) and r.error is None and len(r.items) == 100
    assert _stream(server).held_records == 100  # kept: none acknowledged
    r.s.detach()  # as the reader process that exits
    wait_until(lambda: server.connection_count == 0, what="the reader's connection to close")
    with caplog.at_level("INFO", logger="rs_spark.net"):
        server.stop()
    stats = server.stats()
    assert (stats.lost_records, stats.discarded_records) == (0, 100), stats
    assert _warnings_about(server, caplog) == []


def _warnings_about(server, caplog) -> list[str]:
    """WARNING lines about ``server``'s streams (a reader of an earlier test, whose server stopped under
    it, may still be trying to resume its own stream meanwhile)."""
    port = server.address.split(":")[-1].split("/")[0]
    said = [rec.getMessage() for rec in caplog.records if rec.levelname == "WARNING"]
    return [m for m in said if f":{port}" in m]


class _WireReader:
    """A reader speaking the resume conventions on a raw socket, frame by frame (what the server
    answers to each acknowledgement after the end)."""

    def __init__(self, server, key: str) -> None:
        host, port = server.base_address.split("//")[1].split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.frames = RawFrames(self.sock, timeout=10)
        setup = F.encode_setup(
            1000,
            60000,
            COMPOSITE,
            "application/json",
            metadata=setup_metadata(TOKEN, [ResumeRequest().entry()]),
            resume_token=resume_token(TOKEN, key),
        )
        route = request_metadata(COMPOSITE, "nums")
        self.send(setup, F.encode_request(F.REQUEST_STREAM, STREAM_ID, 100, metadata=route))

    def send(self, *frames) -> None:
        self.frames.send(*frames)

    def next_frame(self) -> F.Frame:
        return self.frames.next()


def test_a_finished_stream_is_kept_until_its_last_row_is_acknowledged_then_ends(serve):
    """The stream sent its rows and its end (RetainingState.FINISHING, shown as attached): it keeps them
    until the reader acknowledges the last one, then it ends and the server forgets it."""
    server = serve(rs.range_(5))
    r = _WireReader(server, new_key())
    try:
        got = []
        while True:
            f = r.next_frame()
            if f.type == F.PAYLOAD and f.flags & F.FLAG_NEXT:
                got.append(bytes(f.data))
            if f.type == F.PAYLOAD and f.flags & F.FLAG_COMPLETE:
                break
        assert got == [b"0", b"1", b"2", b"3", b"4"]
        s = _stream(server)
        assert (s.state, s.held_records, s.sent_position) == ("attached", 5, 5), s
        r.send(F.encode_metadata_push(commit_metadata(3)))
        answer = r.next_frame()
        assert answer.type == F.METADATA_PUSH
        assert parse_push(bytes(answer.metadata))[1]["retainedRecords"] == 2
        assert _stream(server).acked_position == 3
        r.send(F.encode_metadata_push(commit_metadata(5)))
        wait_until(lambda: server.stats().streams == (), what="the finished stream to end")
        assert server.stats().lost_records == 0
    finally:
        r.sock.close()


def test_acknowledgements_after_the_end_reach_the_publisher_and_the_finished_stream_is_forgotten(serve):
    """The reader acknowledges after on_complete (as Spark commits its last micro-batch after the
    end arrived): the client keeps its connection open while rows it received are not acknowledged,
    so the publisher hears the last position, the stream ends, and then the client closes."""
    pub = Counting(100)
    server = serve(pub)
    r = Recorder(1000, refill=False)
    net.connect(server.address, token=TOKEN).resumable().subscribe(r)
    assert r.done.wait(10) and r.error is None and len(r.items) == 100
    r.s.on_commit(60)
    wait_until(lambda: pub.commits == [60], what=lambda: f"on_commit(60) after the end; heard {pub.commits}")
    assert server.connection_count == 1  # still open: 40 rows received are not acknowledged
    r.s.on_commit(100)
    wait_until(lambda: pub.commits == [60, 100], what=lambda: f"on_commit(100); heard {pub.commits}")
    wait_until(lambda: server.stats().streams == (), what="the finished stream to be forgotten")
    wait_until(lambda: server.connection_count == 0, what="the client to close its connection")
    stats = server.stats()
    assert (stats.expired_streams, stats.lost_records, stats.discarded_records) == (0, 0, 0), stats


def test_a_reader_that_cancels_after_the_end_closes_its_connection_at_once(serve):
    """Waiting for acknowledgements after the end is bounded by the reader: cancel (or detach)
    closes the connection without them."""
    server = serve(rs.range_(100))
    r = Recorder(1000, refill=False)
    net.connect(server.address, token=TOKEN).resumable().subscribe(r)
    assert r.done.wait(10) and r.error is None and len(r.items) == 100
    r.s.on_commit(30)
    wait_until(lambda: _stream(server).acked_position == 30, what="the acknowledgement after the end")
    r.s.cancel()
    wait_until(lambda: server.connection_count == 0, what="the client to close its connection")
    assert _stream(server).state == "detached"  # kept for its window: a reader may still resume it


def test_a_finished_stream_whose_reader_leaves_without_acknowledging_expires_after_its_window(serve):
    """The stream sent its end (RetainingState.FINISHING) and waits for the last acknowledgements; its reader
    leaves without them: the stream hears its connection close and expires after the window, so it
    cannot keep its rows until the server stops."""
    server = serve(rs.range_(100), retention=Retention(window=0.3))
    r = Recorder(1000, refill=False)
    net.connect(server.address, token=TOKEN).resumable().subscribe(r)
    assert r.done.wait(10) and r.error is None and len(r.items) == 100
    r.s.on_commit(30)
    wait_until(lambda: _stream(server).acked_position == 30, what="the acknowledgement after the end")
    r.s.detach()
    wait_until(lambda: server.stats().expired_streams == 1, what="the finished stream to expire")
    stats = server.stats()
    assert stats.streams == () and stats.lost_records == 70, stats


def test_a_reader_that_acknowledged_every_row_before_the_end_closes_its_connection_at_the_end(serve):
    """Nothing is left to acknowledge when the end arrives: the connection closes at once, and the
    server, which heard the last acknowledgement, ends the stream."""
    pub = Counting(50)
    server = serve(pub)

    class CommitsEach(Recorder):
        def on_next(self, item):
            super().on_next(item)
            self.s.on_commit(len(self.items))

    r = CommitsEach(1000, refill=False)
    net.connect(server.address, token=TOKEN).resumable().subscribe(r)
    assert r.done.wait(10) and r.error is None and len(r.items) == 50
    wait_until(lambda: server.connection_count == 0, what="the client to close its connection")
    wait_until(lambda: server.stats().streams == (), what="the finished stream to end")
    assert pub.commits[-1] == 50 and server.stats().lost_records == 0
