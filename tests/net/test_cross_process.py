"""Publisher in one process, subscriber in another, over TCP and Unix sockets on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from rs_spark import net
from rs_spark import streams as rs

from ..subscribers import Recorder
from . import _procs
from .conftest import CTX

pytestmark = pytest.mark.timeout(120)


def test_elements_cross_in_order(publisher_child):
    out = rs.to_list(net.connect(publisher_child.base + "/numbers"), timeout=30, request_size=64)
    assert out == list(range(1000))


def test_arrow_batches_cross_with_row_counted_demand(publisher_child):
    got = rs.to_list(
        net.connect(publisher_child.base + "/arrow", codec="arrow", batch_rows=4096), timeout=30, request_size=2
    )
    assert all(b.num_rows <= 4096 for b in got)
    assert sum(b.num_rows for b in got) == 50_000
    assert got[0].column("s")[1].as_py() == "row 1"


def test_demand_end_to_end_slow_remote_subscriber_bounds_the_publisher(publisher_child):
    """A subscriber that consumes slowly with prefetch P: the remote generator never runs more
    than P + 1 elements ahead (P credits plus the one spare credit a stream opens with)."""
    prefetch = 8
    it = rs.iterate(net.connect(publisher_child.base + "/counted"), prefetch=prefetch, timeout=30)
    consumed = 0
    worst = 0
    for x in it:
        assert x == consumed
        consumed += 1
        time.sleep(0.005)  # not synchronisation: the slow consumer under test
        worst = max(worst, publisher_child.produced.value - consumed)
        if consumed == 200:
            break
    it.close()
    assert worst <= prefetch + 1, f"the publisher ran {worst} elements ahead of a subscriber with prefetch {prefetch}"


def test_spec_3_13_cancel_reaches_the_remote_source(publisher_child):
    it = rs.iterate(net.connect(publisher_child.base + "/counted"), prefetch=4, timeout=30)
    assert [next(it) for _ in range(5)] == [0, 1, 2, 3, 4]
    it.close()  # cancel()
    assert publisher_child.cancelled.wait(10), "cancel() did not reach the generator in the other process"


def test_error_type_and_message_cross(publisher_child):
    addr = publisher_child.base + "/failing"
    got = []
    with pytest.raises(net.RemoteError) as ei:
        for x in rs.iterate(net.connect(addr), timeout=30):
            got.append(x)
    assert got == [1, 2, 3]
    e = ei.value
    assert e.type_name == "ValueError" and e.remote_message == "boom at element 3"
    assert addr in str(e) and "after 3 elements" in str(e)


def test_served_subscriber_in_another_process_gets_elements_and_completion(subscriber_child):
    sub = net.connect_subscriber(subscriber_child.base + "/sink")
    rs.range_(50).subscribe(sub)
    sub.wait(30)
    got = [subscriber_child.results.get(timeout=30) for _ in range(51)]
    assert got == [("next", i) for i in range(50)] + [("complete",)]


def test_served_subscriber_gets_the_local_error(subscriber_child):
    sub = net.connect_subscriber(subscriber_child.base + "/sink")
    rs.error(KeyError("no such sensor")).subscribe(sub)
    kind, text = subscriber_child.results.get(timeout=30)
    assert kind == "error" and "KeyError" in text and "no such sensor" in text


def test_dropped_server_ends_the_stream_with_on_error_within_keepalive_bound(publisher_child):
    """SIGSTOP the server process: its socket stays open but silent; the keepalive ends the stream."""
    lifetime = 1.0
    errors = []
    done = threading.Event()
    flowing = threading.Event()
    sub = rs.CallbackSubscriber(
        lambda x: flowing.set(), on_error=lambda e: (errors.append(e), done.set()), request_size=4
    )
    net.connect(publisher_child.base + "/forever", keepalive=0.2, lifetime=lifetime).subscribe(sub)
    assert flowing.wait(30), "no element arrived before the server was stopped"
    os.kill(publisher_child.proc.pid, signal.SIGSTOP)
    try:
        # The bound: the keepalive lifetime (1 s) plus slack for a loaded machine, not forever.
        assert done.wait(lifetime + 5), "no on_error after the server went silent"
    finally:
        os.kill(publisher_child.proc.pid, signal.SIGCONT)
    assert isinstance(errors[0], net.ConnectionLost) and "keepalive" in str(errors[0])
    assert f"lifetime of {lifetime} s" in str(errors[0])


@pytest.mark.parametrize("sig", [signal.SIGSTOP, signal.SIGKILL], ids=["SIGSTOP", "SIGKILL"])
def test_dropped_client_ends_the_served_subscriber_with_on_error_within_keepalive_bound(bind, sig):
    """SIGSTOP (silent: the keepalive notices), or SIGKILL (the socket closes), the client process
    feeding a served subscriber: the subscriber gets on_error either way."""
    sub = Recorder(batch=1000, refill=False)  # enough to see the stream flow; then the client waits
    server = net.serve(sub, name="sink", bind=bind)
    child = CTX.Process(target=_procs.push_to_subscriber, args=(server.address, 10**6, 0.01, 0.2, 1.0), daemon=True)
    try:
        child.start()
        sub.wait_for(1, 60)  # the stream flows
        os.kill(child.pid, sig)
        # The bound: the client's keepalive lifetime (1 s) plus slack for a loaded machine, not forever.
        assert sub.done.wait(6), f"the served subscriber got no signal after the client got {sig.name}"
        assert isinstance(sub.error, net.ConnectionLost), sub.error
    finally:
        if child.is_alive():
            os.kill(child.pid, signal.SIGCONT)
            child.kill()
        child.join(10)
        server.stop()


def test_dropped_client_cancels_the_served_publisher(publisher_child):
    child = CTX.Process(target=_procs.read_forever, args=(publisher_child.base + "/counted", 0.2, 1.0), daemon=True)
    child.start()
    assert publisher_child.three_produced.wait(60), "the client process never read from the publisher"
    child.kill()
    child.join(10)
    assert publisher_child.cancelled.wait(10), "the source was not cancelled after its client died"
