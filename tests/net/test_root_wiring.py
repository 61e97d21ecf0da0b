"""The root's wiring: a Client reads a publisher as a resumable stream through its ``Resumer`` (the
zero-loss reader, plugged in by rs_spark.net), and a Server's Host asks its resume hook."""

from __future__ import annotations

import pickle

import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net.protocol.client import Client
from rs_spark.net.zero_loss.outage import Backoff
from rs_spark.net.zero_loss.resume_client import ResumablePublisher

pytestmark = pytest.mark.timeout(60)


class _Resumer:
    """A Resumer that records its calls (no connection is opened)."""

    def __init__(self):
        self.calls = []

    def __call__(self, client, name, key=None, /, **how):
        self.calls.append((client, name, key, how))
        return ("resumable", name, key)


def test_resumable_asks_the_clients_resumer_with_a_fresh_client():
    resumer = _Resumer()
    client = Client("tcp://127.0.0.1:1", resumer=resumer, codec="text")
    backoff = Backoff(first=0.5)
    assert client.publisher("n").resumable("k", window=5.0, positions=True, backoff=backoff) == ("resumable", "n", "k")
    [(fresh, name, key, how)] = resumer.calls
    assert fresh is not client and fresh.resumer is resumer and fresh.codec_name == "text"
    assert how == dict(window=5.0, positions=True, backoff=backoff)


def test_clients_built_directly_or_by_connect_read_with_the_zero_loss_reader():
    assert Client.plugged is ResumablePublisher
    with net.Client("tcp://127.0.0.1:1") as c:
        assert isinstance(c.publisher("n").resumable(), ResumablePublisher)
    pub = net.connect("tcp://127.0.0.1:1/n")
    assert isinstance(pub.resumable(), ResumablePublisher)
    again = pickle.loads(pickle.dumps(pub))
    assert isinstance(again.resumable(), ResumablePublisher) and again.address == pub.address


def test_a_client_without_a_resumer_says_so(monkeypatch):
    monkeypatch.setattr(Client, "plugged", None)
    with pytest.raises(TypeError, match="no resumer"):
        Client("tcp://127.0.0.1:1").publisher("n").resumable()


def test_the_servers_host_asks_the_resume_service():
    with net.serve(rs.range_(3), name="n") as s:
        reader = net.connect(s.address).resumable()
        it = rs.iterate(reader, prefetch=8)
        assert list(it) == [0, 1, 2]
        # The stream was opened for resumption: the resume service kept it (until acknowledged).
        assert [st.endpoint for st in s.stats().streams] == ["n"]
