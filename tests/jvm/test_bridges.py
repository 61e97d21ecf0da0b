"""Both bridges with a real JVM: element encodings, errors, demand and cancel."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from rs_spark import streams as rs
from rs_spark.jvm import JvmError, JvmPublisher, JvmSubscriber, ShimNotFound
from rs_spark.streams.subscribers import BlockingIterator

from ..waits import wait_until


def _all(pub, prefetch=64):
    it = BlockingIterator(prefetch=prefetch)
    pub.subscribe(it)
    return list(it)


def test_records_beans_maps_and_bytes_cross_with_declared_or_given_schemas(jvm):
    E = jvm.rsspark.fixtures.Elements
    trades = _all(JvmPublisher(E.trades(3), jvm))  # a record declares its schema
    assert trades[1] == {"id": 1, "symbol": "S1", "price": 0.5, "buy": False}
    quotes = _all(JvmPublisher(E.quotes(2), jvm, elements="rows"))  # a bean, by its getters
    assert quotes == [{"size": 0, "symbol": "Q0"}, {"size": 1, "symbol": "Q1"}]
    maps = _all(JvmPublisher(E.maps(3), jvm, schema=pa.schema([("id", pa.int64()), ("name", pa.string())])))
    assert maps == [{"id": 0, "name": None}, {"id": 1, "name": "n1"}, {"id": 2, "name": "n2"}]
    assert _all(JvmPublisher(E.bytes(2), jvm)) == [b"b0", b"b1"]
    assert _all(JvmPublisher(jvm.rsspark.jvm.Sources.submissionStrings(2), jvm)) == ["s-0", "s-1"]


def test_batches_have_at_most_batch_rows_and_request_counts_batches(jvm):
    pub = JvmPublisher(jvm.rsspark.jvm.Sources.submissionLongs(1000), jvm, elements="batches", batch_rows=100)
    batches = _all(pub, prefetch=2)
    assert all(isinstance(b, pa.RecordBatch) and b.num_rows <= 100 for b in batches)
    assert pa.Table.from_batches(batches).column("value").to_pylist() == list(range(1000))


def test_a_jvm_error_arrives_after_the_elements_before_it_with_its_java_type(jvm):
    it = BlockingIterator(prefetch=16)
    JvmPublisher(jvm.rsspark.jvm.Sources.submissionFailing(3, "disk on fire"), jvm).subscribe(it)
    got = []
    with pytest.raises(JvmError) as info:
        for x in it:
            got.append(x)
    assert got == [0, 1, 2]
    assert info.value.java_type == "java.lang.IllegalStateException"
    assert "disk on fire" in str(info.value) and "after 3 elements" in str(info.value)


def test_an_element_that_does_not_fit_the_schema_fails_naming_its_offset(jvm):
    it = BlockingIterator(prefetch=100)
    JvmPublisher(jvm.rsspark.fixtures.Elements.badAfter(5), jvm, schema="value:int64").subscribe(it)
    got = []
    with pytest.raises(JvmError, match="offset 5"):
        for x in it:
            got.append(x)
    assert got == [0, 1, 2, 3, 4]


def test_spec_1_1_a_jvm_publisher_sending_more_than_requested_fails_naming_the_rule(jvm):
    it = BlockingIterator(prefetch=1)
    JvmPublisher(jvm.rsspark.fixtures.Elements.overProducing(), jvm, schema="value:int64").subscribe(it)
    with pytest.raises(JvmError, match="rule 1.1"):
        list(it)


class _Manual:
    """Requests only when the test says; ``await_rows(n)`` waits on a condition notified per element."""

    def __init__(self):
        self.items, self.s, self.error = [], None, None
        self._rows = 0  # rows received: one per value, num_rows per batch
        self.done = threading.Event()
        self._arrived = threading.Condition()

    def on_subscribe(self, s):
        self.s = s

    def on_next(self, x):
        with self._arrived:
            self.items.append(x)
            self._rows += x.num_rows if isinstance(x, pa.RecordBatch) else 1
            self._arrived.notify_all()

    def on_error(self, e):
        self.error = e
        self._end()

    def on_complete(self):
        self._end()

    def _end(self):
        self.done.set()
        with self._arrived:
            self._arrived.notify_all()

    def rows(self):
        return self._rows

    def await_rows(self, n, timeout=10.0):
        with self._arrived:
            assert self._arrived.wait_for(lambda: self.rows() >= n or self.done.is_set(), timeout), (
                f"{n} rows did not arrive within {timeout}s; got {self.rows()}"
            )

    def cancel_and_wait(self):
        """Cancel, and wait until the pump stopped. Cancelling is processed after the drain pass that is
        delivering (and, after it, topping up the JVM's demand), so requested_rows is final then."""
        self.s.cancel()
        assert self.s.wait_ended(10), "the pump did not stop after cancel"


def test_python_demand_is_jvm_demand_and_nothing_is_requested_ahead(jvm):
    pub = JvmPublisher(jvm.rsspark.jvm.Sources.submissionEndless(), jvm)
    m = _Manual()
    pub.subscribe(m)
    m.s.request(7)
    m.await_rows(7)
    m.cancel_and_wait()
    assert m.items == list(range(7))
    assert m.s.requested_rows == 7 and m.s.received_rows == 7  # not one row asked ahead of the demand


def test_python_demand_added_later_is_forwarded_exactly(jvm):
    pub = JvmPublisher(jvm.rsspark.jvm.Sources.submissionEndless(), jvm)
    m = _Manual()
    pub.subscribe(m)
    m.s.request(7)
    m.await_rows(7)
    m.s.request(3)
    m.await_rows(10)
    m.cancel_and_wait()
    assert m.items == list(range(10))
    assert m.s.requested_rows == 10 and m.s.received_rows == 10


def _endless_batches(jvm):
    # whatever the linger (0.05 s, up to 0.5 s), a batch leaves once it has batch_rows rows
    return JvmPublisher(
        jvm.rsspark.jvm.Sources.submissionEndless(),
        jvm,
        elements="batches",
        batch_rows=1000,
        linger=0.05,
        max_linger=0.5,
    )


def test_batches_demand_bounds_what_the_bridge_requests_and_buffers(jvm):
    # request(2) batches of 1000 rows: 2000 rows are requested upstream, never more
    m = _Manual()
    _endless_batches(jvm).subscribe(m)
    m.s.request(2)
    m.await_rows(2000)
    m.cancel_and_wait()
    assert len(m.items) == 2 and all(b.num_rows == 1000 for b in m.items)
    assert m.s.requested_rows == 2000 and m.s.received_rows == 2000
    assert pa.Table.from_batches(m.items).column("value").to_pylist() == list(range(2000))


def test_batches_demand_added_later_asks_for_one_more_batch_of_rows(jvm):
    m = _Manual()
    _endless_batches(jvm).subscribe(m)
    m.s.request(2)
    m.await_rows(2000)
    m.s.request(1)
    m.await_rows(3000)
    m.cancel_and_wait()
    assert len(m.items) == 3 and m.s.requested_rows == 3000 and m.s.received_rows == 3000
    assert pa.Table.from_batches(m.items).column("value").to_pylist() == list(range(3000))


class _Slow(_Manual):
    """Requests Long.MAX_VALUE, takes 1 ms per element (a slow consumer), and records at each element
    the most rows that were requested from the JVM and not yet emitted to it."""

    def __init__(self):
        super().__init__()
        self.worst = 0

    def on_subscribe(self, s):
        self.s = s
        s.request(2**63 - 1)

    def on_next(self, x):
        self.worst = max(self.worst, self.s.requested_rows - self.rows())
        super().on_next(x)
        time.sleep(0.001)  # not synchronisation: the slow consumer under test


@pytest.mark.parametrize("elements", ["values", "batches"])
def test_unbounded_demand_from_a_slow_subscriber_keeps_the_bridge_bounded(jvm, elements):
    # An endless fast JVM publisher, a Subscriber that wants everything but is slow: the rows
    # requested from the JVM and not yet emitted stay within max_in_flight (the JVM buffers no more).
    pub = JvmPublisher(
        jvm.rsspark.jvm.Sources.submissionEndless(), jvm, elements=elements, batch_rows=50, max_in_flight=200
    )
    m = _Slow()
    pub.subscribe(m)
    per = 50 if elements == "batches" else 1
    m.await_rows(2000)  # ten times max_in_flight went through
    m.cancel_and_wait()
    assert m.worst <= 200 + per, m.worst  # + the element being emitted, no longer queued, not yet received
    rows = m.items if elements == "values" else pa.Table.from_batches(m.items).column("value").to_pylist()
    assert rows == list(range(len(rows)))


def test_max_in_flight_below_batch_rows_is_refused(jvm):
    with pytest.raises(ValueError, match="max_in_flight"):
        JvmPublisher(jvm.rsspark.jvm.Sources.submissionLongs(1), jvm, batch_rows=100, max_in_flight=50)


def test_file_hand_off_maps_each_batch_and_leaves_no_file_behind(jvm):
    import glob

    before = set(glob.glob("/dev/shm/rs-spark-jvm-*"))
    pub = JvmPublisher(jvm.rsspark.jvm.Sources.submissionLongs(50_000), jvm, elements="batches", batch_rows=4096)
    batches = _all(pub, prefetch=4)
    # every batch still holds its own values after the JVM wrote later batches (one mapping each)
    assert pa.Table.from_batches(batches).column("value").to_pylist() == list(range(50_000))
    assert len(batches) >= 50_000 // 4096
    # the pump removes its private hand-off folder once the stream has ended (on its own thread)
    wait_until(lambda: set(glob.glob("/dev/shm/rs-spark-jvm-*")) - before == set(), "the hand-off folder removed", 10)


def test_python_publisher_into_jvm_subscriber_with_records_beans_and_maps(jvm):
    C = jvm.rsspark.jvm.CollectingSubscriber
    rec = C(5)
    sub = JvmSubscriber(rec, jvm, schema="id:int64,symbol:string,price:float64,buy:bool", kind="rsspark.fixtures.Trade")
    rs.from_iterable([{"id": i, "symbol": f"S{i}", "price": i / 4, "buy": i % 2 == 0} for i in range(20)]).subscribe(
        sub
    )
    wait_until(rec.isComplete, "the records subscriber complete", 10)
    items = list(rec.items())
    assert len(items) == 20 and items[3].symbol() == "S3" and items[3].price() == 0.75
    assert rec.violation() is None

    bean = C(2)
    rs.from_iterable([("Q1", 1), ("Q2", 2)]).subscribe(
        JvmSubscriber(bean, jvm, schema="symbol:string,size:int32", kind="rsspark.fixtures.Quote")
    )
    wait_until(bean.isComplete, "the beans subscriber complete", 10)
    assert [(q.getSymbol(), q.getSize()) for q in bean.items()] == [("Q1", 1), ("Q2", 2)]

    maps = C(1000)
    rs.from_iterable([{"k": "a", "v": 1.5}]).subscribe(JvmSubscriber(maps, jvm))
    wait_until(maps.isComplete, "the maps subscriber complete", 10)
    m = maps.items()[0]
    assert m.getClass().getName() == "java.util.LinkedHashMap" and (m["k"], m["v"]) == ("a", 1.5)


def test_record_batches_feed_a_jvm_subscriber_row_by_row_within_its_demand(jvm):
    col = jvm.rsspark.jvm.CollectingSubscriber(10)
    batches = [
        pa.record_batch([pa.array(range(i * 100, i * 100 + 100), pa.int64())], names=["value"]) for i in range(5)
    ]
    rs.from_iterable(batches).subscribe(JvmSubscriber(col, jvm, elements="batches"))
    wait_until(col.isComplete, "the JVM subscriber complete", 10)
    assert list(col.items()) == list(range(500)) and col.violation() is None


def test_a_jvm_subscriber_cancel_cancels_the_python_subscription(jvm):
    col = jvm.rsspark.jvm.CollectingSubscriber(4, 10)  # cancels after 10
    cancelled = threading.Event()
    pulled = []

    def gen():
        try:
            i = 0
            while True:
                pulled.append(i)
                yield i
                i += 1
        finally:
            cancelled.set()

    rs.defer(gen).subscribe(JvmSubscriber(col, jvm))
    assert cancelled.wait(5)
    assert col.count() == 10 and len(pulled) <= 16  # demand-driven: never far ahead of the JVM's requests


def test_a_python_error_reaches_the_jvm_subscriber_after_the_elements(jvm):
    col = jvm.rsspark.jvm.CollectingSubscriber(100)

    def gen():
        yield 1
        yield 2
        raise ValueError("bad sensor")

    rs.defer(gen).subscribe(JvmSubscriber(col, jvm, schema="value:int64"))
    wait_until(lambda: col.errorText() is not None, "the error at the JVM subscriber", 10)
    assert list(col.items()) == [1, 2]
    assert "ValueError: bad sensor" in col.errorText()


def test_a_jvm_without_the_shim_gets_a_clear_error():
    class NoClass:
        def version(self):
            raise RuntimeError("JavaPackage is not callable")

    class View:
        class rsspark:
            class jvm:
                Shim = NoClass()

    with pytest.raises(ShimNotFound, match="rs_spark.spark.jvm"):
        JvmPublisher(object(), View())
