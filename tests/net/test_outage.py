"""Network outages between a resumable stream's reader and its endpoint (tests/faultrelay.py makes
them): the reader tries to resume, with capped backoff and jitter, for as long as the endpoint keeps
the stream (the window it states), not for a fixed time; only a refusal or the window's end stops it;
the outage is visible while it lasts and logged once per interval. Durations are scaled down here
(keepalive lifetime 1 s, windows of seconds); tests/spark/test_outage.py rides out a real 70 s one."""

from __future__ import annotations

import logging
import time

import pytest

from rs_spark import net
from rs_spark.net.protocol.errors import ResumeRejected
from rs_spark.net.zero_loss.outage import DEFAULT_WINDOW, Backoff, Outage, retry_bound
from rs_spark.net.zero_loss.redial import WindowEnded
from rs_spark.net.zero_loss.resume import WINDOW_MIME, parse_push, window_metadata, window_of
from rs_spark.net.zero_loss.retention import Retention
from tests.faultrelay import FaultRelay
from tests.publishers import Counting
from tests.subscribers import Recorder
from tests.waits import wait_until

TOKEN = "outage-test-token"
FAST = {"keepalive": 0.2, "lifetime": 1.0, "connect_timeout": 1.0}  # a dead link is noticed within 1 s


@pytest.fixture
def serve():
    servers = []

    def start(publisher, window: float = 60.0):
        s = net.serve(publisher, name="nums", token=TOKEN, retention=Retention(window=window))
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


@pytest.fixture
def relay():
    relays = []

    def start(server):
        r = FaultRelay(server.address)
        relays.append(r)
        return r

    yield start
    for r in relays:
        r.close()


# -- the decisions, as tables ----------------------------------------------------------------------

BACKOFF = [  # (first, cap, attempt, u) -> pause: half the capped step, plus u times the other half
    (0.1, 10.0, 0, 0.0, 0.05),
    (0.1, 10.0, 0, 0.999, 0.09995),
    (0.1, 10.0, 1, 0.0, 0.1),
    (0.1, 10.0, 3, 0.5, 0.6),
    (0.1, 10.0, 6, 0.0, 3.2),
    (0.1, 10.0, 7, 0.0, 5.0),  # 12.8 capped at 10
    (0.1, 10.0, 500, 1.0, 10.0),  # no overflow, never beyond the cap
    (1.0, 1.0, 9, 0.0, 0.5),
]


@pytest.mark.parametrize("first, cap, attempt, u, pause", BACKOFF)
def test_the_backoff_doubles_up_to_its_cap_and_jitters_the_upper_half_of_each_step(first, cap, attempt, u, pause):
    assert Backoff(first, cap).delay(attempt, u) == pytest.approx(pause)


def test_a_backoff_needs_a_first_pause_no_longer_than_its_cap():
    for first, cap in ((0.0, 1.0), (2.0, 1.0), (-1.0, 1.0)):
        with pytest.raises(ValueError, match="need 0 < first <= cap"):
            Backoff(first, cap)


BOUND = [  # (stated, asked, lifetime) -> seconds a reader tries after a drop
    (30.0, 300.0, 10.0, 40.0),  # the server's word wins: it may cap what was asked
    (None, 300.0, 10.0, 310.0),  # an older server states nothing: what was asked
    (None, None, 10.0, DEFAULT_WINDOW + 10.0),  # nothing either: the default Retention.window
    (5.0, None, 1.0, 6.0),
]


@pytest.mark.parametrize("stated, asked, lifetime, bound", BOUND)
def test_the_retry_bound_is_the_stated_window_else_the_asked_one_else_the_default_plus_the_lifetime(
    stated, asked, lifetime, bound
):
    assert retry_bound(stated, asked, lifetime) == bound


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_warns_when_it_starts_then_once_per_interval_however_often_it_tries(caplog):
    clock = _Clock()
    with caplog.at_level(logging.WARNING, logger="rs_spark.net"):
        o = Outage(
            "remote publisher tcp://h:1/x?token=s3cret", "resuming stream k", OSError("reset"), 100.0, clock, 30.0
        )
        for _ in range(95):  # a try per second for 95 s
            clock.now += 1.0
            o.failed(ConnectionError("refused; token=s3cret"))
        o.ended("resumed stream k")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 5, lines  # started, at 30, 60 and 90 s, ended
    assert "connection lost" in lines[0] and "up to 100 s" in lines[0]
    assert all("still unreachable" in line for line in lines[1:4]) and "after 30 s (30 tries" in lines[1]
    assert "resumed stream k after 95.0 s of outage (95 tries)" in lines[4]
    assert all("s3cret" not in line for line in lines)
    r = o.report()
    assert (r.attempts, r.seconds, r.gives_up_in) == (95, 95.0, 5.0) and "s3cret" not in r.last_error


def test_an_outage_never_pauses_past_its_bound():
    clock = _Clock()
    o = Outage("w", "s", OSError("x"), 10.0, clock)
    o.failed(OSError("x"))
    clock.now = 9.9
    assert o.pause(Backoff(5.0, 5.0), 0.99) == pytest.approx(0.1)
    clock.now = 10.0
    assert o.over and o.pause(Backoff(), 0.5) == 0.0


# -- the wire: the server states its window ---------------------------------------------------------


def test_the_window_entry_round_trips_and_a_reader_that_does_not_know_it_ignores_it():
    meta = window_metadata(7.25)
    assert window_of(meta) == 7.25
    assert parse_push(meta) == (None, None)  # what a reader of 0.1.0 development sees: nothing
    assert WINDOW_MIME.encode() in meta


def test_the_server_states_the_window_it_keeps_the_stream_for_on_open_and_after_each_resume(serve):
    server = serve(Counting(10**6), window=7.0)
    asked = net.connect(server.address, token=TOKEN).resumable(window=5.0)
    r1 = Recorder(10, refill=False)
    asked.subscribe(r1)
    r1.wait_for(10)
    wait_until(lambda: asked.stated_window is not None, "the stated window")
    assert asked.stated_window == 5.0  # the reader's ask, within the server's 7 s
    r1.s.on_commit(10)
    r1.s.detach()
    again = net.connect(server.address, token=TOKEN).resumable(asked.key)  # a new reader process
    r2 = Recorder(10, refill=False)
    again.subscribe_at(r2, 10)
    r2.wait_for(10)
    wait_until(lambda: again.stated_window is not None, "the window stated after RESUME_OK")
    assert again.stated_window == 5.0 and again.retry_bound() == 5.0 + 10.0
    assert r2.items == list(range(10, 20))
    r2.s.cancel()


# -- outages through a real relay -----------------------------------------------------------------


def _read_through(relay, server, n: int, **kw):
    pub = net.connect(relay.address(server.address), token=TOKEN, **FAST).resumable(**kw)
    r = Recorder(n, refill=False)
    pub.subscribe(r)
    r.wait_for(n)
    return pub, r


@pytest.mark.parametrize("fault", ["black_hole", "reset"])
def test_a_reader_rides_out_an_outage_longer_than_its_keepalive_lifetime_and_gets_every_row_once_in_order(
    serve, relay, fault, caplog
):
    server = serve(Counting(10**6), window=30.0)
    link = relay(server)
    pub, r = _read_through(link, server, 100)
    with caplog.at_level(logging.WARNING, logger="rs_spark.net"):
        getattr(link, fault)()
        r.request(100)  # credits into the outage
        wait_until(lambda: r.s.outage is not None, "the reader to notice the outage", 10)
        time.sleep(3.0)  # the outage lasts 3 lifetimes (time passing is the fault, not a synchronisation)
        during = r.s.outage
        link.heal()
        r.wait_for(200, timeout=30)
    assert r.items == list(range(200)) and r.error is None
    assert during is not None and during.attempts >= 2 and during.seconds >= 2.0
    assert during.endpoint == f"remote publisher {link.address(server.address)}" and "token" not in during.endpoint
    assert r.s.outage is None  # over
    said = [rec.getMessage() for rec in caplog.records]
    assert sum("connection lost" in m for m in said) == 1 and sum("resumed stream" in m for m in said) == 1, said
    assert _stream(server).resumes >= 1
    r.s.cancel()


def test_a_black_hole_beyond_the_window_ends_the_reader_at_the_window_with_window_ended_not_at_a_constant(serve, relay):
    """The endpoint keeps the stream 2 s after a drop; the reader (lifetime 1 s) gives up 3 s after it
    noticed, with WindowEnded, whatever a fixed reconnect bound would have said."""
    server = serve(Counting(10**6), window=2.0)
    link = relay(server)
    pub, r = _read_through(link, server, 50)
    assert pub.retry_bound() == pytest.approx(2.0 + 1.0)
    link.black_hole()
    r.request(50)
    wait_until(lambda: r.s.outage is not None, "the reader to notice the outage", 10)
    noticed = time.monotonic()
    r.wait_done(timeout=20)
    took = time.monotonic() - noticed
    assert isinstance(r.error, WindowEnded), r.error
    assert "within 3 s (the endpoint's window" in str(r.error)
    assert 2.5 <= took <= 15.0, took  # the window, not the old 60 s
    link.heal()
    wait_until(lambda: server.stats().expired_streams == 1, "the endpoint to expire the stream")
    assert server.stats().lost_records >= 50  # counted lost at the endpoint, reported to the reader


def test_a_refusal_during_an_outage_ends_the_tries_at_once(serve, relay):
    """The endpoint expired the stream during the outage (its window is 1 s; this reader was told to
    try for 60 s): the first try after the heal is refused, and that is final."""
    server = serve(Counting(10**6), window=1.0)
    link = relay(server)
    pub, r = _read_through(link, server, 50, reconnect_for=60.0)
    link.reset()
    wait_until(lambda: server.stats().expired_streams == 1, "the endpoint to expire the detached stream", 20)
    link.heal()
    r.wait_done(timeout=20)
    assert isinstance(r.error, ResumeRejected) and not isinstance(r.error, WindowEnded), r.error
    assert "expired" in str(r.error)
    assert r.s.outage is None


def test_a_stream_resumed_by_its_key_waits_for_an_unreachable_endpoint_and_a_new_one_fails_at_once(serve, relay):
    """A reader process that continues a stream (its key from Spark's checkpoint) while the endpoint is
    unreachable waits for it (the outage shows meanwhile); a new stream that cannot be opened fails at
    once, naming the address (nothing of it was read: a wrong address is shown, not waited out)."""
    server = serve(Counting(10**6))
    link = relay(server)
    first, r1 = _read_through(link, server, 20)
    r1.s.on_commit(20)
    r1.s.detach()
    wait_until(lambda: _stream(server).state == "detached", "the stream to wait for its reader")
    link.reset()
    new = Recorder(5, refill=False)
    net.connect(link.address(server.address), token=TOKEN, **FAST).resumable().subscribe(new)
    new.wait_done(timeout=20)
    assert isinstance(new.error, net.ConnectionLost) and f":{link.port}" in str(new.error), new.error
    assert new.s.outage is None  # not waited out: failed at once
    again = net.connect(link.address(server.address), token=TOKEN, **FAST).resumable(first.key)
    r2 = Recorder(20, refill=False)
    again.subscribe_at(r2, 20)
    wait_until(lambda: r2.s.outage is not None and r2.s.outage.attempts >= 2, "tries against a reset endpoint")
    link.heal()
    r2.wait_for(20, timeout=30)
    assert r2.items == list(range(20, 40))
    r2.s.cancel()


def _stream(server):
    (s,) = server.stats().streams
    return s
