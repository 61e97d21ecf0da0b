"""The source's Subscriber (Intake) through the kit's blackbox subscriber verification."""

from __future__ import annotations

from rs_spark.spark.source.single.intake import Intake, IntakeStats
from rs_spark.tck import SubscriberBlackboxVerification, Timeouts


class TestIntakeBlackbox(SubscriberBlackboxVerification):
    timeouts = Timeouts(default=0.5, no_signals=0.05, poll=0.01, gc=0.5)
    skips = {}

    def create_subscriber(self):
        return Intake(max_buffered=16, base_offset=0)

    def trigger_request(self, subscriber):
        subscriber.demand_up_to(4)  # what latestOffset does for a micro-batch


def test_memory_bound_counts_rows_of_record_batch_elements():
    """maxBufferedRecords bounds rows: with 1000-row batches and a bound of 5000 rows, at most
    five batches are buffered or requested, however many elements the reader asks for."""
    import pyarrow as pa

    from rs_spark.spark.source.single.intake import Intake

    requested = []

    class Batches:
        def subscribe(self, s):
            class Sub:
                def request(self, n):
                    requested.append(n)
                    for _ in range(n):
                        s.on_next(pa.record_batch({"x": pa.array(range(1000), pa.int64())}))

                def cancel(self):
                    pass

            s.on_subscribe(Sub())

    intake = Intake(max_buffered=5000, base_offset=0)
    Batches().subscribe(intake)
    intake.demand_up_to(1)  # the reader's probe: learn the rows per element
    assert intake.wait(1, 5)
    intake.demand_up_to(100_000)
    assert intake.wait(5000, 5)
    assert sum(requested) == 5 and intake.buffered_rows == 5000
    # Nothing taken out: nothing more may be requested. demand_up_to decides (and counts) on this
    # thread and returns what it asked for; only the request() call itself runs on the demand thread.
    assert intake.demand_up_to(100_000) == 0
    assert intake.stats() == IntakeStats(requested=5, received=5, buffered=5, outstanding=0)
    assert sum(requested) == 5  # every request was served: the 5000 rows above arrived through them
    elements, rows = intake.take_rows(2000)
    assert rows == 2000
    intake.demand_up_to(100_000)
    assert intake.wait(5000, 5) and sum(requested) == 7 and intake.buffered_rows == 5000
    intake.cancel()


def test_take_rows_splits_a_record_batch_element_and_counts_it_once():
    """A RecordBatch element bigger than the micro-batch is split; it stays one buffered element
    until its last row is taken, and plain elements around it count one row each."""
    import pyarrow as pa

    intake = Intake(max_buffered=100, base_offset=0)

    class Source:
        def request(self, n):
            pass

        def cancel(self):
            pass

    intake.on_subscribe(Source())
    assert intake.demand_up_to(3) == 3
    intake.on_next("a")
    intake.on_next(pa.record_batch({"x": pa.array(range(5), pa.int64())}))
    intake.on_next("b")
    elements, rows = intake.take_rows(3)
    assert rows == 3 and elements[0] == "a" and elements[1].num_rows == 2
    assert intake.buffered == 2 and intake.buffered_rows == 4  # the rest of the batch, and "b"
    elements, rows = intake.take_rows(None)
    assert rows == 4 and [e.num_rows for e in elements[:1]] == [3] and elements[1] == "b"
    assert intake.buffered == 0 and intake.buffered_rows == 0
    intake.cancel()


def test_take_rows_hands_on_and_counts_empty_record_batches_left_at_the_converted_head():
    """Empty RecordBatch elements left at the head of the converted elements, then exactly the
    buffered rows as plain elements: the empty batches are handed on too and counted, so the
    buffered-element count (which bounds demand) returns to zero. (The fast path for "every
    buffered row, plain elements" used to drop them and leave the count two too high.)"""
    import threading

    import pyarrow as pa

    converting = threading.Event()

    def precompute(run):
        converting.set()  # called by the converter thread, which holds its elements until it lands them
        return None  # not converted: the reader converts plain elements itself

    intake = Intake(max_buffered=100, base_offset=0, precompute=precompute)

    class Source:
        def request(self, n):
            pass

        def cancel(self):
            pass

    intake.on_subscribe(Source())
    intake.chunk = 3
    assert intake.demand_up_to(5) == 5
    empty = pa.record_batch({"x": pa.array([], pa.int64())})
    for element in ("a", empty, empty):  # the third wakes the converter: all three move on
        intake.on_next(element)
    assert converting.wait(5)
    intake.chunk = 1_000_000  # what arrives next stays where the publisher put it
    elements, rows = intake.take_rows(1)  # waits until the converter landed its three
    assert rows == 1 and elements == ["a"]
    intake.on_next("b")
    intake.on_next("c")
    elements, rows = intake.take_rows(None)
    assert rows == 2 and elements == [empty, empty, "b", "c"]
    assert intake.buffered == 0 and intake.buffered_rows == 0
    intake.cancel()
