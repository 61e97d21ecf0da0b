"""The connection's signal thread (:class:`rs_spark.net.protocol.worker.SerialExecutor`): a task's error
is reported and the next task runs; a fatal one (SystemExit, KeyboardInterrupt) is not reported
as the task's error but ends its thread, and a new thread runs what was queued behind it."""

from __future__ import annotations

import logging
import threading

import pytest

from rs_spark.net.protocol.worker import SerialExecutor

pytestmark = pytest.mark.timeout(30)


def test_task_error_is_reported_and_the_next_task_runs(caplog):
    ex = SerialExecutor("rs-net-signals test")
    ran = threading.Event()
    try:
        with caplog.at_level(logging.ERROR, logger="rs_spark.streams"):
            ex.submit(lambda: 1 / 0)
            ex.submit(ran.set)
            assert ran.wait(10)
        assert "signal thread raised" in caplog.text and "ZeroDivisionError" in caplog.text
    finally:
        ex.stop()


@pytest.mark.parametrize("fatal", [SystemExit(3), KeyboardInterrupt()])
def test_fatal_error_ends_its_thread_unreported_and_a_new_thread_runs_the_rest(caplog, monkeypatch, fatal):
    escaped: list[tuple[type, threading.Thread | None]] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: escaped.append((args.exc_type, args.thread)))
    ex = SerialExecutor("rs-net-signals test")
    gate = threading.Event()
    ran_on: list[threading.Thread] = []
    done = threading.Event()

    def fail() -> None:
        gate.wait(10)  # the next task is queued behind this one before it fails
        ran_on.append(threading.current_thread())
        raise fatal

    def after() -> None:
        ran_on.append(threading.current_thread())
        done.set()

    try:
        with caplog.at_level(logging.ERROR, logger="rs_spark.streams"):
            ex.submit(fail)
            ex.submit(after)
            gate.set()
            assert done.wait(10), "the task queued behind the fatal one never ran"
        first, second = ran_on
        first.join(10)  # its excepthook runs before it ends
        assert escaped == [(type(fatal), first)], "the fatal error did not end the thread that ran the task"
        assert second is not first and second is not threading.current_thread()
        assert second.name == "rs-net-signals test"
        assert "signal thread raised" not in caplog.text
    finally:
        ex.stop()
