"""Spark ends the source's reader process with SIGTERM, often more than once: it must exit within a
bound, having cancelled its subscription exactly once, whenever the signals arrive."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
import uuid

import pytest

from ..waits import wait_until
from .publishers import SCHEMA
from .queries import wait_for_rows

EXIT_BOUND_S = 30.0  # stop() waits up to 10 s for the publisher to accept cancel


def _events(path):
    try:
        with open(path) as f:
            return [line.split() for line in f if line.strip()]
    except FileNotFoundError:
        return []


def _alive(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            state = next(line for line in f if line.startswith("State:"))
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "Z" not in state.split()[1]  # a zombie has exited; only its parent has not reaped it


def _start(spark, events):
    df = (
        spark.readStream.format("reactive")
        .schema(SCHEMA)
        .option("publisher", "tests.spark.publishers:cancel_recording")
        .option("publisher.events", events)
        .option("maxRecordsPerTrigger", "200")
        .load()
    )
    return (
        df.writeStream.format("noop")
        .queryName("q_" + uuid.uuid4().hex[:8])
        .trigger(processingTime="50 milliseconds")
        .start()
    )


def _reader_pid(events):
    wait_until(lambda: any(e[0] == "created" for e in _events(events)), "the reader to create its publisher", 120)
    return int(next(e[1] for e in _events(events) if e[0] == "created"))


def _sigterm(pid, times):
    for _ in range(times):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return


def _assert_exited_after_one_cancel(pid, events):
    wait_until(lambda: not _alive(pid), f"reader process {pid} to exit after SIGTERM", EXIT_BOUND_S)
    mine = [kind for kind, p in _events(events) if int(p) == pid]
    assert mine.count("cancelled") == mine.count("subscribed") <= 1, mine


def _stop_quietly(q):
    try:
        q.stop()
    except Exception:  # the query may fail: its reader process was killed under it, as the test meant
        pass


@pytest.mark.parametrize("times", [2, 3])
def test_repeated_sigterm_during_micro_batches_exits_once_cancelled(spark, tmp_path, times):
    events = str(tmp_path / "events")
    q = _start(spark, events)
    try:
        pid = _reader_pid(events)
        wait_for_rows(q, batches=2, rows=400)
        _sigterm(pid, times)
        _assert_exited_after_one_cancel(pid, events)
        assert ["cancelled", str(pid)] in _events(events)  # it was subscribed, so it must have cancelled
    finally:
        _stop_quietly(q)


def test_sigterm_during_subscription_exits_and_cancels_at_most_once(spark, tmp_path):
    events = str(tmp_path / "events")
    q = _start(spark, events)
    try:
        pid = _reader_pid(events)  # the factory has just run: subscribe() is under way
        _sigterm(pid, 3)
        _assert_exited_after_one_cancel(pid, events)
    finally:
        _stop_quietly(q)


def test_sigterm_while_the_query_stops_exits_once_cancelled(spark, tmp_path):
    events = str(tmp_path / "events")
    q = _start(spark, events)
    pid = _reader_pid(events)
    wait_for_rows(q)
    stopper = threading.Thread(target=_stop_quietly, args=(q,))
    stopper.start()  # Spark calls the reader's stop() and then destroys the process: signals race both
    _sigterm(pid, 3)
    stopper.join(120)
    assert not stopper.is_alive(), "query.stop() did not return"
    _assert_exited_after_one_cancel(pid, events)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sigterm_bursts_at_random_points_exit_once_cancelled(spark, tmp_path, seed):
    rnd = random.Random(seed)
    events = str(tmp_path / "events")
    q = _start(spark, events)
    try:
        pid = _reader_pid(events)
        time.sleep(rnd.uniform(0.0, 1.5))  # not synchronisation: a random point in the reader's life to signal at
        for _ in range(rnd.randint(2, 3)):
            _sigterm(pid, 1)
            time.sleep(rnd.uniform(0.0, 0.02))  # not synchronisation: random gaps within the burst
        _assert_exited_after_one_cancel(pid, events)
    finally:
        _stop_quietly(q)
