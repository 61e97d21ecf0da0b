"""A real Spark standalone cluster on this machine (a master and workers started from pyspark's own
``spark-class``), and how to find its processes: shared by the cluster tests and
``benchmarks/source.py --cluster``."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..ports import free_port, listening
from ..waits import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


def wait_port(port: int, proc: subprocess.Popen, what: str, log: Path) -> None:
    """Wait until ``proc`` listens on ``port`` (a connect that succeeds), failing with its log if it exits."""
    wait_until(lambda: listening(port, proc, what, log), f"{what} to listen on port {port}", 60, interval=0.3)


@dataclass
class Cluster:
    """A running master and workers (``url`` for ``--master``), their files under ``base``."""

    url: str
    env: dict[str, str]
    base: Path
    procs: list[subprocess.Popen] = field(default_factory=list)
    logs: list[IO[str]] = field(default_factory=list)

    def executors(self) -> dict[int, str]:
        """This cluster's live executor JVMs: pid -> the application they run (workers start each
        executor in ``<work dir>/<app id>/<executor id>``; other clusters on the machine are skipped)."""
        out = {}
        for pid in pids("CoarseGrainedExecutorBackend"):
            try:
                cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
            except OSError:
                continue
            if self.base.resolve() in cwd.parents:
                out[pid] = cwd.parent.name
        return out

    def newest_app_executors(self) -> list[int]:
        """The live executor JVMs of the newest application (app ids sort by start time), not those
        of an application that ended and whose executors are still being shut down."""
        running = self.executors()
        newest = max(running.values(), default=None)
        return sorted(pid for pid, app in running.items() if app == newest)

    def executor_connected_to(self, port: int) -> int | None:
        """The executor JVM of the newest application whose process tree (its Python workers) holds
        an established connection to 127.0.0.1:``port`` (None: none does)."""
        executors = set(self.newest_app_executors())
        for pid in holders(connections_to(port)):
            if pid in executors:
                return pid
            for e in executors:
                if descends_from(pid, {e}):
                    return e
        return None

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
        for log in self.logs:
            log.close()


def start_cluster(base: Path, workers: int = 2) -> Cluster:
    """A master and ``workers`` workers of one core and 1 GiB each, on 127.0.0.1."""
    home = spark_home()
    env = dict(
        os.environ,
        SPARK_HOME=home,
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOG_DIR=str(base / "logs"),
        SPARK_WORKER_DIR=str(base / "work"),
        # Executors' Python workers import rs_spark (and the tests) from this tree.
        PYTHONPATH=os.pathsep.join(p for p in [ROOT, os.environ.get("PYTHONPATH")] if p),
    )
    spark_class = os.path.join(home, "bin", "spark-class")
    port = free_port()
    cluster = Cluster(f"spark://127.0.0.1:{port}", env, base)

    def start(args: list[str], name: str) -> subprocess.Popen:
        log = open(base / f"{name}.log", "w")  # noqa: SIM115 - closed by Cluster.stop
        cluster.logs.append(log)
        p = subprocess.Popen([spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT)
        cluster.procs.append(p)
        return p

    try:
        master = start(
            ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port)]
            + ["--webui-port", str(free_port())],
            "master",
        )
        wait_port(port, master, "the master", base / "master.log")
        for i in range(workers):
            wport = free_port()
            worker = start(
                ["org.apache.spark.deploy.worker.Worker", cluster.url, "--host", "127.0.0.1", "--port", str(wport)]
                + ["--webui-port", str(free_port()), "--cores", "1", "--memory", "1g"]
                + ["--work-dir", str(base / f"work{i}")],
                f"worker{i}",
            )
            wait_port(wport, worker, f"worker {i}", base / f"worker{i}.log")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def parent_pid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def descends_from(pid: int, ancestors: set[int]) -> bool:
    while pid > 1:
        pid = parent_pid(pid)
        if pid in ancestors:
            return True
    return False


def pids(match: str) -> list[int]:
    """Processes whose command line contains ``match``."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            if match in cmd:
                out.append(int(d))
    return out


def connections_to(port: int) -> set[str]:
    """Socket inodes of established TCP connections to ``port`` on this machine."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if cols[3] == "01" and int(cols[2].rsplit(":", 1)[1], 16) == port:  # ESTABLISHED, remote port
                inodes.add(cols[9])
    return inodes


def holders(inodes: set[str]) -> list[int]:
    """Processes that hold a socket with one of ``inodes``."""
    out = []
    for d in (d for d in os.listdir("/proc") if d.isdigit()):
        try:
            fds = os.listdir(f"/proc/{d}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{d}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in inodes:
                out.append(int(d))
                break
    return out
