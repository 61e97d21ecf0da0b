"""Stress: many streaming queries in one driver, the way notebooks and jobs run them.

Eight queries in one Spark driver (tests/reliability/driver.py), started two at a time (each pair
together, so their sources start at once) on 50-100 ms triggers and run for RS_STRESS_MINUTES
minutes (3 by default, the figure CI runs): four read replayable factory publishers, three read
endpoints served from this process (publishers that cannot replay), one reads two endpoints as
partitions; five write with ``format("reactive")`` into Subscribers served here, three with
``rs_spark.write_stream``. No query fails (Spark's race on the data source's shared environment
map, docs/guarantees.md, failed some in one driver), and every Subscriber gets every row once and
in order. Its cost is the minutes plus a driver's start and stop (about 4 minutes in all).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rs_spark import net
from rs_spark.delivery import serve_sink
from tests.reliability.trial import ROOT, ContinuingCounter, Seen

MINUTES = float(os.environ.get("RS_STRESS_MINUTES", "3"))
FACTORIES, ENDPOINTS = 4, 3


class ManyQueries:
    """The publishers, Subscribers and query specs of the stress run."""

    def __init__(self, tmp) -> None:
        self.counters = [ContinuingCounter() for _ in range(ENDPOINTS)]
        self.shards = {t: ContinuingCounter(t) for t in ("pa", "pb")}
        self.source = net.serve(self.counters[0], name="c0")
        for i, c in enumerate(self.counters[1:], 1):
            self.source.add_publisher(f"c{i}", c)
        for tag, shard in self.shards.items():
            self.source.add_publisher(tag, shard)
        self.seen = [Seen() for _ in range(FACTORIES + ENDPOINTS + 1)]
        self.sinks = [serve_sink(s, ledger=str(tmp / f"ledger-{i}.json")) for i, s in enumerate(self.seen)]
        self.queries = [self._factory(tmp, i) for i in range(FACTORIES)]
        self.queries += [self._endpoint(tmp, i) for i in range(ENDPOINTS)]
        shards = ",".join(f"{tag}={self.source.address_of(tag)}" for tag in self.shards)
        q = {"source": shards, "schema": "id LONG, p STRING", "sink": self.sinks[-1].address}
        self.queries.append({**q, "checkpoint": str(tmp / "ck-partitions")})

    def _factory(self, tmp, i: int) -> dict:
        return {
            "factory": "tests.reliability.publishers:replayable_ids",
            "sink": self.sinks[i].address,
            "checkpoint": str(tmp / f"ck-factory-{i}"),
            "write_stream": i % 2 == 0,
            "trigger": "50 milliseconds" if i == 0 else "100 milliseconds",
        }

    def _endpoint(self, tmp, i: int) -> dict:
        j = FACTORIES + i
        return {
            "source": self.source.address_of(f"c{i}"),
            "sink": self.sinks[j].address,
            "checkpoint": str(tmp / f"ck-endpoint-{i}"),
            "write_stream": i == 1,
        }

    def check(self) -> dict[str, int]:
        """Every Subscriber: ids from 0, each once, in order; every endpoint row delivered or still kept."""
        delivered = {}
        for i, seen in enumerate(self.seen[:-1]):
            assert seen.ids, f"query {i} delivered nothing"
            assert seen.ids == list(range(len(seen.ids))), f"query {i}: a duplicate, a hole or a reordering"
            delivered[f"q{i}"] = len(seen.ids)
        for i, c in enumerate(self.counters):
            assert len(c.ranges) == 1, f"endpoint c{i} was subscribed again: {c.ranges}"
            assert len(self.seen[FACTORIES + i].ids) <= c.ranges[0][1]
        for tag, shard in self.shards.items():
            ids = self.seen[-1].by_partition.get(tag, [])
            assert ids and ids == list(range(len(ids))), f"partition {tag}: a duplicate, a hole or a reordering"
            assert len(ids) <= shard.ranges[0][1]
            delivered[tag] = len(ids)
        assert self.source.stats().lost_records == 0
        return delivered

    def close(self) -> None:
        self.source.stop()
        for s in self.sinks:
            s.stop()


def _run_driver(m: ManyQueries, tmp) -> None:
    """The driver runs the queries for MINUTES, then stops them and exits 0; 1 once a query failed."""
    err = tmp / "driver.err"
    cmd = [sys.executable, os.path.join(ROOT, "tests", "reliability", "driver.py"), "--queries", json.dumps(m.queries)]
    with open(err, "w") as f:  # a file: a pipe nobody reads while the driver runs could fill and block it
        p = subprocess.Popen(
            [*cmd, "--seconds", str(MINUTES * 60), "--wave", "2"],
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=ROOT),
            stdout=subprocess.DEVNULL,
            stderr=f,
        )
    try:
        code = p.wait(MINUTES * 60 + 600)
    finally:
        if p.poll() is None:
            p.kill()
    assert code == 0, f"the driver exited {code}:\n{_causes(err.read_text(errors='replace'))}"


def _causes(text: str) -> str:
    """The driver's FAILED line and the causes in its stderr first (Spark's traces are long), then the tail."""
    keep = [ln for ln in text.splitlines() if ln.startswith(("FAILED", "Caused by")) or "Exception:" in ln]
    return "\n".join(keep[:15]) + "\n...\n" + text[-3000:]


@pytest.mark.slow
@pytest.mark.timeout(int(MINUTES * 60 + 900))
def test_many_queries_in_one_driver_none_fails_and_every_subscriber_gets_every_row_once_in_order(tmp_path):
    m = ManyQueries(tmp_path)
    try:
        _run_driver(m, tmp_path)
        delivered = m.check()
    finally:
        m.close()
    print(f"\n{len(m.queries)} queries in one driver for {MINUTES:g} min (RS_STRESS_MINUTES): delivered {delivered}")
