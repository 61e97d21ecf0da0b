"""The spark-submit example on a real Spark standalone cluster on this machine.

A master and two workers are started from pyspark's own ``spark-class`` (conftest.py); executors run in
their own JVMs and Python workers, and read micro-batches from the replay log. This is the
flow docker/compose.yaml runs in containers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ..subscribers import Recorder
from ..waits import wait_until
from .standalone import ROOT, descends_from, pids

pytestmark = pytest.mark.slow


def test_spark_submit_example_pipeline_on_a_standalone_cluster(cluster):
    url, env, base = cluster.url, cluster.env, cluster.base
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
        "12000",
        "--max-records-per-trigger",
        "4000",
        "--partitions",
        "2",
    ]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=str(base))
    tail = (r.stdout + r.stderr)[-4000:]
    assert r.returncode == 0, tail
    assert "rs_spark pipeline: 12000 readings (12000 distinct)" in r.stdout, tail
    m = re.search(r"Subscriber received (\d+) hot readings \((\d+) distinct; Parquet has (\d+)", r.stdout)
    assert m and int(m.group(1)) == int(m.group(2)) == int(m.group(3)) > 0, tail
    # executors in separate JVMs ran the tasks
    apps = list((base / "work0").glob("app-*")) + list((base / "work1").glob("app-*"))
    assert apps, "no executor ran on the workers"
    # the replay log was truncated as batches committed
    assert not [p for p in os.listdir(log) if p.endswith(".arrow")][:-1]


def test_killing_an_executor_jvm_and_a_python_worker_mid_batch_loses_and_duplicates_nothing(cluster):
    """Tasks retry on the surviving executors; the sink hub sees every record once, in order."""
    import signal

    from rs_spark.delivery import serve_sink

    url, env, base = cluster.url, cluster.env, cluster.base
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
        executors = cluster.newest_app_executors()  # this query's, not another test run's on the machine
        assert executors, "no executor JVM found"
        os.kill(executors[0], signal.SIGKILL)
        killed["executor"] = len(rec.items)
        wait_until(lambda: len(rec.items) >= 4000 or p.poll() is not None, "4000 rows delivered", 180)
        # Only an executor's Python worker: the driver's own Python processes (the stream reader,
        # the sink's commit) are not retried by Spark; killing them fails the query by design.
        executors = set(cluster.executors())
        workers = [
            pid
            for pid in pids("pyspark.daemon") + pids("pyspark/daemon.py")
            if pid != os.getpid() and descends_from(pid, executors)
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
