"""SubscriberWhiteboxVerification through the wire: the Subscriber under test is the one
connect_subscriber() returns; its probe sits in the served Subscriber on the other side, so every
signal the kit sends is checked after crossing the connection, and the puppet's request/cancel
cross back as REQUEST_N/CANCEL."""

from __future__ import annotations

import itertools

import pytest

from rs_spark import net
from rs_spark.tck import SubscriberPuppet, SubscriberWhiteboxVerification, Timeouts

NET = Timeouts(default=1.0, no_signals=0.1, poll=0.01, gc=0.5)
_names = itertools.count()


class _Probed:
    """A served Subscriber reporting to the probe; demand comes only from the puppet."""

    def __init__(self, probe):
        self.probe = probe
        self.s = None

    def on_subscribe(self, s):
        if self.s is not None:
            s.cancel()  # rule 2.5
            return
        self.s = s
        self.probe.register_on_subscribe(SubscriberPuppet(s.request, s.cancel))

    def on_next(self, x):
        self.probe.register_on_next(x)

    def on_error(self, e):
        self.probe.register_on_error(e)

    def on_complete(self):
        self.probe.register_on_complete()


class TestConnectedSubscriberWhitebox(SubscriberWhiteboxVerification):
    timeouts = NET
    skips = {}

    @pytest.fixture(autouse=True)
    def _server(self, server):
        self.server = server

    def create_subscriber(self, probe):
        # route_only: the served Subscriber is subscribed when the channel opens, before any element,
        # so all demand comes from the puppet as the kit requires. With first_element (the default,
        # as rsocket-java/-js do) the first element itself opens the channel on an implied credit.
        return net.connect_subscriber(
            self.server.add_subscriber(f"w{next(_names)}", _Probed(probe)), channel_open="route_only"
        )

    def create_element(self, i):
        return i

    def errors_match(self, received, sent):
        # An error crosses as ERROR[APPLICATION_ERROR] with its type name and message.
        return (
            isinstance(received, net.RemoteError)
            and received.remote_message == str(sent)
            and received.type_name.endswith(type(sent).__name__)
        )
