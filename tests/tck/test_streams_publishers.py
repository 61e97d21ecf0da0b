"""Every Publisher rs_spark.streams ships, through the kit's PublisherVerification."""

from __future__ import annotations

import inspect

from rs_spark import streams as rs
from rs_spark.tck import PUBLISHER_RULES, PublisherVerification, Timeouts, untested_rules

from .skips import bounded, no_failed_publisher

FAST = Timeouts(default=0.5, no_signals=0.05, poll=0.01, gc=0.5)
MAX = 2**63 - 1


def test_publisher_verification_has_all_38_jvm_tests_named_by_rule():
    """31 run as tests; the 7 untested rules are listed by untested_rules, not run as skipped tests."""
    methods = {n for n, _ in inspect.getmembers(PublisherVerification, inspect.isfunction) if n.startswith("test_")}
    assert len(PUBLISHER_RULES) == 38
    untested = {u.name for u in untested_rules(PublisherVerification)}
    assert methods == set(PUBLISHER_RULES) - untested and len(methods) == 31
    statuses = [status for _, _, status in PUBLISHER_RULES.values()]
    assert statuses.count("required") == 22 and statuses.count("optional") == 8
    assert statuses.count("stochastic") == 1 and statuses.count("untested") == 7 == len(untested)
    assert [u.rule for u in untested_rules(PublisherVerification)] == ["1.6", "1.7", "1.8", "1.9", "1.10", "3.4", "3.5"]


def _items(n):
    return range(n) if n < 10**6 else iter(int, 1)  # iter(int, 1) never ends: an unbounded source


class TestRange(PublisherVerification):
    timeouts = FAST
    skips = {}

    def create_publisher(self, elements):
        return rs.range_(elements) if elements < MAX else rs.defer(lambda: iter(int, 1))

    def create_failed_publisher(self):
        return rs.error(RuntimeError("failed publisher"))


class TestFromIterableGenerator(PublisherVerification):
    timeouts = FAST
    skips = {}

    def create_publisher(self, elements):
        return rs.defer(lambda: (i for i in _items(elements)))

    def create_failed_publisher(self):
        def boom():
            raise LookupError("no data")

        return rs.defer(boom)


class TestCreate(PublisherVerification):
    timeouts = FAST
    skips = {**no_failed_publisher("create() of elements only"), **bounded(1024, "a bounded buffer")}

    def max_elements_from_publisher(self):
        return 1024  # pushes everything at once into a bounded buffer

    def create_publisher(self, elements):
        def run(em):
            for i in range(elements):
                em.next(i)
            em.complete()

        return rs.create(run, buffer_size=max(1, elements))


class TestPipedUnfused(PublisherVerification):
    timeouts = FAST
    skips = {**no_failed_publisher("create() of elements only"), **bounded(1024, "a bounded buffer")}

    def max_elements_from_publisher(self):
        return 1024

    def create_publisher(self, elements):
        def run(em):
            for i in range(elements):
                em.next(i)
            em.complete()

        return rs.create(run, buffer_size=max(1, elements)).pipe(rs.map(lambda x: x + 1), rs.filter(lambda x: True))


class TestPipedFused(PublisherVerification):
    timeouts = FAST
    skips = no_failed_publisher("a source of elements only")

    def create_publisher(self, elements):
        return rs.defer(lambda: _items(elements)).pipe(rs.map(str), rs.take(elements))


class TestAsyncIterable(PublisherVerification):
    timeouts = FAST
    skips = no_failed_publisher("TestAsyncIterableFailed has one")

    def create_publisher(self, elements):
        async def gen():
            i = 0
            while i < elements:
                yield i
                i += 1

        return rs.from_async_iterable(gen)


def _raise(exc):
    raise exc


class TestFromIterableList(PublisherVerification):
    timeouts = FAST
    skips = bounded(4096, "a materialised list")

    def max_elements_from_publisher(self):
        return 4096  # a materialised list

    def create_publisher(self, elements):
        return rs.from_iterable(list(range(elements)))

    def create_failed_publisher(self):
        # a generator fails only when pulled (on demand), so fail while building the iterator
        return rs.defer(lambda: _raise(OSError("the source failed")))


class TestFromIterableOneShotIterator(PublisherVerification):
    timeouts = FAST
    skips = {
        **no_failed_publisher("a source of elements only"),
        "1.11": "a one-shot iterator serves one subscriber; a second gets on_error (rule 1.11 lets it)",
    }

    def create_publisher(self, elements):
        return rs.from_iterable(iter(_items(elements)))


class TestJust(PublisherVerification):
    timeouts = FAST
    skips = {**no_failed_publisher("just() of elements only"), **bounded(4096, "the elements are arguments")}

    def max_elements_from_publisher(self):
        return 4096

    def create_publisher(self, elements):
        return rs.just(*range(elements)) if elements else rs.empty()


class TestCreateOnAThread(PublisherVerification):
    """The emitter pushes from its own thread, only as demand arrives, and stops on cancel."""

    timeouts = FAST
    skips = {}

    def create_publisher(self, elements):
        import threading

        def run(em):
            def pump():
                i = 0
                while i < elements and not em.is_cancelled:
                    if em.requested > 0:
                        if em.next(i):
                            i += 1
                    else:
                        # not test synchronisation: a producer thread honouring demand polls for it
                        # (an Emitter offers no "demand arrived" event)
                        threading.Event().wait(0.001)
                em.complete()

            threading.Thread(target=pump, daemon=True).start()

        return rs.create(run, buffer_size=16)

    def create_failed_publisher(self):
        return rs.create(lambda em: _raise(RuntimeError("create failed")))


class TestTake(PublisherVerification):
    timeouts = FAST
    skips = {}

    def create_publisher(self, elements):
        return rs.range_(elements + 5 if elements < MAX else MAX).pipe(rs.take(elements))

    def create_failed_publisher(self):
        return rs.error(KeyError("upstream failed")).pipe(rs.take(3))


class TestBatchOfOne(PublisherVerification):
    timeouts = FAST
    skips = {}

    def create_publisher(self, elements):
        return rs.defer(lambda: _items(elements)).pipe(rs.batch(1))

    def create_failed_publisher(self):
        return rs.error(KeyError("upstream failed")).pipe(rs.batch(2))


class TestMapFilterFailed(PublisherVerification):
    timeouts = FAST
    skips = {}

    def create_publisher(self, elements):
        return rs.range_(elements).pipe(rs.map(lambda x: x), rs.filter(lambda x: True))

    def create_failed_publisher(self):
        # map(1 // 0) would fail only once elements are requested; an upstream error needs no demand
        return rs.error(ZeroDivisionError("upstream failed")).pipe(rs.map(lambda x: x), rs.filter(bool))


class TestAsyncIterableFailed(PublisherVerification):
    timeouts = FAST
    skips = bounded(1024, "a test-sized generator")

    def max_elements_from_publisher(self):
        return 1024

    def create_publisher(self, elements):
        async def gen():
            for i in range(elements):
                yield i

        return rs.from_async_iterable(gen)

    def create_failed_publisher(self):
        # the source factory fails when called (per subscriber), before any demand
        return rs.from_async_iterable(lambda: _raise(RuntimeError("async source failed")))
