"""IteratorSubscription's chunk hand-off to subscribers that define on_next_many."""

from __future__ import annotations

import logging

from rs_spark import streams as rs

from .strict import StrictSubscriber


class ChunkSubscriber(StrictSubscriber):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.chunks = []

    def on_next_many(self, items):
        self._enter("on_next_many")
        try:
            self.chunks.append(len(items))
            self.items.extend(items)
            if len(self.items) > self.requested:
                self.violations.append(f"1.1: {len(self.items)} elements with {self.requested} requested")
        finally:
            self._leave()


def test_spec_1_1_chunks_never_exceed_demand():
    s = ChunkSubscriber()
    rs.range_(5000).subscribe(s)
    s.request(3)
    s.request(2000)
    assert s.items == list(range(2003)) and s.chunks == [3, 1024, 976]
    s.request(10_000)
    s.await_done()
    assert s.items == list(range(5000)) and s.completed
    s.assert_clean()


def test_spec_2_13_none_in_a_chunk_delivers_the_prefix_then_type_error():
    s = ChunkSubscriber(initial_request=10)
    rs.from_iterable([1, 2, None, 4]).subscribe(s)
    s.await_done()
    assert s.items == [1, 2] and isinstance(s.error, TypeError) and "element #2" in str(s.error)
    s.assert_clean()


def test_iterator_error_mid_chunk_delivers_what_came_before():
    def gen():
        yield 1
        yield 2
        raise KeyError("broken source")

    s = ChunkSubscriber(initial_request=100)
    rs.defer(gen).subscribe(s)
    s.await_done()
    assert s.items == [1, 2] and isinstance(s.error, KeyError)


def test_spec_2_13_raising_on_next_many_cancels_closes_and_logs(caplog):
    closed = []

    def gen():
        try:
            yield from range(10_000)
        finally:
            closed.append(True)

    class Raising(ChunkSubscriber):
        def on_next_many(self, items):
            raise RuntimeError("subscriber bug")

    s = Raising(initial_request=50)
    with caplog.at_level(logging.ERROR, logger="rs_spark.streams"):
        rs.defer(gen).subscribe(s)
    assert closed == [True]
    assert any("on_next_many" in r.getMessage() and "2.13" in r.getMessage() for r in caplog.records)
