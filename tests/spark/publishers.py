"""Publisher factories for the Spark tests: ``factory(options) -> Publisher``.

They run inside Spark's driver-side reader process (or an executor for batch reads), so
they are importable module functions; options arrive lower-cased, ``publisher.*`` passed through.
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
    return int(options.get(f"publisher.{key}", default))


def counter(options):
    """``publisher.count`` dict records (id, name, price); ``publisher.run`` tags the name."""
    n = _int(options, "count", 100)
    run = options.get("publisher.run", "r")
    return rs.range_(n).pipe(rs.map(lambda i: {"id": i, "name": f"{run}-{i}", "price": i * 0.5}))


def tuples(options):
    n = _int(options, "count", 100)
    return rs.range_(n).pipe(rs.map(lambda i: (i, f"t{i}", float(i))))


def endless(options):
    """An infinite fast publisher that never pauses."""
    run = options.get("publisher.run", "r")
    return rs.defer(lambda: ((i, f"{run}-{i}", 1.0) for i in itertools.count()))


def arrow_batches(options):
    """``publisher.batches`` RecordBatches of ``publisher.rows`` rows each."""
    nb, rows = _int(options, "batches", 5), _int(options, "rows", 1000)

    def make(b):
        ids = pa.array(range(b * rows, (b + 1) * rows), pa.int64())
        return pa.RecordBatch.from_arrays([ids, pa.array([f"b{b}"] * rows), pa.array([0.25] * rows)],
                                          names=["id", "name", "price"])
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
                threading.Thread(target=lambda: [s.on_next((sent.__setitem__(0, sent[0] + 1) or sent[0], "x", 1.0))
                                                 for _ in range(2 * n)], daemon=True).start()

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
            time.sleep(interval)
            yield (i, f"s{i}", 1.0)
    return rs.defer(gen)


def cancel_marker(options):
    """Endless records; writes ``publisher.marker`` when its generator is closed (cancel)."""
    marker = options["publisher.marker"]

    def gen():
        try:
            for i in itertools.count():
                yield (i, "c", 1.0)
        finally:
            with open(marker, "w") as f:
                f.write("cancelled")
    return rs.defer(gen)
