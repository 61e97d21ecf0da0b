"""One registry of the endpoints this process serves for its sources (read_stream and realtime.read_stream)."""

from __future__ import annotations

import socket

import rs_spark
from rs_spark.net import Server
from rs_spark.net.protocol.address import parse
from rs_spark.spark import realtime, served
from rs_spark.spark.source import read_stream
from rs_spark.streams.sources import just


def _accepts(server: Server) -> bool:
    a = parse(server.address, need_name=False)
    try:
        socket.create_connection((a.host, a.port), timeout=5).close()
    except OSError:
        return False
    return True


def test_every_stop_served_stops_the_servers_of_both_read_streams_once():
    first, second = Server(), Server()
    for s in (first, second):
        s.add_publisher("p", just(1))
    served.keep(first)
    served.keep(second)
    assert served.served()[-2:] == [first, second]
    assert realtime.stop_served is read_stream.stop_served is served.stop_served
    assert rs_spark.stop_served() >= 2
    assert served.served() == []
    assert not _accepts(first) and not _accepts(second)
    assert realtime.stop_served() == 0  # nothing left to stop, in either registry's old name
