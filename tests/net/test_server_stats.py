"""Server.stats(): a typed record (ServerStats, one StreamStats per kept stream), read by its attributes;
``as_dict()`` gives the camelCase mapping of earlier versions."""

from __future__ import annotations

import dataclasses
import warnings

import pytest

from rs_spark import net
from rs_spark import streams as rs
from tests.subscribers import Recorder
from tests.waits import wait_until

TOKEN = "stats-test-token"


@pytest.fixture
def kept():
    """A server keeping one resumable stream: 300 rows sent, 250 acknowledged, its reader gone."""
    server = net.serve(rs.range_(1000), name="nums", token=TOKEN)
    try:
        r = Recorder(300, refill=False)
        net.connect(server.address, token=TOKEN).resumable().subscribe(r)
        wait_until(lambda: len(r.items) == 300, what="300 rows")
        r.s.on_commit(250)
        wait_until(lambda: r.s.retention.get("ackedPosition") == 250, what="the server's answer")
        r.s.detach()
        wait_until(lambda: server.stats().streams[0].state == "detached", what="the stream to wait for a resume")
        wait_until(lambda: server.connection_count == 0, what="its connection to close")
        yield server
    finally:
        server.stop()


def test_server_stats_is_a_frozen_record_with_one_typed_record_per_stream(kept):
    stats = kept.stats()
    assert isinstance(stats, net.ServerStats)
    (s,) = stats.streams
    assert isinstance(stats.streams, tuple) and isinstance(s, net.StreamStats)
    assert (s.endpoint, s.state, s.acked_position, s.first_position, s.held_records) == (
        "nums",
        "detached",
        250,
        250,
        50,
    )
    assert s.sent_position == 300 and s.attaches == 1 and s.window == net.Retention().window
    assert (stats.retained_records, stats.retained_bytes) == (50, s.held_bytes)
    assert (stats.expired_streams, stats.lost_records, stats.discarded_records, stats.connections) == (0, 0, 0, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats.lost_records = 1  # type: ignore[misc]


def test_as_dict_gives_the_old_camel_case_values_and_the_record_is_no_mapping(kept):
    stats = kept.stats()
    old = stats.as_dict()
    assert old["streams"][0]["ackedPosition"] == 250 and old["streams"][0]["state"] == "detached"
    assert old["retainedRecords"] == 50 and old["connections"] == 0
    with pytest.raises(TypeError):
        stats["streams"]  # type: ignore[index]
    assert not hasattr(stats, "get") and not hasattr(stats, "keys")


def test_new_access_does_not_warn(kept):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats = kept.stats()
        assert stats.streams[0].state == "detached" and stats.as_dict()["streams"][0]["state"] == "detached"
