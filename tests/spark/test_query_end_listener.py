"""The query-end listener is registered only while a run is watched, and never outlives the interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import rs_spark
from rs_spark.spark import register
from rs_spark.spark.internals import wait_listener_bus
from rs_spark.spark.sink.query_end import EndWorker, on_query_end, watched, worker

from ..subscribers import Recorder
from ..waits import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent(
    """
    import tempfile, threading
    import rs_spark
    from rs_spark import streams as rs
    from rs_spark.spark import local_session

    spark = local_session()
    orders = rs.range_(500).pipe(rs.map(lambda i: {"id": i, "amount": 1.5 * i}))
    df = rs_spark.read_stream(spark, orders, schema="id LONG, amount DOUBLE")

    class Printer:
        def __init__(self): self.done = threading.Event()
        def on_subscribe(self, s): self.s = s; s.request(2)
        def on_next(self, row): print(row); self.s.request(1)
        def on_error(self, error): print("query failed:", error); self.done.set()
        def on_complete(self): self.done.set()

    printer = Printer()
    query = rs_spark.write_stream(df.where("id < 5"), printer, checkpoint=tempfile.mkdtemp(),
                                  trigger={"availableNow": True})
    query.awaitTermination()
    assert printer.done.wait(30)
    print("SCRIPT DONE", flush=True)
    """
)


def test_a_plain_script_that_ends_right_after_its_subscriber_completed_exits_without_an_error(tmp_path):
    """The README's snippets in a fresh interpreter, no cleanup: on_complete runs inside the query-end
    callback, so the script's exit used to cut that callback off and Spark logged
    ``ERROR StreamingQueryListenerBus ... Py4JException``; the exit now waits for it and removes the listener."""
    script = tmp_path / "snippets.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    r = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path
    )
    assert r.returncode == 0 and "SCRIPT DONE" in r.stdout, r.stdout[-2000:] + r.stderr[-5000:]
    bad = [ln for ln in r.stderr.splitlines() if " ERROR " in ln or "Traceback" in ln or "Py4J" in ln]
    assert not bad, r.stderr[-5000:]


def test_the_listener_is_removed_once_no_run_is_watched(spark, tmp_path):
    session = spark.newSession()  # a session of its own: no other test's run is watched in it
    register(session)
    rec = Recorder()
    df = (
        session.readStream.format("reactive")
        .schema("id LONG, name STRING, price DOUBLE")
        .option("publisher", "tests.spark.publishers:counter")
        .option("publisher.count", "20")
        .load()
    )
    q = rs_spark.write_stream(df, rec, checkpoint=str(tmp_path / "ck"), trigger={"availableNow": True})
    assert watched(session).attached
    assert q.awaitTermination(120)
    assert rec.wait_done(60).completed
    wait_until(lambda: not watched(session).attached, "the query-end listener to be removed")


def test_query_end_callbacks_run_on_the_worker_not_on_spark_s_listener_bus_thread(spark, tmp_path):
    session = spark.newSession()
    threads: list[str] = []
    q = (
        session.readStream.format("rate")
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .start()
    )
    on_query_end(session, q, lambda error: threads.append(threading.current_thread().name))
    q.stop()
    # The bus has handed the terminated event to the listener, the worker has run what it got: no waiting on time.
    assert wait_listener_bus(session, 60_000)
    assert worker.flush(60)
    assert threads == ["rs-spark-query-end"]


def test_the_worker_runs_tasks_in_order_survives_a_failing_one_and_flush_waits_for_all():
    w = EndWorker(size=2)
    done: list[int] = []
    gate = threading.Event()
    w.submit(gate.wait)
    w.submit(lambda: 1 / 0)  # logged; the next task still runs
    w.submit(lambda: done.append(1))
    assert not w.flush(0.05)  # the gate holds the worker, closed until set below: cannot be flushed
    gate.set()
    w.submit(lambda: done.append(2))
    assert w.flush(30) and done == [1, 2]
