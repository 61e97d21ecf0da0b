"""Interop with the rsocket package's `reactivestreams` types and with ReactiveX, using the real packages."""

from __future__ import annotations

import threading

import pytest

from rs_spark import streams as rs
from rs_spark.streams.interop import reactivex as rx_interop
from rs_spark.streams.interop import rsocket as rsock

reactivestreams = pytest.importorskip("reactivestreams.subscriber")
reactivex = pytest.importorskip("reactivex")


def test_rsocket_default_subscriber_reads_our_publisher():
    from reactivestreams.subscriber import DefaultSubscriber

    got, done = [], threading.Event()

    class Sub(DefaultSubscriber):
        def on_subscribe(self, subscription):
            super().on_subscribe(subscription)
            subscription.request(10)

        def on_next(self, value, is_complete=False):
            got.append((value, is_complete))

        def on_complete(self):
            done.set()

    rsock.to_rsocket_publisher(rs.range_(3)).subscribe(Sub())
    assert done.is_set() and got == [(0, False), (1, False), (2, False)]


def test_rsocket_style_publisher_with_is_complete_on_last_element():
    from reactivestreams.publisher import Publisher
    from reactivestreams.subscription import Subscription

    class TwoThenDone(Publisher):
        def subscribe(self, subscriber):
            class S(Subscription):
                sent = False

                def request(self, n):
                    if not self.sent:
                        self.sent = True
                        subscriber.on_next("a")
                        subscriber.on_next("b", is_complete=True)

                def cancel(self):
                    pass

            subscriber.on_subscribe(S())

    assert rs.to_list(rsock.from_rsocket_publisher(TwoThenDone())) == ["a", "b"]


def test_observable_to_publisher_respects_overflow_bound():
    subject = reactivex.subject.Subject()
    pub = rx_interop.from_observable(subject, rs.Overflow.DROP_OLDEST, buffer_size=4)
    it = rs.iterate(pub, prefetch=1)
    for i in range(100):
        subject.on_next(i)
    subject.on_completed()
    got = list(it)
    # one element was requested (prefetch=1) and taken at once; the rest share a 4-slot buffer
    assert got[0] == 0 and got[-4:] == [96, 97, 98, 99] and len(got) <= 6


def test_cancel_disposes_the_observable_subscription():
    disposed = threading.Event()

    def on_subscribe(observer, scheduler=None):
        from reactivex.disposable import Disposable

        observer.on_next(1)
        return Disposable(disposed.set)

    it = rs.iterate(rx_interop.from_observable(reactivex.create(on_subscribe)), prefetch=4)
    assert next(it) == 1
    it.close()
    assert disposed.is_set()


def test_publisher_to_observable_round_trip():
    obs = rx_interop.to_observable(rs.range_(5).pipe(rs.map(lambda x: x * x)), request_size=2)
    got, done = [], threading.Event()
    obs.subscribe(on_next=got.append, on_completed=done.set)
    assert done.wait(2) and got == [0, 1, 4, 9, 16]
