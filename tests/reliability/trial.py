"""A SIGKILL trial of the driver, shared by the one-kill test and the 20-kill reliability test.

The driver (tests/reliability/driver.py: one process, see Driver) runs three queries without a
replay log: one reads an endpoint served from this process (a publisher that cannot replay: the
endpoint keeps what it sent until Spark commits, and the restarted reader resumes the same stream),
one reads a replayable factory publisher (the restarted reader asks it again from the committed
position), one reads two such endpoints as partitions (executors fetch from them). Each writes into
a Subscriber served from this process with a durable ledger. The driver is killed with SIGKILL at
random points and restarted from its checkpoints; at the end it stops gracefully.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.delivery import serve_sink
from tests.reliability.publishers import lines
from tests.waits import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ContinuingCounter:
    """A Publisher of {"id": n} (and {"p": tag}) that cannot replay: each subscription continues
    after the last id emitted. It records its subscriptions and the positions it is told were committed."""

    def __init__(self, tag: str | None = None) -> None:
        self.tag = tag
        self.next = 0
        self.ranges: list[list[int]] = []  # [start, end) emitted per subscription
        self.commits: list[int] = []
        self._lock = threading.Lock()

    def subscribe(self, subscriber) -> None:
        with self._lock:
            start = self.next
            rng = [start, start]
            self.ranges.append(rng)

        def gen():
            i = start
            while True:
                with self._lock:
                    if rng is not self.ranges[-1]:
                        return  # a newer subscription took over the numbering
                    rng[1] = i + 1
                    self.next = i + 1
                yield {"id": i} if self.tag is None else {"id": i, "p": self.tag}
                i += 1

        rs.from_iterable(gen()).subscribe(subscriber)

    def on_commit(self, position: int) -> None:
        self.commits.append(position)


class Seen:
    """A Subscriber that takes everything and records the ids (by partition, when rows carry one)."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.by_partition: dict[str, list[int]] = {}
        self.done = threading.Event()

    def on_subscribe(self, s) -> None:
        s.request(2**62)

    def on_next(self, row) -> None:
        self.ids.append(row["id"])
        if "p" in row:
            self.by_partition.setdefault(row["p"], []).append(row["id"])

    def on_error(self, e) -> None:
        self.done.set()

    def on_complete(self) -> None:
        self.done.set()


class Driver:
    """The driver process (tests/reliability/driver.py) running every query of a run, the way a
    notebook or a job runs several streaming queries in one driver: started, killed with SIGKILL
    (its JVM and Python workers with it) and restarted from the queries' checkpoints."""

    def __init__(self, queries: list[dict], stem: Path, stop_file: str | None) -> None:
        cmd = [sys.executable, os.path.join(ROOT, "tests", "reliability", "driver.py")]
        cmd += ["--queries", json.dumps(queries)] + (["--stop-file", stop_file] if stop_file else [])
        self.err = stem.with_name(f"{stem.name}.err")
        # stderr to a file: a pipe nobody reads while the driver runs could fill and block it
        with open(self.err, "w") as f:  # its own process group: its JVM and workers die with it
            self.proc = subprocess.Popen(
                cmd,
                cwd=ROOT,
                env=dict(os.environ, PYTHONPATH=ROOT),
                stdout=subprocess.PIPE,
                stderr=f,
                text=True,
                start_new_session=True,
            )

    def wait_started(self) -> None:
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "STARTED", self.stderr()

    def poll(self) -> int | None:
        """The driver's exit status (None while it runs)."""
        return self.proc.poll()

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def stderr(self) -> str:
        """What the driver wrote to stderr: causes first (Spark's stack traces are long), then the tail."""
        text = self.err.read_text(errors="replace")
        causes = [line for line in text.splitlines() if line.startswith("Caused by") or "Exception:" in line]
        return f"== {self.err.name}\n" + "\n".join(causes[-10:]) + "\n...\n" + text[-3000:]


@dataclass
class Trial:
    """The publishers, sinks and files of one trial; ``run`` kills and restarts the driver."""

    tmp: object
    counter: ContinuingCounter = field(default_factory=ContinuingCounter)
    shards: dict[str, ContinuingCounter] = field(
        default_factory=lambda: {t: ContinuingCounter(t) for t in ("pa", "pb")}
    )
    endpoint_seen: Seen = field(default_factory=Seen)
    factory_seen: Seen = field(default_factory=Seen)
    partitions_seen: Seen = field(default_factory=Seen)
    kills: list[float] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.source = net.serve(self.counter, name="counter")
        for tag, shard in self.shards.items():
            self.source.add_publisher(tag, shard)
        self.sinks = [
            serve_sink(self.endpoint_seen, ledger=str(self.tmp / "ledger-endpoint.json")),
            serve_sink(self.factory_seen, ledger=str(self.tmp / "ledger-factory.json")),
            serve_sink(self.partitions_seen, ledger=str(self.tmp / "ledger-partitions.json")),
        ]
        shards = ",".join(f"{tag}={self.source.address_of(tag)}" for tag in self.shards)
        self.marker = self.tmp / "subscriptions"
        self.commits = self.tmp / "commits"
        self.queries = [
            {"source": self.source.address, "sink": self.sinks[0].address, "checkpoint": str(self.tmp / "ck1")},
            {
                "factory": "tests.reliability.publishers:replayable_ids",
                "sink": self.sinks[1].address,
                "checkpoint": str(self.tmp / "ck2"),
                "options": {"publisher.marker": str(self.marker), "publisher.commits": str(self.commits)},
            },
            {
                "source": shards,
                "schema": "id LONG, p STRING",
                "sink": self.sinks[2].address,
                "checkpoint": str(self.tmp / "ck3"),
            },
        ]

    def _driver(self, stop_file: str | None = None) -> Driver:
        name = f"run-{len(self.reports)}{'-last' if stop_file else ''}"
        return Driver(self.queries, self.tmp / name, stop_file)

    def stream(self, endpoint: str = "counter") -> net.StreamStats | None:
        streams = [s for s in self.source.stats().streams if s.endpoint == endpoint]
        return streams[0] if streams else None

    def _taken(self) -> tuple[int, ...]:
        """How often each stream was taken up by a reader (opened or resumed), and the factory subscribed."""
        return (*(getattr(self.stream(e), "attaches", 0) for e in ("counter", *self.shards)), len(lines(self.marker)))

    def _wait_resumed(self, run: int, p: Driver, before: tuple[int, ...]) -> None:
        """Run ``run`` is reading every publisher (each stream taken up once more than ``before``)."""
        wait_until(
            lambda: p.poll() is not None or all(a > b for a, b in zip(self._taken(), before, strict=True)),
            what=f"run {run} to take up every publisher",
            timeout=120,
        )
        assert p.poll() is None, p.stderr()

    def kill(self, runs: int, seed: int) -> None:
        rng = random.Random(seed)
        for run in range(runs):
            before = self._taken()
            p = self._driver()
            p.wait_started()
            self._wait_resumed(run, p, before)
            if run % 2:  # every other run is killed once it has delivered: mid-stream, not only at start-up
                self._wait_delivering(p)
            delay = rng.uniform(0.0, 3.0)  # the kill point: mid-batch, mid-commit, mid-prefetch
            threading.Event().wait(delay)
            p.kill()
            self.reports.append(p.stderr())
            self.kills.append(round(delay, 1))

    def _wait_delivering(self, p: Driver) -> None:
        seen = (self.endpoint_seen, self.factory_seen, self.partitions_seen)
        before = [len(s.ids) for s in seen]
        wait_until(
            lambda: p.poll() is not None or all(len(s.ids) > b for s, b in zip(seen, before, strict=True)),
            what="the run to deliver from every query",
            timeout=120,
        )

    def finish(self, run: int) -> None:
        """A last run that resumes, delivers more, and stops gracefully."""
        stop_file = self.tmp / "stop"
        seen = (self.endpoint_seen, self.factory_seen, self.partitions_seen)
        before = [len(s.ids) for s in seen]
        taken = self._taken()
        p = self._driver(stop_file=str(stop_file))
        p.wait_started()
        self._wait_resumed(run, p, taken)
        wait_until(
            lambda: p.poll() is not None or all(len(s.ids) > b + 300 for s, b in zip(seen, before, strict=True)),
            what="the last run to deliver from every query",
            timeout=180,
        )
        stop_file.write_text("stop")
        code = p.wait(timeout=180)
        self.reports.append(p.stderr())
        assert code == 0, p.stderr()

    def _check_partitions(self) -> dict[str, int]:
        """Per partition: exactly once, in order, every emitted row delivered or still kept."""
        delivered = {}
        for tag, shard in self.shards.items():
            ids = self.partitions_seen.by_partition.get(tag, [])
            assert ids == list(range(len(ids))), f"partition {tag}: a duplicate, a hole or a reordering"
            assert len(shard.ranges) == 1, f"partition {tag} was subscribed again: {shard.ranges}"
            s = self.stream(tag)
            assert (s.first_position if s else 0) <= len(ids) <= shard.ranges[0][1], (tag, s, len(ids))
            delivered[tag] = len(ids)
        return delivered

    def close(self) -> None:
        self.source.stop()
        for s in self.sinks:
            s.stop()

    def check(self) -> dict:
        """Assert exactly once, in order, nothing lost; return the figures."""
        ep, fac = self.endpoint_seen.ids, self.factory_seen.ids
        assert ep and fac, "nothing was delivered"
        assert ep == list(range(len(ep))), "endpoint query: a duplicate, a hole or a reordering"
        assert fac == list(range(len(fac))), "factory query: a duplicate, a hole or a reordering"
        assert len(self.counter.ranges) == 1, f"the endpoint stream was subscribed again: {self.counter.ranges}"
        emitted = self.counter.ranges[0][1]
        s = self.stream()
        # Every row the publisher emitted reached the Subscriber or is still kept by the endpoint
        # (the tail the last run had prefetched and not committed: it waits for the next run).
        assert (s.first_position if s else emitted) <= len(ep) <= emitted, (s, len(ep), emitted)
        assert (s.end_position if s else emitted) == emitted
        assert self.source.stats().lost_records == 0
        # The publisher heard each commit once, in order, never past what was delivered.
        commits = self.counter.commits
        assert commits == sorted(set(commits)) and (not commits or commits[-1] <= len(ep)), commits
        factory_commits = lines(self.commits)
        assert factory_commits == sorted(factory_commits) and factory_commits[-1] <= len(fac)
        shards = self._check_partitions()
        return {
            "partitions delivered": shards,
            "kills": len(self.kills),
            "endpoint delivered": len(ep),
            "endpoint emitted": emitted,
            "factory delivered": len(fac),
            "lost": 0,
            "duplicated": 0,
            "resumes": getattr(s, "resumes", None),
            "resent": getattr(s, "resent_records", None),
            "factory subscriptions at": lines(self.marker),
        }
