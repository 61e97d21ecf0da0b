"""rs_spark.tck on the network: a served Publisher read with connect(), and a served Subscriber
fed through connect_subscriber(), both over loopback TCP in this process."""

from __future__ import annotations

import itertools

import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.tck import PublisherVerification, SubscriberBlackboxVerification, Timeouts

NET = Timeouts(default=1.0, no_signals=0.1, poll=0.01, gc=0.5)
MAX = 2**63 - 1
_names = itertools.count()


class TestServedPublisher(PublisherVerification):
    """Every publisher rule, checked on the Publisher that connect() returns."""

    timeouts = NET
    skips = {}

    @pytest.fixture(autouse=True)
    def _server(self, server):
        self.server = server

    def create_publisher(self, elements):
        pub = rs.range_(elements) if elements < MAX else rs.defer(lambda: iter(int, 1))
        return net.connect(self.server.add_publisher(f"p{next(_names)}", pub))

    def create_failed_publisher(self):
        return net.connect(self.server.add_publisher(f"f{next(_names)}", rs.error(RuntimeError("failed publisher"))))


class TestServedSubscriber(SubscriberBlackboxVerification):
    """Every blackbox subscriber rule, checked on the Subscriber that connect_subscriber() returns
    (it forwards to a served CallbackSubscriber in the same process)."""

    timeouts = NET
    skips = {}

    @pytest.fixture(autouse=True)
    def _server(self, server):
        self.server = server

    def create_subscriber(self):
        addr = self.server.add_subscriber(f"s{next(_names)}", lambda: rs.CallbackSubscriber(lambda x: None))
        return net.connect_subscriber(addr)

    def create_element(self, i):
        return i


@pytest.fixture(scope="module")
def tls_server(tls):
    s = net.Server("tls://127.0.0.1:0", token="tck-token", ssl=tls[0])
    yield s
    s.stop()


class TestServedPublisherOverTls(PublisherVerification):
    """Every publisher rule again, with the served Publisher reached over TLS (and a token)."""

    timeouts = NET
    skips = {}

    @pytest.fixture(autouse=True)
    def _server(self, tls_server, tls):
        self.server = tls_server
        self.ssl = tls[1]

    def create_publisher(self, elements):
        pub = rs.range_(elements) if elements < MAX else rs.defer(lambda: iter(int, 1))
        return net.connect(self.server.add_publisher(f"p{next(_names)}", pub), token="tck-token", ssl=self.ssl)

    def create_failed_publisher(self):
        return net.connect(
            self.server.add_publisher(f"f{next(_names)}", rs.error(RuntimeError("failed publisher"))),
            token="tck-token",
            ssl=self.ssl,
        )


class TestServedSubscriberOverTls(SubscriberBlackboxVerification):
    """Every blackbox subscriber rule again, the served Subscriber reached over TLS (and a token)."""

    timeouts = NET
    skips = {}

    @pytest.fixture(autouse=True)
    def _server(self, tls_server, tls):
        self.server = tls_server
        self.ssl = tls[1]

    def create_subscriber(self):
        addr = self.server.add_subscriber(f"s{next(_names)}", lambda: rs.CallbackSubscriber(lambda x: None))
        return net.connect_subscriber(addr, token="tck-token", ssl=self.ssl)

    def create_element(self, i):
        return i
