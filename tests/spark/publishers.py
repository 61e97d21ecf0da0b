"""Publisher factories for the Spark tests: ``factory(options) -> Publisher``.

They run inside Spark's driver-side reader process (or an executor for batch reads), so
they are importable module functions; they get the ``publisher.*`` options, prefix stripped
(lower-cased by Spark).
"""

from __future__ import annotations

import itertools
import os
import threading
import time

import pyarrow as pa

from rs_spark import streams as rs

SCHEMA = "id LONG, name STRING, price DOUBLE"


def _int(options, key, default):
    return int(options.get(key, default))


def counter(options):
    """``publisher.count`` dict records (id, name, price); ``publisher.run`` tags the name."""
    n = _int(options, "count", 100)
    run = options.get("run", "r")
    return rs.range_(n).pipe(rs.map(lambda i: {"id": i, "name": f"{run}-{i}", "price": i * 0.5}))


def numbers(options):
    """``publisher.count`` rows ``{"id": i}``; cannot replay (an operator on a replayable source)."""
    n = _int(options, "count", 100)
    return rs.range_(n).pipe(rs.map(lambda i: {"id": i}))


def tuples(options):
    n = _int(options, "count", 100)
    return rs.range_(n).pipe(rs.map(lambda i: (i, f"t{i}", float(i))))


def endless(options):
    """An infinite fast publisher that never pauses."""
    run = options.get("run", "r")
    return rs.defer(lambda: ((i, f"{run}-{i}", 1.0) for i in itertools.count()))


def arrow_batches(options):
    """``publisher.batches`` RecordBatches of ``publisher.rows`` rows each."""
    nb, rows = _int(options, "batches", 5), _int(options, "rows", 1000)

    def make(b):
        ids = pa.array(range(b * rows, (b + 1) * rows), pa.int64())
        return pa.RecordBatch.from_arrays(
            [ids, pa.array([f"b{b}"] * rows), pa.array([0.25] * rows)], names=["id", "name", "price"]
        )

    return rs.range_(nb).pipe(rs.map(make))


def failing(options):
    """``publisher.count`` records, then on_error(KeyError)."""
    n = _int(options, "count", 10)

    def gen():
        for i in range(n):
            yield (i, f"f{i}", 1.0)
        raise KeyError(f"sensor {n} went offline")

    return rs.defer(gen)


def malformed(options):
    """Records with a bad price at id 3 and id 7."""

    def gen():
        for i in range(10):
            yield {"id": i, "name": f"m{i}", "price": "bad" if i in (3, 7) else float(i)}

    return rs.defer(gen)


class _Overshoot:
    """Breaks rule 1.1: sends twice what was requested."""

    def subscribe(self, s):
        sent = [0]

        class Sub:
            def request(self, n):
                threading.Thread(
                    target=lambda: [
                        s.on_next((sent.__setitem__(0, sent[0] + 1) or sent[0], "x", 1.0)) for _ in range(2 * n)
                    ],
                    daemon=True,
                ).start()

            def cancel(self):
                pass

        s.on_subscribe(Sub())


def overshoot(options):
    return _Overshoot()


def declared(options):
    """Declares its own schema (a pyarrow.Schema)."""
    from rs_spark.arrow import with_schema

    pub = rs.range_(5).pipe(rs.map(lambda i: {"k": i, "v": str(i)}))
    return with_schema(pub, pa.schema([("k", pa.int64()), ("v", pa.string())]))


def slow(options):
    """One record every ``publisher.interval_ms`` ms, ``publisher.count`` of them."""
    n = _int(options, "count", 20)
    interval = _int(options, "interval_ms", 50) / 1000.0

    def gen():
        for i in range(n):
            time.sleep(interval)  # not synchronisation: the slow publisher's pace
            yield (i, f"s{i}", 1.0)

    return rs.defer(gen)


def cancel_marker(options):
    """Endless records; writes ``publisher.marker`` when its generator is closed (cancel)."""
    marker = options["marker"]

    def gen():
        try:
            for i in itertools.count():
                yield (i, "c", 1.0)
        finally:
            with open(marker, "w") as f:
                f.write("cancelled")

    return rs.defer(gen)


# -- misbehaving user code (tests/spark/test_source_misbehaving.py) ---------------------------------
class _Sub:
    """A Subscription whose request/cancel run the given callables."""

    def __init__(self, request=lambda n: None, cancel=lambda: None):
        self._request, self._cancel = request, cancel

    def request(self, n):
        self._request(n)

    def cancel(self):
        self._cancel()


class _Publisher:
    def __init__(self, subscribe):
        self._subscribe = subscribe

    def subscribe(self, subscriber):
        self._subscribe(subscriber)


def raises_in_subscribe(options):
    def subscribe(s):
        raise ConnectionRefusedError("broker at 10.0.0.9:9092 refused the connection")

    return _Publisher(subscribe)


def raises_in_request(options):
    def subscribe(s):
        def request(n):
            raise RuntimeError(f"request({n}) exploded inside the publisher")

        s.on_subscribe(_Sub(request))

    return _Publisher(subscribe)


def raises_in_request_after(options):
    """Sends ``publisher.count`` records (within demand), then raises in the next request()."""
    total = _int(options, "count", 5)

    def subscribe(s):
        sent = [0]

        def request(n):
            if sent[0] >= total:
                raise RuntimeError(f"request({n}) after {total} records exploded inside the publisher")
            for _ in range(min(n, total - sent[0])):
                s.on_next((sent[0], f"r{sent[0]}", 1.0))
                sent[0] += 1

        s.on_subscribe(_Sub(request))

    return _Publisher(subscribe)


def never_subscribes(options):
    return _Publisher(lambda s: None)  # never calls on_subscribe (breaks rule 1.9)


def blocks_in_subscribe(options):
    """subscribe() blocks forever and never calls on_subscribe."""
    return _Publisher(lambda s: threading.Event().wait())


def silent(options):
    """Calls on_subscribe, then never signals anything (never sends, never completes)."""
    return _Publisher(lambda s: s.on_subscribe(_Sub()))


def blocks_in_request(options):
    """on_subscribe, then request() never returns."""
    return _Publisher(lambda s: s.on_subscribe(_Sub(lambda n: threading.Event().wait())))


def raises_in_cancel(options):
    """Endless records; cancel() raises (breaks rule 3.15)."""

    def subscribe(s):
        sent = [0]

        def request(n):
            for _ in range(n):
                s.on_next((sent[0], "c", 1.0))
                sent[0] += 1

        def cancel():
            raise RuntimeError("cancel() exploded inside the publisher")

        s.on_subscribe(_Sub(request, cancel))

    return _Publisher(subscribe)


def errors_at_once(options):
    """on_subscribe, then on_error before any request (legal: rule 1.4)."""

    def subscribe(s):
        s.on_subscribe(_Sub())
        s.on_error(PermissionError("token expired for topic trades"))

    return _Publisher(subscribe)


def completes_at_once(options):
    return rs.empty()


def some_then_silent(options):
    """``publisher.count`` records (within demand), then nothing, ever (no on_complete)."""
    total = _int(options, "count", 5)

    def subscribe(s):
        sent = [0]

        def request(n):
            for _ in range(min(n, total - sent[0])):
                s.on_next((sent[0], f"q{sent[0]}", 1.0))
                sent[0] += 1

        s.on_subscribe(_Sub(request))

    return _Publisher(subscribe)


def factory_raises(options):
    raise KeyError("option publisher.topic is required")


def not_a_publisher(options):
    return [1, 2, 3]


def returns_none(options):
    return None


def returns_partitions(options):
    """A mapping of partition ids to Publishers, which option publisher does not take."""
    return {"eu": rs.from_iterable([1, 2]), "us": rs.from_iterable([3])}


def many_malformed(options):
    """``publisher.count`` dict records; those whose id is in ``publisher.bad`` (comma list) have a bad price."""
    n = _int(options, "count", 5000)
    bad = {int(x) for x in str(options.get("bad", "")).split(",") if x}
    return rs.range_(n).pipe(rs.map(lambda i: {"id": i, "name": f"m{i}", "price": "bad" if i in bad else i * 0.5}))


def cancel_recording(options):
    """An endless publisher that appends ``created PID`` / ``subscribed PID`` / ``cancelled PID`` lines
    to ``publisher.events``: the SIGTERM tests find the reader process and count its cancels there."""
    path = options["events"]

    def note(what):
        with open(path, "a") as f:
            f.write(f"{what} {os.getpid()}\n")

    def gen():
        note("subscribed")
        try:
            for i in itertools.count():
                yield (i, f"c-{i}", 1.0)
        except GeneratorExit:  # from_iterable closes the generator on cancel (rule 3.13)
            note("cancelled")
            raise

    note("created")
    return rs.defer(gen)


def replayable(options):
    """``publisher.count`` tuples (id, name, price) from a list: Replayable (``subscribe_at``), so
    Spark's offsets carry its position and a restarted query asks again from there."""
    n = _int(options, "count", 100)
    return rs.from_iterable([(i, f"r-{i}", i * 0.5) for i in range(n)])


def options_as_rows(options):
    """One row per option the factory got: ``key=value`` (what a factory sees, for the tests)."""
    return rs.from_iterable([(f"{k}={v}",) for k, v in sorted(options.items())])


class LiveCounter:
    """A live feed of ``{"id": n}`` rows: every subscription continues one shared counter (a new
    subscriber sees the next ids, never earlier ones), as a feed that does not replay. Served by the
    outage tests, so the rows of a stream the endpoint dropped show as a gap in the ids."""

    def __init__(self, start: int = 0) -> None:
        self._rows = map(lambda i: {"id": i}, itertools.count(start))  # next() is atomic: C-level map over count

    def subscribe(self, subscriber) -> None:
        rs.from_iterable(self._rows).subscribe(subscriber)
