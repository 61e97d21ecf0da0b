"""Several publishers as partitions on a real standalone cluster (rs_spark/spark/source/partitioned/).

Four publishers, each served by rs_spark.net from a process of its own, cannot replay (each
subscription continues after the last id emitted) and tag their rows with their partition. A
driver (tests/reliability/driver.py, a subprocess) reads them as four partitions with option
endpoint: executors on two workers fetch each planned range straight from the endpoints, and the
rows go to a Subscriber served from this process with a ledger. While rows flow an executor JVM is
killed while its task fetches from an endpoint, then the driver is SIGKILLed and restarted from its
checkpoint, then stopped gracefully.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rs_spark.delivery import serve_sink
from rs_spark.net.protocol.address import parse
from tests.reliability.trial import Seen
from tests.waits import wait_until

from .partition_publisher import PartitionProcess
from .standalone import ROOT, Cluster

pytestmark = pytest.mark.slow

TAGS = ("p0", "p1", "p2", "p3")


class Driver:
    """Runs of the driver program on the cluster, over the same query and checkpoint."""

    def __init__(self, cluster: Cluster, query: dict, tmp: Path) -> None:
        self.cluster, self.query, self.tmp = cluster, query, tmp
        self.runs = 0

    def start(self, stop_file: Path | None = None) -> subprocess.Popen:
        cmd = [sys.executable, os.path.join(ROOT, "tests", "reliability", "driver.py")]
        cmd += ["--master", self.cluster.url, "--queries", json.dumps([self.query])]
        if stop_file is not None:
            cmd += ["--stop-file", str(stop_file)]
        self.runs += 1
        err = open(self.err(), "w")  # noqa: SIM115 - the child holds it; closed here once it started
        out, env = subprocess.PIPE, self.cluster.env
        with err:  # its own process group: its JVM and the reader process die with it
            p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=err, text=True, start_new_session=True)
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "STARTED", self.tail()
        return p

    def err(self) -> Path:
        return self.tmp / f"driver-{self.runs}.err"

    def tail(self) -> str:
        return self.err().read_text()[-3000:]


def _delivered(seen: Seen) -> dict[str, int]:
    return {t: len(seen.by_partition.get(t, ())) for t in TAGS}


def _wait_more(seen: Seen, p: subprocess.Popen, driver: Driver, rows: int, what: str) -> None:
    """Every partition delivers ``rows`` more rows (the driver still running)."""
    before = _delivered(seen)
    wait_until(
        lambda: p.poll() is not None or all(_delivered(seen)[t] >= before[t] + rows for t in TAGS),
        what=what,
        timeout=240,
    )
    assert p.poll() is None, driver.tail()


def _kill_an_executor_mid_fetch(cluster: Cluster, pub: PartitionProcess, seen: Seen) -> dict[str, int]:
    """SIGKILL the executor JVM whose task is fetching a range from ``pub``'s endpoint: the endpoint's
    process is stopped (SIGSTOP) until an executor connected to it, so the kill is surely mid-fetch."""
    os.kill(pub.proc.pid, signal.SIGSTOP)
    try:
        port = parse(pub.address).port
        executor = wait_until(
            lambda: cluster.executor_connected_to(port),
            what=f"an executor to fetch a range of partition {pub.tag} from its stopped endpoint",
            timeout=60,
        )
        os.kill(executor, signal.SIGKILL)  # its task is retried on another executor
        return _delivered(seen)
    finally:
        os.kill(pub.proc.pid, signal.SIGCONT)


def _check_partition(pub: PartitionProcess, ids: list[int]) -> dict:
    """Exactly once, in order; every emitted row delivered or still kept; nothing lost."""
    tag = pub.tag
    assert ids and ids == list(range(len(ids))), f"partition {tag}: a duplicate, a hole or a reordering"
    # The publisher may still answer demand issued before the stop: wait until what it emitted is kept.
    stats = wait_until(
        lambda: (
            (s := pub.stats())["server"]["streams"]
            and s["server"]["streams"][0]["endPosition"] == s["emitted"][-1][1]
            and s
        ),
        what=f"partition {tag}'s endpoint to keep all its publisher emitted",
    )
    server, emitted = stats["server"], stats["emitted"]
    assert len(emitted) == 1, f"partition {tag}'s publisher was subscribed again: {emitted}"
    assert len(server["streams"]) == 1, f"partition {tag} has several streams: {server['streams']}"
    stream = server["streams"][0]
    assert stream["firstPosition"] <= len(ids) <= emitted[0][1], (tag, stream, len(ids))
    assert server["lostRecords"] == 0 and server["expiredStreams"] == 0, (tag, server)
    assert stream["attaches"] >= 2, f"partition {tag}: the restarted driver did not resume its stream: {stream}"
    return {"delivered": len(ids), "emitted": emitted[0][1], "kept from": stream["firstPosition"]}


@pytest.mark.timeout(900)
def test_four_endpoint_partitions_lose_and_duplicate_nothing_across_a_driver_sigkill_and_an_executor_kill(
    cluster, tmp_path
):
    t0 = time.monotonic()
    token = secrets.token_urlsafe(16)
    pubs = {t: PartitionProcess(t, token) for t in TAGS}
    seen = Seen()
    sink = serve_sink(seen, ledger=str(tmp_path / "ledger.json"))
    query = {
        "source": ",".join(f"{t}={pub.address}" for t, pub in pubs.items()),
        "schema": "id LONG, p STRING",
        "sink": sink.address,
        "checkpoint": str(tmp_path / "checkpoint"),
        "options": {"token": token, "maxRecordsPerTrigger": 2000},
    }
    driver = Driver(cluster, query, tmp_path)
    p: subprocess.Popen | None = None
    killed = {}
    phases = {}

    def phase(name: str) -> None:
        phases[name] = round(time.monotonic() - t0)

    try:
        p = driver.start()
        _wait_more(seen, p, driver, 1, "every partition to deliver")
        phase("delivering")
        killed["executor"] = _kill_an_executor_mid_fetch(cluster, pubs["p0"], seen)
        phase("executor killed")
        _wait_more(seen, p, driver, 500, "every partition to deliver 500 more rows after the executor kill")
        os.killpg(p.pid, signal.SIGKILL)  # mid-stream: the links and the planned ranges are cut
        p.wait(30)
        killed["driver"] = _delivered(seen)
        phase("driver killed")

        stop_file = tmp_path / "stop"
        p = driver.start(stop_file)
        _wait_more(seen, p, driver, 500, "the restarted driver to deliver 500 more rows from every partition")
        phase("delivering again")
        stop_file.write_text("stop")
        assert p.wait(180) == 0, driver.tail()
        phase("stopped")
        figures = {t: _check_partition(pubs[t], seen.by_partition.get(t, [])) for t in TAGS}
    finally:
        if p is not None and p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(30)
        sink.stop()
        for pub in pubs.values():
            pub.stop()
    print(f"\nkilled at (rows delivered) {killed}; per partition {figures}; seconds at {phases}")
