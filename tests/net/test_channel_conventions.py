"""How a request-channel's first element travels (rs_spark.net.protocol.conventions), rs_spark on both
sides: every combination that names the same convention delivers every element once, in order,
never before it was requested; the implied credit of the first element is counted."""

from __future__ import annotations

import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net import ChannelData, ChannelOpen

from ..subscribers import Recorder


@pytest.mark.parametrize(
    "data,open_",
    [("auto", "first_element"), ("auto", "route_only"), ("element", "first_element"), ("parameters", "route_only")],
)
@pytest.mark.parametrize("codec", ["json", "arrow"])
def test_matching_conventions_deliver_every_element_once_in_order(data, open_, codec):
    import pyarrow as pa

    sub = Recorder(batch=1)  # one at a time: any element beyond demand is counted
    server = net.Server(channel_data=data)
    address = server.add_subscriber("sink", sub)
    if codec == "arrow":
        items = [pa.record_batch({"x": pa.array(range(i * 3, i * 3 + 3), pa.int64())}) for i in range(20)]
    else:
        items = list(range(20))
    remote = net.connect_subscriber(address + f"?codec={codec}", channel_open=open_)
    try:
        rs.from_iterable(items).subscribe(remote)
        assert sub.done.wait(30) and sub.error is None, sub.error
        assert sub.unrequested == 0
        if codec == "arrow":
            assert pa.Table.from_batches(sub.items).column("x").to_pylist() == list(range(60))
        else:
            assert sub.items == items
    finally:
        server.stop()


@pytest.mark.parametrize("publisher,expect_error", [(rs.empty(), False), (rs.error(KeyError("gone")), True)])
def test_an_empty_or_failing_publisher_opens_the_channel_without_an_element(publisher, expect_error):
    sub = Recorder(batch=1)
    server = net.Server()
    remote = net.connect_subscriber(server.add_subscriber("sink", sub))
    try:
        publisher.subscribe(remote)
        assert sub.done.wait(30)
        assert sub.items == []  # nothing invented from the data-less REQUEST_CHANNEL
        assert (sub.error is not None) == expect_error
        if expect_error:
            assert "gone" in str(sub.error)
    finally:
        server.stop()


def test_parameters_mode_never_delivers_the_request_data():
    """The ``rsocket`` package's reading: a client putting parameters in the REQUEST_CHANNEL data
    (here rs_spark's first_element client, standing in for it) does not see them become an element."""
    sub = Recorder(batch=1)
    server = net.Server(channel_data=ChannelData.PARAMETERS)
    remote = net.connect_subscriber(server.add_subscriber("sink", sub), channel_open=ChannelOpen.FIRST_ELEMENT)
    try:
        rs.from_iterable(["params", 1, 2]).subscribe(remote)
        assert sub.done.wait(30)
        assert sub.items == [1, 2]
    finally:
        server.stop()


def test_conventions_are_checked_with_the_choices_named():
    with pytest.raises(ValueError, match=r"channel_data='first' must be one of \['auto', 'element', 'parameters'\]"):
        net.Server(channel_data="first")
    with pytest.raises(ValueError, match=r"channel_open='x' must be one of \['first_element', 'route_only'\]"):
        net.connect_subscriber("tcp://127.0.0.1:1/sink", channel_open="x")
    assert ChannelData.AUTO.first_element(b"1") and not ChannelData.AUTO.first_element(b"")
    assert ChannelData.ELEMENT.first_element(b"") and not ChannelData.PARAMETERS.first_element(b"1")
