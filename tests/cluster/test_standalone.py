"""The spark-submit example on a real Spark standalone cluster on this machine.

A master and two workers are started from pyspark's own ``spark-class``; executors run in
their own JVMs and Python workers, and read micro-batches from the replay log. This is the
flow docker/compose.yaml runs in containers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ..ports import free_port, listening
from ..subscribers import Recorder
from ..waits import wait_until

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


def _wait_port(port: int, proc: subprocess.Popen, what: str, log: os.PathLike) -> None:
    wait_until(lambda: listening(port, proc, what, log), f"{what} to listen on port {port}", 60, interval=0.2)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    home = _spark_home()
    base = tmp_path_factory.mktemp("cluster")
    env = dict(
        os.environ,
        SPARK_HOME=home,
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOG_DIR=str(base / "logs"),
        SPARK_WORKER_DIR=str(base / "work"),
    )
    spark_class = os.path.join(home, "bin", "spark-class")
    port, ui = free_port(), free_port()
    logs = []
    procs = []

    def start(args, name):
        log = open(base / f"{name}.log", "w")
        logs.append(log)
        p = subprocess.Popen([spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT)
        procs.append(p)
        return p

    master = start(
        ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)],
        "master",
    )
    _wait_port(port, master, "the master", base / "master.log")
    url = f"spark://127.0.0.1:{port}"
    for i in range(2):
        wport = free_port()
        start(
            [
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--host",
                "127.0.0.1",
                "--port",
                str(wport),
                "--webui-port",
                str(free_port()),
                "--cores",
                "1",
                "--memory",
                "1g",
                "--work-dir",
                str(base / f"work{i}"),
            ],
            f"worker{i}",
        )
        _wait_port(wport, procs[-1], f"worker {i}", base / f"worker{i}.log")
    yield url, env, base
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
    for log in logs:
        log.close()


def test_spark_submit_example_pipeline_on_a_standalone_cluster(cluster):
    url, env, base = cluster
    import rs_spark.examples.pipeline as pipeline

    out, ckpt, log = base / "out", base / "ckpt", base / "replay"
    cmd = [
        os.path.join(env["SPARK_HOME"], "bin", "spark-submit"),
        "--master",
        url,
        "--conf",
        f"spark.pyspark.python={sys.executable}",
        "--conf",
        "spark.executor.memory=512m",
        "--conf",
        "spark.executor.cores=1",
        "--conf",
        "spark.ui.showConsoleProgress=false",
        pipeline.__file__,
        "--output",
        str(out),
        "--checkpoint",
        str(ckpt),
        "--log-path",
        str(log),
        "--total",
        "6000",
        "--max-records-per-trigger",
        "3000",  # two micro-batches: enough to show batches read from the replay log, and it truncated
        "--partitions",
        "2",
    ]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=str(base))
    tail = (r.stdout + r.stderr)[-4000:]
    assert r.returncode == 0, tail
    assert "rs_spark pipeline: 6000 readings (6000 distinct)" in r.stdout, tail
    m = re.search(r"Subscriber received (\d+) hot readings \((\d+) distinct; Parquet has (\d+)", r.stdout)
    assert m and int(m.group(1)) == int(m.group(2)) == int(m.group(3)) > 0, tail
    # executors in separate JVMs ran the tasks
    apps = list((base / "work0").glob("app-*")) + list((base / "work1").glob("app-*"))
    assert apps, "no executor ran on the workers"
    # the replay log was truncated as batches committed
    assert not [p for p in os.listdir(log) if p.endswith(".arrow")][:-1]


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _descends_from(pid: int, ancestors: set) -> bool:
    while pid > 1:
        pid = _parent(pid)
        if pid in ancestors:
            return True
    return False


def _pids(match: str) -> list:
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


def test_killing_an_executor_jvm_and_a_python_worker_mid_batch_loses_and_duplicates_nothing(cluster):
    """Tasks retry on the surviving executors; the sink hub sees every record once, in order."""
    import signal

    from rs_spark.delivery import serve_sink

    url, env, base = cluster
    rec = Recorder(batch=50, delay=0.001)  # slow: the kills land while micro-batches are being delivered
    total = 9000
    ep = serve_sink(rec)
    cmd = [
        sys.executable,
        os.path.join(ROOT, "tests", "reliability", "driver.py"),
        "--master",
        url,
        "--factory",
        "tests.spark.publishers:counter",
        "--count",
        str(total),
        "--sink",
        ep.address,
        "--checkpoint",
        str(base / "fck"),
        "--log",
        str(base / "flog"),
        "--available-now",
    ]
    denv = dict(env, PYTHONPATH=ROOT)
    p = subprocess.Popen(cmd, cwd=ROOT, env=denv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = {}
    try:
        wait_until(lambda: len(rec.items) >= 1000 or p.poll() is not None, "1000 rows delivered", 180)
        executors = _pids("CoarseGrainedExecutorBackend")
        assert executors, "no executor JVM found"
        os.kill(executors[0], signal.SIGKILL)
        killed["executor"] = len(rec.items)
        wait_until(lambda: len(rec.items) >= 4000 or p.poll() is not None, "4000 rows delivered", 180)
        # Only an executor's Python worker: the driver's own Python processes (the stream reader,
        # the sink's commit) are not retried by Spark; killing them fails the query by design.
        executors = set(_pids("CoarseGrainedExecutorBackend"))
        workers = [
            pid
            for pid in _pids("pyspark.daemon") + _pids("pyspark/daemon.py")
            if pid != os.getpid() and _descends_from(pid, executors)
        ]
        if workers:
            os.kill(max(workers), signal.SIGKILL)  # the newest: a forked worker more likely than the daemon
            killed["python worker"] = len(rec.items)
        out, err = p.communicate(timeout=400)
        assert p.returncode == 0, err[-4000:]
    finally:
        if p.poll() is None:
            p.kill()
        ep.stop()
    assert "executor" in killed
    ids = [row["id"] for row in rec.items]
    assert ids == list(range(total)), (
        f"{len(ids)} delivered, {len(set(ids))} distinct; first problem at "
        f"{next((i for i, x in enumerate(ids) if x != i), None)}"
    )
    print(f"\nkilled {killed} (rows delivered at the kill); {total} rows delivered exactly once, in order")
