"""record_batches: a Publisher of elements as record batches, converted in chunks sized by demand.

What must hold: every element arrives once, in order, within batches of at most ``size`` rows;
upstream is never asked for more than the downstream's outstanding batches can hold (rule 1.1
both ways); a slow publisher's element is not held back for company; a refused chunk fails the
stream and cancels upstream; RecordBatches pass one by one, upstream asked one per batch wanted.
"""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from rs_spark import streams as rs
from rs_spark.arrow.chunking import CHUNK_ROWS, chunk_rows, record_batches
from rs_spark.arrow.convert import ElementConverter, MalformedElementError
from rs_spark.streams.errors import SpecViolation
from rs_spark.tck import PublisherVerification, Timeouts

from ..streams.manual_clock import ManualScheduler
from ..subscribers import Recorder

SCHEMA = pa.schema([("id", pa.int64())])


def _convert():
    converter = ElementConverter(SCHEMA)
    return lambda elements, first: converter.convert(elements, first).batch


class Spied:
    """``source`` as a Publisher that records every request(n) it gets and whether it was cancelled."""

    def __init__(self, source) -> None:
        self.source = source
        self.requests: list[int] = []
        self.cancelled = threading.Event()

    def subscribe(self, subscriber) -> None:
        me = self

        class Spy:
            def on_subscribe(self, s):
                class S:
                    def request(self, n):
                        me.requests.append(n)
                        s.request(n)

                    def cancel(self):
                        me.cancelled.set()
                        s.cancel()

                subscriber.on_subscribe(S())

            on_next = staticmethod(subscriber.on_next)
            on_error = staticmethod(subscriber.on_error)
            on_complete = staticmethod(subscriber.on_complete)

        self.source.subscribe(Spy())


def _ids(batches) -> list[int]:
    return [i for b in batches for i in b.column("id").to_pylist()]


def test_every_element_arrives_once_in_order_in_batches_of_at_most_size():
    r = Recorder()
    record_batches(rs.range_(10_000).pipe(rs.map(lambda i: {"id": i})), _convert, size=1000).subscribe(r)
    r.wait_done()
    assert r.completed and _ids(r.items) == list(range(10_000))
    assert max(b.num_rows for b in r.items) <= 1000
    assert len(r.items) <= 11, "a synchronous publisher's elements are converted in full chunks"


def test_upstream_is_asked_one_element_first_then_size_per_batch_wanted():
    pub = Spied(rs.range_(5000).pipe(rs.map(lambda i: {"id": i})))
    r = Recorder(batch=2, refill=False)
    record_batches(pub, _convert, size=100).subscribe(r)
    r.wait_for(2)
    assert pub.requests[0] == 1, "the first ask tells what kind of Publisher this is"
    assert sum(pub.requests) <= 1 + 2 * 100, f"asked {pub.requests} for two batches of at most 100"
    assert _ids(r.items) == list(range(sum(b.num_rows for b in r.items)))


def test_a_slow_publisher_s_element_is_emitted_without_waiting_for_more():
    """A push source (a sensor) emits one element now and the next much later: the first must reach
    the Subscriber before the second exists."""
    emitters = []
    pub = rs.create(emitters.append, buffer_size=16)
    r = Recorder()
    record_batches(pub, _convert, size=4096).subscribe(r)
    emitters[0].next({"id": 1})
    r.wait_for(1)
    assert _ids(r.items) == [1], "one element, alone, was converted and delivered"
    emitters[0].next({"id": 2})
    emitters[0].complete()
    r.wait_done()
    assert _ids(r.items) == [1, 2] and r.completed


def test_elements_from_another_thread_arrive_in_order():
    done = threading.Event()

    class Threaded:
        def subscribe(self, subscriber):
            class S:
                def __init__(self):
                    self.asked = 0
                    self.cond = threading.Condition()

                def request(self, n):
                    with self.cond:
                        self.asked += n
                        self.cond.notify()

                def cancel(self):
                    done.set()

            s = S()
            subscriber.on_subscribe(s)

            def run():
                sent = 0
                while sent < 3000:
                    with s.cond:
                        while s.asked == 0:
                            s.cond.wait()
                        k, s.asked = s.asked, 0
                    for _ in range(k):
                        if sent == 3000:
                            break
                        subscriber.on_next({"id": sent})
                        sent += 1
                subscriber.on_complete()

            threading.Thread(target=run, daemon=True).start()

    r = Recorder()
    record_batches(Threaded(), _convert, size=256).subscribe(r)
    r.wait_done()
    assert _ids(r.items) == list(range(3000)) and max(b.num_rows for b in r.items) <= 256


def test_a_malformed_element_fails_the_stream_naming_its_offset_and_cancels_upstream():
    pub = Spied(rs.range_(100).pipe(rs.map(lambda i: {"id": "x" if i == 57 else i})))
    r = Recorder(batch=1)  # a batch at a time: upstream has not completed when chunk 50-59 is refused
    record_batches(pub, _convert, size=10).subscribe(r)
    r.wait_done()
    assert isinstance(r.error, MalformedElementError) and "offset 57" in str(r.error)
    assert pub.cancelled.is_set()
    ids = _ids(r.items)
    assert ids == list(range(len(ids))) and 40 <= len(ids) <= 57, "the chunks before the bad one, in order"


def test_record_batches_pass_one_by_one_and_upstream_is_asked_one_per_batch():
    batches = [pa.RecordBatch.from_pydict({"id": list(range(i * 100, i * 100 + 100))}) for i in range(20)]
    src = Spied(rs.from_iterable(batches))
    r = Recorder(batch=3, refill=False)
    record_batches(src, _convert, size=4096).subscribe(r)
    r.wait_for(3)
    assert [b.num_rows for b in r.items] == [100, 100, 100]
    assert sum(src.requests) <= 3, f"asked {src.requests}: one RecordBatch per batch wanted"


class TestRecordBatchesTck(PublisherVerification):
    """record_batches through the kit: a batch per element asked (size 1), so the kit's counts hold."""

    timeouts = Timeouts(default=0.5, no_signals=0.05, poll=0.01, gc=0.5)
    skips = {}

    def create_publisher(self, elements):
        source = rs.range_(elements) if elements < 2**63 - 1 else rs.defer(lambda: iter(int, 1))
        return record_batches(source.pipe(rs.map(lambda i: {"id": i})), _convert, size=1)

    def create_failed_publisher(self):
        return record_batches(rs.error(RuntimeError("failed publisher")), _convert, size=1)


class TestRecordBatchesOfArrowTck(PublisherVerification):
    """record_batches over a Publisher of RecordBatches (each passes alone: the kit's counts hold)."""

    timeouts = Timeouts(default=0.5, no_signals=0.05, poll=0.01, gc=0.5)
    skips = {}

    def create_publisher(self, elements):
        def one(i):
            return pa.RecordBatch.from_pydict({"id": pa.array([i], pa.int64())})

        source = rs.range_(elements) if elements < 2**63 - 1 else rs.defer(lambda: iter(int, 1))
        return record_batches(source.pipe(rs.map(one)), _convert, size=4096)

    def create_failed_publisher(self):
        return record_batches(rs.error(RuntimeError("failed publisher")), _convert)


class _Scripted:
    """A Publisher that runs ``script(subscriber, subscription_requests)`` on the first request."""

    def __init__(self, script, raise_on_request: int | None = None) -> None:
        self.script, self.raise_on_request, self.requests = script, raise_on_request, []

    def subscribe(self, subscriber):
        me = self

        class S:
            def request(self, n):
                me.requests.append(n)
                if me.raise_on_request == len(me.requests):
                    raise RuntimeError("request broke")
                if len(me.requests) == 1:
                    me.script(subscriber)

            def cancel(self):
                pass

        subscriber.on_subscribe(S())


def test_spec_1_1_more_elements_than_requested_fail_the_stream_naming_the_rule():
    def flood(s):
        for i in range(5):  # RecordBatches: asked for one, one per batch wanted
            s.on_next(pa.RecordBatch.from_pydict({"id": pa.array([i], pa.int64())}))

    r = Recorder()
    record_batches(_Scripted(flood), _convert).subscribe(r)
    r.wait_done()
    assert isinstance(r.error, SpecViolation) and r.error.rule == "1.1", r.error


def test_spec_3_16_a_request_that_raises_fails_the_stream_instead_of_hanging_it():
    r = Recorder()
    record_batches(_Scripted(lambda s: s.on_next({"id": 0}), raise_on_request=2), _convert).subscribe(r)
    r.wait_done()
    assert isinstance(r.error, SpecViolation) and r.error.rule == "3.16" and "request broke" in str(r.error)
    assert _ids(r.items) == [0], "what came before is delivered"


def test_the_elements_before_an_error_are_delivered_before_it():
    class Then:
        def subscribe(self, subscriber):
            class S:
                def __init__(self):
                    self.n = 0

                def request(self, n):
                    self.n += 1
                    if self.n == 1:
                        subscriber.on_next({"id": 0})
                    elif self.n == 2:
                        for i in (1, 2, 3):
                            subscriber.on_next({"id": i})
                        subscriber.on_error(LookupError("gone"))

                def cancel(self):
                    pass

            subscriber.on_subscribe(S())

    r = Recorder()
    record_batches(Then(), _convert).subscribe(r)
    r.wait_done()
    assert isinstance(r.error, LookupError) and _ids(r.items) == [0, 1, 2, 3]


def test_a_slow_publisher_s_elements_wait_for_demand_and_join_one_batch():
    """The timer's flushes run only when the test says (a manual clock), after every element: with no
    batch wanted they convert nothing, and the elements become one batch once one is wanted."""
    emitters, clock = [], ManualScheduler()
    r = Recorder(batch=1, refill=False)
    record_batches(rs.create(emitters.append, buffer_size=64), _convert, size=4096, scheduler=clock).subscribe(r)
    emitters[0].next({"id": 0})  # the probe: one element asked; the rest of its batch asked at once
    clock.advance(0)
    r.wait_for(1)
    r.request(1)  # now 4096 are asked for one batch
    emitters[0].next({"id": 1})
    clock.advance(0)
    r.wait_for(2)  # delivered at once: a slow publisher's row is not held back
    for i in range(2, 40):  # asked for, but no batch is wanted: they wait
        emitters[0].next({"id": i})
        clock.advance(0)
    assert len(r.items) == 2
    r.request(1)
    clock.advance(0)
    r.wait_for(3)
    assert _ids(r.items) == list(range(40)), _ids(r.items)
    assert [b.num_rows for b in r.items] == [1, 1, 38]


@pytest.mark.parametrize(
    ("retained", "held", "rows", "why"),
    [
        (4_000_000, None, CHUNK_ROWS, "the default Retention, a reader taking rows by credit (real-time)"),
        (4_000_000, 100_000, CHUNK_ROWS, "the defaults of read_stream: CHUNK_ROWS"),
        (4_000_000, 1000, 500, "maxBufferedRecords=1000: half of it (the reader holds a batch whole)"),
        (1000, 100_000, 500, "Retention(max_records=1000): half of it (the endpoint keeps a batch whole)"),
        (1000, None, 500, "the retention bound applies to the real-time source too"),
        (600, 1000, 300, "the smaller half wins"),
        (2 * CHUNK_ROWS + 2, 2 * CHUNK_ROWS + 2, CHUNK_ROWS, "halves above CHUNK_ROWS: CHUNK_ROWS"),
        (3, None, 1, "an odd bound rounds down"),
        (1, None, 1, "a bound of 1: chunks of 1, never 0"),
        (4_000_000, 1, 1, "maxBufferedRecords=1: chunks of 1"),
    ],
    ids=[
        "defaults-rt",
        "defaults",
        "buffered-1000",
        "retained-1000",
        "retained-1000-rt",
        "smaller-half",
        "above-chunk-rows",
        "odd",
        "retained-1",
        "buffered-1",
    ],
)
def test_chunk_rows_is_at_most_half_of_each_bound_and_at_least_one(retained, held, rows, why):
    assert chunk_rows(retained, held) == rows, why
