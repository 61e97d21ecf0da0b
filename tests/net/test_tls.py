"""TLS end to end on 127.0.0.1 with a throwaway self-signed certificate: streams both ways,
tokens, refusals that say what to fix, and the runs in a row that used to hang one time in three
(when the reader and the writer thread shared one SSL object)."""

from __future__ import annotations

import socket
import ssl
import threading

import pyarrow as pa
import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol import metadata as M

from ..waits import wait_until

pytestmark = pytest.mark.timeout(120)

TOKEN = "tls-test-token"
BATCH = pa.record_batch({"x": pa.array(range(65536), pa.int64())})


@pytest.fixture
def server(tls):
    sctx, _ = tls
    s = net.Server("tls://127.0.0.1:0", token=TOKEN, ssl=sctx, limits=net.Limits(setup_timeout=1.0))
    s.add_publisher("numbers", rs.range_(5000))
    s.add_publisher("arrow", rs.defer(lambda: iter([BATCH] * 20)))
    s.add_publisher("small", rs.range_(1500))
    s.add_subscriber("sink", lambda: rs.CallbackSubscriber(lambda x: None, request_size=16))
    yield s
    s.stop()


def _threads_settle(baseline: int, server) -> None:
    """Wait (bounded) until the server has no connection and the thread count is back to ``baseline``."""
    wait_until(
        lambda: server.connection_count == 0 and threading.active_count() <= baseline,
        lambda: (
            f"no connection and at most {baseline} threads: {server.connection_count} connections "
            f"and {threading.active_count()} threads remain"
        ),
        10,
    )


def test_tls_stream_end_to_end_with_a_self_signed_certificate(server, tls):
    _, cctx = tls
    assert server.address.startswith("tls://127.0.0.1:")
    assert rs.to_list(net.connect(server.address, token=TOKEN, ssl=cctx), timeout=30, request_size=64) == list(
        range(5000)
    )
    got = rs.to_list(
        net.connect(server.address_of("arrow"), token=TOKEN, ssl=cctx, codec="arrow"), timeout=30, request_size=2
    )
    assert sum(b.num_rows for b in got) == 20 * 65536 and got[0].column("x")[65535].as_py() == 65535


def test_tls_channel_feeds_a_served_subscriber(tls):
    sctx, cctx = tls
    results = []
    done = threading.Event()
    s = net.serve(
        lambda: rs.CallbackSubscriber(results.append, on_complete=done.set, request_size=8),
        name="sink",
        bind="tls://127.0.0.1:0",
        token=TOKEN,
        ssl=sctx,
    )
    try:
        sub = net.connect_subscriber(s.address, token=TOKEN, ssl=cctx)
        rs.range_(3000).subscribe(sub)
        sub.wait(30)
        assert done.wait(30) and results == list(range(3000))
    finally:
        s.stop()


def _read(client, name, out, errors, **kw):
    """``out[name]``: every element of ``client``'s publisher ``name``; what failed goes to ``errors``."""
    try:
        out[name] = rs.to_list(client.publisher(name), timeout=20, **kw)
    except BaseException as exc:  # reported by the test with the run number
        errors.append(exc)


def test_tls_streams_complete_30_runs_in_a_row_without_hanging(server, tls):
    """Both directions busy at once on one TLS connection (payloads one way, REQUEST_N credits
    the other, many small frames): the case that hung about 1 run in 3 before TLS I/O moved to
    one thread. Every run has a deadline, so a hang fails the test instead of stalling it."""
    _, cctx = tls
    baseline = threading.active_count()
    completed = 0
    for run in range(30):
        with net.Client(server.base_address, token=TOKEN, ssl=cctx) as c:
            out: dict = {}
            errors: list = []
            ts = [
                threading.Thread(target=_read, args=(c, "small", out, errors), kwargs={"request_size": 7}),
                threading.Thread(target=_read, args=(c, "numbers", out, errors), kwargs={"request_size": 1000}),
            ]
            for t in ts:
                t.start()
            sub = c.subscriber("sink")
            rs.range_(1000).subscribe(sub)
            sub.wait(20)
            for t in ts:
                t.join(30)
            assert not errors, f"run {run + 1}: {errors[0]!r}"
            assert out["small"] == list(range(1500)) and out["numbers"] == list(range(5000)), f"run {run + 1}"
        completed += 1
    assert completed == 30
    _threads_settle(baseline, server)


def test_wrong_or_missing_token_over_tls_is_refused_before_any_stream_opens(tls):
    sctx, cctx = tls
    subscribed = []
    s = net.serve(
        rs.defer(lambda: subscribed.append(1) or [1, 2]), name="p", bind="tls://127.0.0.1:0", token=TOKEN, ssl=sctx
    )
    try:
        with pytest.raises(net.Refused, match="requires a token"):
            rs.to_list(net.connect(s.address, ssl=cctx), timeout=10)
        with pytest.raises(net.Refused, match="wrong token"):
            rs.to_list(net.connect(s.address, token="wrong", ssl=cctx), timeout=10)
        assert subscribed == []
        assert rs.to_list(net.connect(s.address + "?token=" + TOKEN, ssl=cctx), timeout=10) == [1, 2]
    finally:
        s.stop()


def test_client_that_does_not_trust_the_certificate_is_refused_with_a_hint(server):
    with pytest.raises(
        net.Refused, match=r"TLS with tls://127\.0\.0\.1:\d+ failed: .*does not trust the certificate.*cafile="
    ):
        rs.to_list(net.connect(server.address, token=TOKEN), timeout=10)  # system CAs: self-signed is unknown
    ctx = ssl.create_default_context(cafile=None)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # a client may opt out of verification; the stream then works
    assert rs.to_list(net.connect(server.address, token=TOKEN, ssl=ctx), timeout=10) == list(range(5000))


def test_plain_tcp_client_on_a_tls_server_is_closed_and_the_server_keeps_serving(server, tls):
    _, cctx = tls
    plain = server.address.replace("tls://", "tcp://")
    with pytest.raises((net.ConnectionLost, net.Refused)):
        rs.to_list(net.connect(plain, token=TOKEN), timeout=10)
    # Raw clear-text SETUP: the server's first read fails the handshake and closes that socket.
    host, port = server.base_address[len("tls://") :].split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"".join(bytes(b) for b in F.encode_setup(1000, 5000, M.COMPOSITE, "application/json")))
        sock.settimeout(5)
        data = b""
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    assert b"\x00\x00\x00\x00" not in data[:3]  # no RSocket frame leaks out in clear text
    assert rs.to_list(net.connect(server.address, token=TOKEN, ssl=cctx), timeout=10) == list(range(5000))


def test_tls_client_on_a_plain_server_fails_with_a_tls_error_that_names_the_server():
    s = net.serve(rs.range_(3), name="plain")
    try:
        with pytest.raises(net.Refused, match=r"TLS with tls://127\.0\.0\.1:\d+ failed"):
            rs.to_list(net.connect(s.address.replace("tcp://", "tls://"), connect_timeout=2), timeout=10)
        assert rs.to_list(net.connect(s.address), timeout=10) == [0, 1, 2]
    finally:
        s.stop()


def test_tls_bind_without_a_certificate_says_what_to_pass():
    with pytest.raises(ValueError, match=r"needs ssl=.*load_cert_chain"):
        net.Server("tls://127.0.0.1:0", token="t")


def test_ssl_with_a_unix_socket_is_refused_saying_what_guards_it_instead(tls, tmp_path):
    sctx, _ = tls
    with pytest.raises(ValueError, match=r"clients of unix:// speak no TLS.*drop ssl=, or bind tls://"):
        net.Server(f"unix://{tmp_path / 'rs.sock'}", ssl=sctx)
    assert not (tmp_path / "rs.sock").exists(), "the socket file was created for a server that was refused"


def test_silent_client_during_the_tls_handshake_is_closed_within_the_setup_timeout(server):
    baseline = threading.active_count()
    host, port = server.base_address[len("tls://") :].split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.settimeout(10)
        assert sock.recv(4096) == b"", "the server sent something to a client that never started TLS"
    _threads_settle(baseline, server)
