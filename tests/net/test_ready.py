"""How far a served stream's rows are ready (``message/x.rs-spark.ready.v1``, issue 50), on real
sockets: the reader asks, the server answers measured where its publisher runs. Not at the live edge
while the publisher owes nothing (it waits for credit); at the edge once it owed rows for ``wait``
seconds, or ended; the position counts rows delivered into the stream (sent or queued: rows of Arrow
batches, elements otherwise). Hostile questions close the connection saying what was wrong, a flood
holds one timer, and a client never hands a malformed answer on: its stream fails naming the entry.

A publisher the test drives (:class:`Held`) makes "owes rows" and "owes nothing" facts the test
sets, not timing: it emits from the test's thread only what the test releases."""

from __future__ import annotations

import json
import queue
import socket
import threading
import time

import pyarrow as pa
import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol.auth import setup_metadata
from rs_spark.net.protocol.metadata import COMPOSITE, composite, request_metadata
from rs_spark.net.zero_loss.resume import (
    MAX_READY_WAIT,
    READY_MIME,
    RETENTION_MIME,
    STREAM_ID,
    WINDOW_MIME,
    ReadyAnswer,
    ReadyQuestion,
    ResumeRequest,
    commit_metadata,
    new_key,
    ready_answer,
    ready_of,
    ready_question,
    resume_token,
    retention_metadata,
    window_metadata,
)
from rs_spark.streams.scheduler import default_scheduler
from tests.net._serving import serving
from tests.subscribers import Recorder
from tests.waits import wait_until
from tests.wire import RawFrames

pytestmark = pytest.mark.timeout(120)

TOKEN = "ready-test-token"


class Held:
    """A slow publisher the test drives: it records the demand it is asked for and emits, from the
    test's thread (never inside ``request``), only what the test releases with :meth:`emit`."""

    def __init__(self) -> None:
        self.asked = threading.Event()  # request() was called at least once
        self.demand = 0
        self.sent = 0
        self._sub = None
        self._lock = threading.Lock()

    def subscribe(self, subscriber) -> None:
        outer = self

        class S:
            def request(self, n):
                with outer._lock:
                    outer.demand += n
                outer.asked.set()

            def cancel(self):
                pass

        self._sub = subscriber
        subscriber.on_subscribe(S())

    def emit(self, k: int) -> None:
        for _ in range(k):
            with self._lock:
                assert self.demand > 0, "the test released more than the publisher was asked for"
                self.demand -= 1
                i, self.sent = self.sent, self.sent + 1
            self._sub.on_next(i)

    def complete(self) -> None:
        self._sub.on_complete()


serve = serving(TOKEN)


def _reader(server, recorder: Recorder, **how):
    """A resumable reader of ``server`` (the client under test), subscribed with ``recorder``."""
    codec = how.pop("codec", "json")
    batch_rows = how.pop("batch_rows", 65536)
    pub = net.connect(server.address, token=TOKEN, codec=codec, batch_rows=batch_rows).resumable(**how)
    pub.subscribe(recorder)
    recorder.subscribed.wait(10)
    return pub


def _ask(sub, wait: float, timeout: float = 30.0) -> ReadyAnswer:
    """Ask ``sub``'s server and wait (bounded) for its answer."""
    q = sub.ask_ready(wait)
    a = sub.wait_ready(q, timeout)
    assert a is not None, f"no answer to question {q} (wait={wait}) within {timeout} s"
    assert a.id == q
    return a


def _ask_by_key(server, key: str, wait: float, qid: int = 1) -> ReadyAnswer:
    """Ask about stream ``key`` on a connection of its own set up with the token (as a driver may),
    and read the answer (a client's subscription no longer waits for answers once its stream ended)."""
    with _connect(server) as sock:
        frames = RawFrames(sock, timeout=30)
        frames.send(_raw_setup(), F.encode_metadata_push(ready_question(ReadyQuestion(qid, wait), key)))
        while not (got := _answers([frames.next()])):
            pass
    assert got[0].id == qid
    return got[0]


def _kept(server):
    """The server's one RetainingStream (white box: its waiting question's timer is looked at)."""
    (session,) = [s for s in server._host.resume.sessions.all() if s.stream is not None]
    return session.stream


def _ready_timers(stream) -> list[float]:
    """Deadlines (monotonic) of the timers pending for ``stream``'s waiting READY question."""
    sched = default_scheduler()
    with sched._cond:
        return [
            d
            for d, _, handle, action in sched._heap
            if not handle.cancelled and getattr(action, "__self__", None) is stream
        ]


def _timer_thread_passed(now: float) -> None:
    """Wait until the shared timer thread ran every action due before ``now`` (it runs them in
    deadline order, one at a time: a marker due now runs after them)."""
    ran = threading.Event()
    default_scheduler().schedule(max(0.0, now - time.monotonic()), ran.set)
    assert ran.wait(30), "the timer thread did not run a marker action within 30 s"


def _connect(server) -> socket.socket:
    host, port = server.base_address.split("//")[1].split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _raw_setup(token: str = TOKEN) -> list:
    return F.encode_setup(1000, 60000, COMPOSITE, "application/json", metadata=setup_metadata(token))


def _question(body: bytes, key: str | None = None) -> list:
    entries = [(READY_MIME, body)]
    if key is not None:
        entries.append(("message/x.rs-spark.stream.v1", key.encode("ascii")))
    return F.encode_metadata_push(composite(entries))


def _answers(frames) -> list[ReadyAnswer]:
    out = []
    for f in frames:
        if f.type == F.METADATA_PUSH and f.metadata is not None:
            _, a = ready_of(bytes(f.metadata))
            if a is not None:
                out.append(a)
    return out


class _WireReader:
    """A resumable reader on a raw socket (what an attacker holding the token speaks): SETUP asking
    for resumption, then REQUEST_STREAM with ``credit``."""

    def __init__(self, server, credit: int, key: str | None = None) -> None:
        self.key = key or new_key()
        self.sock = _connect(server)
        self.frames = RawFrames(self.sock, timeout=30)
        setup = F.encode_setup(
            1000,
            60000,
            COMPOSITE,
            "application/json",
            metadata=setup_metadata(TOKEN, [ResumeRequest().entry()]),
            resume_token=resume_token(TOKEN, self.key),
        )
        route = request_metadata(COMPOSITE, "nums")
        self.frames.send(setup, F.encode_request(F.REQUEST_STREAM, STREAM_ID, credit, metadata=route))

    def send(self, *frames) -> None:
        self.frames.send(*frames)

    def until(self, pred) -> list[F.Frame]:
        """Frames read until one for which ``pred`` holds (included)."""
        got = []
        while True:
            f = self.frames.next()
            got.append(f)
            if pred(f):
                return got

    def marker(self) -> list[F.Frame]:
        """Acknowledge position 0 and read up to the server's answer to it: frames are handled in
        order, so every earlier frame of ours was handled by then. The frames read, answer included."""
        self.send(F.encode_metadata_push(commit_metadata(0)))
        return self.until(lambda f: f.type == F.METADATA_PUSH and _has(f, RETENTION_MIME))

    def close(self) -> None:
        self.sock.close()


def _has(f: F.Frame, mime: str) -> bool:
    from rs_spark.net.protocol.metadata import parse_composite

    return f.metadata is not None and any(m == mime for m, _ in parse_composite(bytes(f.metadata)))


# -- what the server answers -------------------------------------------------------------------
def test_the_server_says_it_answers_once_the_stream_is_open(serve):
    server = serve(rs.range_(1000))
    r = Recorder(5, refill=False)
    _reader(server, r)
    r.wait_for(5)
    wait_until(lambda: r.s.answers_ready is True, what=lambda: f"answers_ready True, is {r.s.answers_ready}")


def test_not_at_the_edge_while_the_publisher_waits_for_credit(serve):
    """The publisher delivered every row it was asked for and waits for the reader's credit: even a
    zero wait does not make that the live edge; the position is every row it delivered."""
    server = serve(rs.range_(10**6))
    r = Recorder(10, refill=False)
    _reader(server, r)
    r.wait_for(10)
    for wait in (0.0, 5.0):
        a = _ask(r.s, wait)
        assert (a.position, a.edge) == (10, False), a


def test_not_at_the_edge_while_a_slow_publisher_owes_nothing_then_at_it_once_it_owed_rows_for_wait(serve):
    """A publisher that emits from its own thread, slower than asked: once it delivered what it was
    asked for it owes nothing (not the edge, whatever the wait); once it owes rows for ``wait``
    seconds, measured at the server, it is at its edge with the rows it delivered."""
    pub = Held()
    server = serve(pub)
    r = Recorder(1, refill=False)
    _reader(server, r)
    assert pub.asked.wait(10), "the publisher was not asked"
    pub.emit(1)
    r.wait_for(1)
    a = _ask(r.s, 0.0)
    assert (a.position, a.edge) == (1, False), a
    t0 = time.monotonic()  # before the publisher is asked again: it owes from a moment after this
    r.request(100)
    wait_until(lambda: pub.demand == 100, what=lambda: f"the publisher asked for 100, is {pub.demand}")
    pub.emit(3)
    r.wait_for(4)
    a = _ask(r.s, 0.5)
    assert (a.position, a.edge) == (4, True), a
    assert time.monotonic() - t0 >= 0.5, "the server said edge before its publisher owed rows for 0.5 s"
    pub.emit(2)  # it still owes 95 rows: at its edge at once, with the rows delivered since
    r.wait_for(6)
    a = _ask(r.s, 0.5)
    assert (a.position, a.edge) == (6, True), a


def test_at_the_edge_with_every_row_once_the_publisher_completed(serve):
    server = serve(rs.range_(50))
    r = Recorder(1000, refill=False)
    key = _reader(server, r).key
    r.wait_done(20)
    assert len(r.items) == 50 and r.error is None
    # a watch of 60 s, answered within the 30 s a read waits: the publisher ended, nothing is waited for
    assert _ask_by_key(server, key, MAX_READY_WAIT) == ReadyAnswer(1, 50, True)


def test_a_publisher_that_completes_while_owing_rows_is_at_its_edge_with_what_it_delivered(serve):
    pub = Held()
    server = serve(pub)
    r = Recorder(100, refill=False)
    key = _reader(server, r).key
    wait_until(lambda: pub.demand == 100, what=lambda: f"the publisher asked for 100, is {pub.demand}")
    pub.emit(7)
    pub.complete()
    r.wait_done(20)
    assert _ask_by_key(server, key, MAX_READY_WAIT) == ReadyAnswer(1, 7, True)


def _batches(n: int, rows: int) -> list[pa.RecordBatch]:
    return [pa.record_batch([pa.array(range(i * rows, (i + 1) * rows), pa.int64())], names=["v"]) for i in range(n)]


def test_the_position_counts_rows_of_arrow_batches_sent_and_queued(serve):
    """Credit of 150 rows over batches of 100: the publisher delivered two batches (200 rows), 150 were
    sent and 50 wait for credit. It owes nothing: not the edge, at position 200 (rows, not 2 batches,
    nor the 150 sent). Once the reader takes the rest the completed stream says 500."""
    server = serve(rs.from_iterable(_batches(5, 100)))
    r = Recorder(1, refill=False)  # one batch of at most batch_rows=150 rows: 150 rows of credit
    key = _reader(server, r, codec="arrow", batch_rows=150).key
    wait_until(lambda: server.stats().streams and server.stats().streams[0].sent_position == 150, "150 rows sent")
    a = _ask(r.s, 0.0)
    assert (a.position, a.edge) == (200, False), a
    r.request(1000)
    r.wait_done(20)
    assert sum(b.num_rows for b in r.items) == 500 and r.error is None
    assert _ask_by_key(server, key, 0.0) == ReadyAnswer(1, 500, True)


def test_the_position_counts_elements_of_a_one_row_codec(serve):
    server = serve(rs.from_iterable([{"id": i} for i in range(40)]))
    r = Recorder(25, refill=False)
    key = _reader(server, r).key
    r.wait_for(25)
    a = _ask(r.s, 0.0)
    assert (a.position, a.edge) == (25, False), a
    r.request(100)
    r.wait_done(20)
    assert _ask_by_key(server, key, 0.0) == ReadyAnswer(1, 40, True)


def test_a_positions_only_stream_answers_too(serve):
    """The partitioned reader's streams (``positions=True``): no rows are sent, positions are made
    available within credit; the question is answered the same way."""
    server = serve(rs.range_(30))
    r = Recorder(10, refill=False)
    key = _reader(server, r, positions=True).key
    wait_until(lambda: r.s.position == 10, what=lambda: f"10 positions available, {r.s.position}")
    wait_until(lambda: r.s.answers_ready is True, what="the server to say it answers")
    a = _ask(r.s, 0.0)
    assert (a.position, a.edge) == (10, False), a
    r.request(100)
    r.wait_done(20)
    assert r.error is None and r.s.position == 30
    assert _ask_by_key(server, key, 0.0) == ReadyAnswer(1, 30, True)


# -- asking about a stream by its key ----------------------------------------------------------
@pytest.fixture
def read_10(serve):
    """A served stream whose reader received 10 rows (of 10**6): (server, its key)."""
    server = serve(rs.range_(10**6))
    r = Recorder(10, refill=False)
    pub = _reader(server, r)
    r.wait_for(10)
    yield server, pub.key
    r.s.cancel()


def test_a_question_naming_a_key_on_a_connection_set_up_with_the_token_is_answered_for_that_stream(read_10):
    server, key = read_10
    with _connect(server) as sock:
        frames = RawFrames(sock, timeout=10)
        frames.send(_raw_setup(), F.encode_metadata_push(ready_question(ReadyQuestion(7, 0.0), key)))
        f = frames.next()
    assert _answers([f]) == [ReadyAnswer(7, 10, False)], f


@pytest.mark.parametrize(
    "case",
    ["unknown key", "wrong token", "before SETUP"],
)
def test_a_question_naming_a_key_is_refused_as_an_acknowledgement_is(read_10, case):
    server, key = read_10
    other = new_key()
    frames = {
        "unknown key": [_raw_setup(), F.encode_metadata_push(ready_question(ReadyQuestion(1, 0.0), other))],
        "wrong token": [_raw_setup("guessed"), F.encode_metadata_push(ready_question(ReadyQuestion(1, 0.0), key))],
        "before SETUP": [F.encode_metadata_push(ready_question(ReadyQuestion(1, 0.0), key))],
    }[case]
    with _connect(server) as sock:
        sock.sendall(b"".join(bytes(b) for fr in frames for b in fr))
        got = RawFrames(sock, timeout=10).until_closed()
    assert _answers(got) == [], got
    err = got[-1]
    assert err.type == F.ERROR, got
    code, says = {
        "unknown key": (F.CONNECTION_ERROR, f"keeps no stream {other}"),
        "wrong token": (F.REJECTED_SETUP, "wrong token"),
        "before SETUP": (F.INVALID_SETUP, "first frame must be SETUP"),
    }[case]
    assert err.error_code == code and says in bytes(err.data).decode(), bytes(err.data)


# -- hostile questions ---------------------------------------------------------------------------
_BIG = json.dumps({"id": 1, "wait": 0.5, "pad": "x" * 5000}).encode()


@pytest.mark.parametrize(
    "body,says",
    [
        (b"{not json", "entry is not JSON"),
        (b"\xff\xfe", "entry is not JSON"),
        (b"[1, 2]", "entry must be a JSON object"),
        (b'"wait"', "entry must be a JSON object"),
        (b'{"id": 1, "wait": -1}', "question has wait -1"),
        (b'{"id": 1, "wait": NaN}', "question has wait nan"),
        (b'{"id": 1, "wait": Infinity}', "question has wait inf"),
        (b'{"id": 1, "wait": 1e999}', "question has wait inf"),
        (b'{"id": 1, "wait": true}', "question has wait True"),
        (b'{"id": 1, "wait": "1"}', "question has wait '1'"),
        (b'{"id": 1}', "question has wait None"),
        (b'{"id": -1, "wait": 1}', "question has id -1"),
        (b'{"id": true, "wait": 1}', "question has id True"),
        (b'{"id": 1.0, "wait": 1}', "question has id 1.0"),
        (b'{"id": 9223372036854775808, "wait": 1}', "question has id 9223372036854775808"),
        (_BIG, f"entry of {len(_BIG)} bytes is larger than 4096"),
    ],
    ids=lambda v: v[:24].decode("latin-1") if isinstance(v, bytes) else None,
)
def test_a_malformed_question_closes_the_connection_saying_what_was_wrong(serve, no_internal_errors, body, says):
    """On the stream's own connection and on one set up with the token naming the key: ERROR
    [CONNECTION_ERROR] naming the fault, the connection closed; the other stream and new readers go on."""
    server = serve(rs.range_(200))
    other = Recorder(10, refill=False)
    key = _reader(server, other).key
    other.wait_for(10)
    own = _WireReader(server, credit=5)
    own.until(lambda f: f.type == F.METADATA_PUSH and _has(f, WINDOW_MIME))
    own.send(_question(body))
    got = own.frames.until_closed()
    own.close()
    with _connect(server) as sock:  # the attacker's own connection, naming the other stream's key
        sock.sendall(b"".join(bytes(b) for fr in (_raw_setup(), _question(body, key)) for b in fr))
        got_keyed = RawFrames(sock, timeout=10).until_closed()
    for frames in (got, got_keyed):
        err = frames[-1]
        assert err.type == F.ERROR and err.error_code == F.CONNECTION_ERROR, (got, got_keyed)
        text = bytes(err.data).decode()
        assert READY_MIME in text and says in text, text
        assert _answers(frames) == []
    assert rs.to_list(net.connect(server.address, token=TOKEN), timeout=20) == list(range(200))
    other.request(1000)  # the reader on its own connection is unaffected
    other.wait_done(20)
    assert other.error is None and other.items == list(range(200))


@pytest.mark.parametrize("wait", ["1e300", "9" * 400], ids=["1e300", "400-digit integer"])
def test_a_huge_finite_wait_is_cut_to_the_longest_watch(serve, no_internal_errors, wait):
    """A wait beyond MAX_READY_WAIT is honoured as MAX_READY_WAIT (as documented), whatever its
    spelling: answered at once while the publisher owes nothing; while it owes, one timer due within
    MAX_READY_WAIT seconds, not a refusal nor a crash of the connection's reader."""
    pub = Held()
    server = serve(pub)
    w = _WireReader(server, credit=1)
    assert pub.asked.wait(10)
    pub.emit(1)  # it owes nothing now
    w.until(lambda f: f.type == F.PAYLOAD)
    w.send(_question(b'{"id": 1, "wait": %s}' % wait.encode()))
    (a,) = _answers(w.until(lambda f: _answers([f])))
    assert a == ReadyAnswer(1, 1, False)
    w.send(F.encode_request_n(STREAM_ID, 10))
    wait_until(lambda: pub.demand == 10, what=lambda: f"the publisher asked for 10, is {pub.demand}")
    w.send(_question(b'{"id": 2, "wait": %s}' % wait.encode()))
    assert _answers(w.marker()) == []  # handled; its answer waits for the publisher
    (deadline,) = _ready_timers(_kept(server))
    assert deadline - time.monotonic() <= MAX_READY_WAIT + 1.0
    pub.emit(10)  # the connection still works: rows flow
    got = w.until(lambda f: f.type == F.PAYLOAD and bytes(f.data) == b"10")
    assert [bytes(f.data) for f in got if f.type == F.PAYLOAD] == [str(i).encode() for i in range(1, 11)]
    w.close()


def test_a_flood_of_questions_holds_one_timer_and_the_last_is_answered(serve, no_internal_errors):
    """Thousands of questions while the publisher owes rows: one waits at a time (a newer one takes
    its place), so one timer; the last one asked is answered, at the edge; the server stays healthy."""
    pub = Held()
    server = serve(pub)
    w = _WireReader(server, credit=10)
    assert pub.asked.wait(10)
    heap_before = len(default_scheduler()._heap)
    n = 3000
    flood = [F.encode_metadata_push(ready_question(ReadyQuestion(i, 2.0))) for i in range(1, n + 1)]
    w.send(*flood)
    before = w.marker()
    assert len(_ready_timers(_kept(server))) <= 1
    assert len(default_scheduler()._heap) <= heap_before + 1
    got = before + w.until(lambda f: any(a.id == n for a in _answers([f])))
    ids = [a.id for a in _answers(got)]
    # what was answered: the question waiting when its time came, then each one asked after (at once)
    assert ids == list(range(ids[0], n + 1)), ids[:10]
    assert all(a.edge and a.position == 0 for a in _answers(got))
    assert len(_ready_timers(_kept(server))) == 0
    w.send(F.encode_metadata_push(ready_question(ReadyQuestion(n + 1, 0.0))))
    assert _answers(w.until(lambda f: _answers([f]))) == [ReadyAnswer(n + 1, 0, True)]
    pub.emit(10)
    got = w.until(lambda f: f.type == F.PAYLOAD and bytes(f.data) == b"9")
    assert len([f for f in got if f.type == F.PAYLOAD]) == 10
    w.close()
    assert rs.to_list(net.connect(serve(rs.range_(20)).address, token=TOKEN), timeout=20) == list(range(20))


def test_a_newer_question_with_a_longer_wait_is_answered_after_its_own_wait(serve):
    """The question waiting is replaced by one watching longer: the publisher owed rows all along, so
    the answer is the edge, given after the newer question's wait (not 'not at the edge' when the
    first one's time came)."""
    pub = Held()
    server = serve(pub)
    t0 = time.monotonic()  # before the stream opens: the publisher owes from a moment after this
    w = _WireReader(server, credit=10)
    assert pub.asked.wait(10)
    w.send(
        F.encode_metadata_push(ready_question(ReadyQuestion(1, 0.5))),
        F.encode_metadata_push(ready_question(ReadyQuestion(2, 1.5))),
    )
    answers = _answers(w.until(lambda f: any(a.id == 2 for a in _answers([f]))))
    assert answers[-1] == ReadyAnswer(2, 0, True), answers
    assert time.monotonic() - t0 >= 1.5
    w.close()


def test_a_question_answered_at_once_takes_the_place_of_the_one_waiting(serve):
    """One question waits per stream, and a newer one takes its place, also when the newer is answered
    at once (the publisher ended meanwhile): the older one gets no late answer after it, which a
    client would take for the newer's."""
    pub = Held()
    server = serve(pub)
    w = _WireReader(server, credit=10)
    assert pub.asked.wait(10)
    w.send(F.encode_metadata_push(ready_question(ReadyQuestion(1, 1.0))))
    got = w.marker()  # handled: it waits (unless this machine took a second since the ask)
    due = max(_ready_timers(_kept(server)), default=time.monotonic())
    pub.emit(2)
    pub.complete()
    w.send(F.encode_metadata_push(ready_question(ReadyQuestion(2, 1.0))))
    got += w.until(lambda f: any(a.id == 2 for a in _answers([f])))
    assert _answers(got)[-1] == ReadyAnswer(2, 2, True)
    _timer_thread_passed(max(due, time.monotonic()))  # question 1's time came and went
    after = _answers(w.marker())
    assert after == [], f"the replaced question was answered after the newer one: {after}"
    w.close()


# -- a client and a server that answers badly ---------------------------------------------------
class _FakeServer:
    """A hand-written RSocket responder on 127.0.0.1: the test reads what the client sends and
    writes what the server says, frame by frame (:class:`RawFrames` per accepted connection)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"tcp://127.0.0.1:{self.listener.getsockname()[1]}/nums"
        self._accepted: queue.Queue[RawFrames] = queue.Queue()
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True, name="fake-server").start()

    def _accept(self) -> None:
        while True:
            try:
                s, _ = self.listener.accept()
            except OSError:
                return
            self._socks.append(s)
            self._accepted.put(RawFrames(s, timeout=20))

    def peer(self) -> RawFrames:
        """The next connection, once its SETUP and REQUEST_STREAM arrived."""
        p = self._accepted.get(timeout=20)
        frames = []
        while len(frames) < 2:
            f = p.next()
            if f.type != F.KEEPALIVE:
                frames.append(f)
        setup, req = frames
        assert setup.type == F.SETUP and req.type == F.REQUEST_STREAM and req.stream_id == STREAM_ID, frames
        return p

    def close(self) -> None:
        self.listener.close()
        for s in self._socks:
            s.close()


@pytest.fixture
def fake():
    f = _FakeServer()
    yield f
    f.close()


def _next_question(peer: RawFrames) -> ReadyQuestion:
    from rs_spark.net.zero_loss.resume import ready_question_of

    while True:
        f = peer.next()
        if f.type == F.METADATA_PUSH:
            q = ready_question_of(bytes(f.metadata))
            if q is not None:
                return q


def _push(peer: RawFrames, metadata: bytes) -> None:
    peer.send(F.encode_metadata_push(metadata))


@pytest.mark.parametrize("says", [True, False], ids=["this build", "an earlier build"])
def test_the_client_knows_whether_the_server_answers_from_its_window_push(fake, says):
    """None until the server opened the stream; then what its window push says: an entry beside the
    window (this build), or the window alone (an earlier build: no answer is waited for)."""
    r = Recorder(10, refill=False)
    net.connect(fake.address).resumable().subscribe(r)
    peer = fake.peer()
    assert r.s.answers_ready is None
    q = r.s.ask_ready(5.0)  # asked before the server said: the answer is awaited
    assert _next_question(peer) == ReadyQuestion(q, 5.0)
    window = window_metadata(30.0) if says else composite([(WINDOW_MIME, (30_000).to_bytes(8, "big"))])
    _push(peer, window)
    wait_until(lambda: r.s.answers_ready is says, what=f"answers_ready {says}")
    if says:
        _push(peer, ready_answer(ReadyAnswer(q, 3, False)))
        assert r.s.wait_ready(q, 10) == ReadyAnswer(q, 3, False)
    else:  # no answer will come: not waited for (a bound far beyond what returning at once takes)
        t = time.monotonic()
        assert r.s.wait_ready(q, 60) is None
        assert time.monotonic() - t < 30
    peer.send(F.encode_payload(STREAM_ID, [b"1"]))
    r.wait_for(1)
    assert r.items == [1]
    r.s.cancel()


@pytest.mark.parametrize(
    "body,says",
    [
        (b"{not json", "entry is not JSON"),
        (b"[true]", "must be a JSON object"),
        (b'{"id": 1, "edge": true}', "answer needs an id and a position"),
        (b'{"id": 1, "position": -5, "edge": true}', "answer needs an id and a position"),
        (b'{"id": 1, "position": 1.5, "edge": true}', "answer needs an id and a position"),
        (b'{"id": "1", "position": 5, "edge": true}', "answer needs an id and a position"),
        (b'{"id": 1, "position": 5, "edge": "yes"}', "answer needs edge true or false"),
        (b'{"id": 1, "position": 5, "edge": 1}', "answer needs edge true or false"),
        (b'{"id": 1, "position": 5}', "answer needs edge true or false"),
        (json.dumps({"id": 1, "position": 5, "edge": True, "pad": "x" * 5000}).encode(), "larger than 4096"),
    ],
    ids=lambda v: v[:24].decode("latin-1") if isinstance(v, bytes) else None,
)
def test_a_malformed_answer_fails_the_stream_naming_the_entry_and_reaches_no_user_code(fake, body, says):
    r = Recorder(10, refill=False)
    net.connect(fake.address).resumable().subscribe(r)
    peer = fake.peer()
    _push(peer, window_metadata(30.0))
    peer.send(F.encode_payload(STREAM_ID, [b"1"]))
    r.wait_for(1)
    q = r.s.ask_ready(1.0)
    assert _next_question(peer).id == q
    _push(peer, composite([(READY_MIME, body)]))
    r.wait_done(20)
    assert isinstance(r.error, net.ProtocolError), r.error
    assert "unreadable METADATA_PUSH" in str(r.error) and READY_MIME in str(r.error) and says in str(r.error)
    assert r.items == [1]  # nothing of the answer became an element
    assert r.s.wait_ready(q, 10) is None
    while peer.next().type != F.CANCEL:  # the client cancelled the stream
        pass


def test_a_late_answer_to_an_earlier_question_does_not_hide_the_answer_to_the_last(fake):
    r = Recorder(10, refill=False)
    net.connect(fake.address).resumable().subscribe(r)
    peer = fake.peer()
    _push(peer, window_metadata(30.0))
    q1 = r.s.ask_ready(1.0)
    q2 = r.s.ask_ready(1.0)
    assert [_next_question(peer).id, _next_question(peer).id] == [q1, q2]
    _push(peer, ready_answer(ReadyAnswer(q2, 8, True)))
    _push(peer, ready_answer(ReadyAnswer(q1, 5, False)))  # the earlier question's answer, late
    _push(peer, retention_metadata({"ackedPosition": 0}))  # pushes are handled in order: after both
    wait_until(lambda: r.s.retention == {"ackedPosition": 0}, what="the pushes to be handled")
    assert r.s.wait_ready(q2, 5) == ReadyAnswer(q2, 8, True)
    r.s.cancel()
