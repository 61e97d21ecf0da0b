"""A finite backlog served by another process, read over a long link (issue 50): every row once, and
an AvailableNow run ends by itself having read all that was ready when it started, whatever the link.

The backlog (20,000 rows of ``from_iterable``, all ready at once) is served by ``rs_spark.net`` in a
spawned process and read through ``tests/faultrelay.py`` delaying each direction by 300 ms (a
cross-region or satellite link), with ``maxRecordsPerTrigger=5000`` (four micro-batches' worth) and
the default ``pollTimeout``: one endpoint, and two as partitions, under ``trigger(availableNow=True)``
and the default trigger. One endpoint without delay is the control."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest

from tests.faultrelay import FaultRelay
from tests.net import _procs
from tests.net.conftest import Child

from ..waits import wait_until

TOKEN = "available-now-link-test"
ROWS = 20_000  # per endpoint
MAX = 5_000  # maxRecordsPerTrigger
B = 10**9  # partition b's ids start here: each partition's rows are told apart by their ids
WAIT = 120  # seconds: the bound of each wait for a query's end or rows (a bound, not a timing assertion)
TRIGGERS = {"availableNow": {"availableNow": True}, "default": None}


class _Link:
    """Finite backlogs served by a spawned process, reached through a relay that delays each way."""

    def __init__(self, delay: float, backlogs: dict[str, tuple[int, int]]) -> None:
        self.backlogs = backlogs
        self.child = Child(_procs.serve_backlogs, "tcp://127.0.0.1:0", backlogs, TOKEN)
        try:
            self.relay = FaultRelay(self.child.base, delay=delay)
        except BaseException:
            self.child.kill()
            raise
        base = self.relay.address(self.child.base)
        names = list(backlogs)
        # one endpoint by its address; several as partitions, each named for its backlog
        self.endpoint = f"{base}/{names[0]}" if len(names) == 1 else ",".join(f"{n}={base}/{n}" for n in names)

    def expected(self) -> set[int]:
        return {i for first, rows in self.backlogs.values() for i in range(first, first + rows)}

    def close(self) -> None:
        self.relay.close()
        self.child.kill()


@pytest.fixture
def link():
    made: list[_Link] = []

    def start(delay: float, backlogs: dict[str, tuple[int, int]]) -> _Link:
        made.append(_Link(delay, backlogs))
        return made[-1]

    yield start
    for x in made:
        x.close()


def _read(spark: Any, link: _Link, trigger: str, tmp_path) -> list[int]:
    """Read ``link``'s endpoint(s) into a memory sink under ``trigger``; the ids read. AvailableNow must
    end by itself; the default trigger runs until its micro-batches read every row (a bounded wait on
    their progress: a query of the sink meanwhile would wait for task slots the reading tasks hold),
    then stops."""
    df = (
        spark.readStream.format("reactive")
        .option("endpoint", link.endpoint)
        .option("token", TOKEN)
        .option("maxRecordsPerTrigger", str(MAX))
        .schema("id LONG")
        .load()
    )
    table = "link_" + uuid.uuid4().hex[:8]
    w = df.writeStream.format("memory").queryName(table).option("checkpointLocation", str(tmp_path / "chk"))
    if TRIGGERS[trigger]:
        w = w.trigger(**TRIGGERS[trigger])
    q = w.start()
    total = len(link.expected())

    def batches() -> list[int]:
        return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]

    def so_far() -> str:
        return f"{sum(batches()):,} of {total:,} rows read, in micro-batches of {batches()}"

    try:
        if trigger == "availableNow":
            assert q.awaitTermination(WAIT), f"the AvailableNow run had not ended after {WAIT} s: {so_far()}"
            assert q.exception() is None, q.exception()
        else:
            wait_until(lambda: _read_all(q, total), lambda: f"every row: {so_far()}", WAIT, interval=0.1)
        assert all(n <= MAX for n in batches()), f"a micro-batch read past maxRecordsPerTrigger: {batches()}"
    finally:
        q.stop()
    return [r.id for r in spark.sql(f"select id from {table}").collect()]


def _read_all(q: Any, total: int) -> bool:
    if not q.isActive:
        raise AssertionError(f"the query ended while the test waited for its rows: {q.exception()}")
    return sum(p["numInputRows"] for p in q.recentProgress) >= total


def _every_row_once(ids: list[int], link: _Link) -> None:
    expected = link.expected()
    seen = Counter(ids)
    missing = len(expected - seen.keys())
    twice = sum(n - 1 for n in seen.values() if n > 1)
    unknown = len(seen.keys() - expected)
    per = {name: sum(first <= i < first + rows for i in seen) for name, (first, rows) in link.backlogs.items()}
    assert (missing, twice, unknown) == (0, 0, 0), (
        f"read {len(ids):,} rows of {len(expected):,} ({per} distinct per endpoint): "
        f"{missing:,} missing, {twice:,} read twice, {unknown:,} unknown"
    )


@pytest.mark.timeout(240)
@pytest.mark.parametrize("trigger", list(TRIGGERS))
@pytest.mark.parametrize("delay", [0.0, 0.3], ids=["0ms", "300ms"])
def test_one_endpoint_reads_its_whole_backlog_once_over_the_link(spark, link, tmp_path, delay, trigger):
    served = link(delay, {"one": (0, ROWS)})
    _every_row_once(_read(spark, served, trigger, tmp_path), served)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("trigger", list(TRIGGERS))
def test_two_endpoints_as_partitions_read_each_backlog_once_over_a_300_ms_link(spark, link, tmp_path, trigger):
    served = link(0.3, {"a": (0, ROWS), "b": (B, ROWS)})
    _every_row_once(_read(spark, served, trigger, tmp_path), served)
