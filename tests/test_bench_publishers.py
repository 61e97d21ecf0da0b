"""benchmarks/_publishers.py: the ticking publishers latency.py reads as partitions, served here or by
a process of their own; what a reader takes from each endpoint is what they say they emitted."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _publishers import PublisherProcess, PublishersHere  # noqa: E402

from rs_spark import net  # noqa: E402
from rs_spark.net.protocol.address import parse  # noqa: E402
from rs_spark.streams import iterate  # noqa: E402


@pytest.mark.parametrize("kind", [PublishersHere, PublisherProcess], ids=["here", "process"])
def test_each_endpoint_serves_ticks_that_between_counts(kind):
    publishers = kind(2_000.0, 2, net.Retention(), None)
    try:
        names = [entry.split("=", 1) for entry in publishers.endpoints.split(",")]
        assert [name for name, _ in names] == ["p0", "p1"]
        for name, address in names:
            assert parse(address).name == name
            start = time.time()
            rows = 0
            for batch in iterate(net.connect(address), prefetch=4, timeout=30):
                assert batch.schema.names == ["id", "t"]
                rows += batch.num_rows
                if rows >= 50:
                    break
            # every row read was emitted (and counted) by now; the publishers go on ticking meanwhile
            assert publishers.between(start - 60, time.time() + 1) >= rows
        assert publishers.between(0, 1) == 0
    finally:
        publishers.stop()
