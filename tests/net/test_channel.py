"""Two-way request-channel: a served Processor reached with connect_processor(), over loopback
TCP: elements go one way paced by the server, answers come back paced by the client."""

from __future__ import annotations

import itertools
import threading

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.tck import IdentityProcessorVerification, Timeouts

from ..subscribers import Recorder
from ..tck.skips import UNICAST_PROCESSOR

NET = Timeouts(default=1.0, no_signals=0.1, poll=0.01, gc=0.5)
_names = itertools.count()


def test_channel_carries_elements_both_ways_json(server):
    addr = server.add_processor(f"dbl{next(_names)}", lambda: rs.map(lambda x: 2 * x))
    proc = net.connect_processor(addr)
    got = []
    it = rs.iterate(proc, prefetch=16)
    rs.range_(1000).subscribe(proc)
    got = list(it)
    assert got == [2 * i for i in range(1000)]


def test_channel_carries_arrow_batches_and_counts_rows(server):
    addr = server.add_processor(
        f"arrow{next(_names)}", lambda: rs.map(lambda b: b.append_column("y", pc.multiply(b["x"], 3)))
    )
    proc = net.connect_processor(addr + "?codec=arrow")
    batches = [pa.record_batch({"x": pa.array(range(i * 100, (i + 1) * 100), pa.int64())}) for i in range(20)]
    it = rs.iterate(proc, prefetch=4)
    rs.from_iterable(batches).subscribe(proc)
    out = pa.Table.from_batches(list(it))
    assert out.column("x").to_pylist() == list(range(2000))
    assert out.column("y").to_pylist() == [3 * i for i in range(2000)]


def test_channel_slow_answer_subscriber_slows_the_sender(server):
    """The server's answers wait for the client's demand; the server's Processor sees the
    client's elements only as fast as the processor asks for them (bounded, no flood)."""
    seen = []
    seen_lock = threading.Lock()

    def make():
        def note(x):
            with seen_lock:
                seen.append(x)
            return x

        return rs.map(note)

    addr = server.add_processor(f"slow{next(_names)}", make)
    proc = net.connect_processor(addr)
    sub = Recorder(batch=5, refill=False)
    proc.subscribe(sub)
    rs.range_(10_000).subscribe(proc)
    # Only 5 answers requested: the processor (map) requests what its subscriber asks, so the
    # server sees at most a small bounded number of elements beyond the 5, never the 10 000.
    sub.wait_for(5, 10)
    threading.Event().wait(0.5)  # not synchronisation: the window in which nothing more may arrive
    assert sub.items == list(range(5))
    with seen_lock:
        assert len(seen) <= 5
    sub.request(2**63 - 1)
    assert sub.wait_done(10).error is None
    assert sub.items == list(range(10_000))


def test_channel_server_error_reaches_the_client_answers(server):
    def boom(x):
        if x == 3:
            raise ValueError("element 3 is bad")
        return x

    addr = server.add_processor(f"err{next(_names)}", lambda: rs.map(boom))
    proc = net.connect_processor(addr)
    it = rs.iterate(proc, prefetch=8)
    rs.range_(100).subscribe(proc)
    got = []
    with pytest.raises(net.RemoteError, match="element 3 is bad"):
        for x in it:
            got.append(x)
    assert got == [0, 1, 2]


def test_channel_client_source_error_ends_the_answers_with_it(server):
    addr = server.add_processor(f"srcerr{next(_names)}", lambda: rs.map(lambda x: x))
    proc = net.connect_processor(addr)
    it = rs.iterate(proc, prefetch=8)
    rs.error(RuntimeError("the local source failed")).subscribe(proc)
    with pytest.raises(Exception, match="the local source failed"):
        list(it)


def test_channel_to_a_plain_publisher_name_is_refused(server):
    addr = server.add_publisher(f"pub{next(_names)}", rs.range_(3))
    proc = net.connect_processor(addr)
    it = rs.iterate(proc)
    rs.range_(3).subscribe(proc)
    with pytest.raises(net.Refused, match="connect\\(\\)"):
        list(it)


def test_add_processor_needs_a_factory(server):
    with pytest.raises(TypeError, match="factory"):
        server.add_processor("x", rs.map(lambda x: x))


class TestServedIdentityProcessor(IdentityProcessorVerification):
    """Every processor rule, on the Processor connect_processor() returns (an identity map served
    in this process)."""

    timeouts = NET
    skips = UNICAST_PROCESSOR

    @pytest.fixture(autouse=True)
    def _server(self, server):
        self.server = server

    def create_identity_processor(self, buffer_size):
        return net.connect_processor(self.server.add_processor(f"id{next(_names)}", lambda: rs.map(lambda x: x)))
