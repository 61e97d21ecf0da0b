"""Acknowledgements that name their stream's key (``message/x.rs-spark.stream.v1``), on real sockets:
Spark's driver acknowledges a real-time stream on its own connection as soon as Spark commits, while
the stream's connection belongs to an executor's task. Only a connection that passed SETUP with the
endpoint's token may do so, only for a stream the server keeps, and never beyond what it sent."""

from __future__ import annotations

import socket

import pytest

from rs_spark import net
from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol import metadata as M
from rs_spark.net.protocol.auth import setup_metadata
from rs_spark.net.zero_loss.resume import commit_metadata, new_key, resume_token
from tests.publishers import Counting
from tests.subscribers import Recorder
from tests.waits import wait_until
from tests.wire import RawFrames

pytestmark = pytest.mark.timeout(60)

TOKEN = "ack-test-token"


def _frame(parts) -> bytes:
    return b"".join(bytes(p) for p in parts)


def _setup(token: str) -> bytes:
    return _frame(F.encode_setup(1000, 5000, M.COMPOSITE, "application/json", metadata=setup_metadata(token)))


def _push(position: int, key: str) -> bytes:
    return _frame(F.encode_metadata_push(commit_metadata(position, key)))


@pytest.fixture
def stream():
    """A server, and a reader holding a resumable stream of 100 received rows: (server, publisher, key)."""
    pub = Counting(10_000)
    server = net.serve(pub, name="nums", token=TOKEN)
    reader = net.connect(server.address, token=TOKEN).resumable()
    r = Recorder(100, refill=False)
    reader.subscribe(r)
    wait_until(lambda: len(r.items) == 100, what="100 rows at the reader")
    yield server, pub, reader.key
    r.s.cancel()
    server.stop()


def _connect(server) -> socket.socket:
    host, port = server.base_address.split("//")[1].split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _acked(server) -> int:
    return int(server.stats().streams[0].acked_position)


def test_an_acknowledgement_naming_the_key_on_another_authenticated_connection_reaches_the_publisher(stream):
    server, pub, key = stream
    with _connect(server) as sock:
        sock.sendall(_setup(TOKEN) + _push(60, key))
        wait_until(lambda: pub.commits == [60], what="on_commit(60) at the publisher")
        assert _acked(server) == 60
        sock.sendall(_push(90, key))  # the same connection acknowledges on, batch after batch
        wait_until(lambda: pub.commits == [60, 90], what="on_commit(90) at the publisher")


def test_an_acknowledgement_before_setup_is_refused_and_reaches_no_stream(stream):
    server, pub, key = stream
    with _connect(server) as sock:
        sock.sendall(_push(60, key))  # an attacker who knows the key (it is in Spark's offsets), no token
        (err,) = RawFrames(sock, timeout=10).until_closed()
    assert err.type == F.ERROR and err.error_code == F.INVALID_SETUP
    assert "first frame must be SETUP" in bytes(err.data).decode()
    assert pub.commits == [] and _acked(server) == 0


def test_an_acknowledgement_after_a_setup_with_a_wrong_token_is_refused_and_reaches_no_stream(stream):
    server, pub, key = stream
    with _connect(server) as sock:
        sock.sendall(_setup("guessed") + _push(60, key))
        frames = RawFrames(sock, timeout=10).until_closed()
    assert frames[0].type == F.ERROR and frames[0].error_code == F.REJECTED_SETUP
    assert "wrong token" in bytes(frames[0].data).decode()
    assert pub.commits == [] and _acked(server) == 0


def test_an_acknowledgement_for_a_key_the_server_does_not_keep_is_refused_saying_so(stream):
    server, pub, key = stream
    other = new_key()
    with _connect(server) as sock:
        sock.sendall(_setup(TOKEN) + _push(60, other))
        (err,) = RawFrames(sock, timeout=10).until_closed()
    assert err.type == F.ERROR and err.error_code == F.CONNECTION_ERROR
    assert f"keeps no stream {other}" in bytes(err.data).decode()
    assert pub.commits == [] and _acked(server) == 0


def test_a_resumed_connection_acknowledges_only_its_own_stream(stream):
    server, pub, key = stream
    other = net.connect(server.address, token=TOKEN).resumable()
    r = Recorder(5, refill=False)
    other.subscribe(r)
    wait_until(lambda: len(r.items) == 5, what="a second stream")
    r.s.detach()
    wait_until(lambda: any(s.state == "detached" for s in server.stats().streams), what="it to wait")
    with _connect(server) as sock:  # RESUME proves the resume token of `other` only, not the endpoint's token
        sock.sendall(_frame(F.encode_resume(resume_token(TOKEN, other.key), 0)) + _push(60, key))
        frames = RawFrames(sock, timeout=10).until_closed()
    err = frames[-1]
    assert err.type == F.ERROR and err.error_code == F.CONNECTION_ERROR
    assert f"carries another stream than {key}" in bytes(err.data).decode()
    assert 60 not in pub.commits


def test_an_acknowledgement_beyond_what_the_stream_sent_is_refused_saying_so(stream):
    server, pub, key = stream
    with _connect(server) as sock:
        sock.sendall(_setup(TOKEN) + _push(5000, key))
        (err,) = RawFrames(sock, timeout=10).until_closed()
    assert err.type == F.ERROR and err.error_code == F.CONNECTION_ERROR
    assert "acknowledged position 5000 is beyond the 100 rows this stream sent" in bytes(err.data).decode()
    assert pub.commits == [] and _acked(server) == 0
    assert server.stats().streams[0].state != "ended"  # the reader's stream goes on
