"""SigtermStop in a real process: the handler does no work, stop() runs once on a normal thread,
and a burst of signals while the main thread is inside an Event (as the reader's is) cannot deadlock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

from rs_spark.spark.source.sigterm import EXIT_STATUS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The main thread spins on the same Event that stop() sets, the way the reader's main thread can be
# inside Intake.cancel's Event.set when the next SIGTERM arrives: a handler that called stop() itself
# would re-enter Event.set and wait forever for the lock its own thread holds.
_CHILD = """
import sys, threading
from rs_spark.spark.source.sigterm import SigtermStop

wake = threading.Event()
calls = []

def stop():
    calls.append(threading.current_thread().name)
    wake.set()
    print("stop", len(calls), threading.current_thread().name, flush=True)

assert SigtermStop(stop).install()
print("ready", flush=True)
while True:
    wake.set()
    wake.clear()
"""


def _child():
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )


def _burst(proc, signals):
    assert proc.stdout.readline().strip() == "ready"
    for _ in range(signals):
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            break
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired as exc:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the process did not exit within 30 s of {signals} SIGTERMs (deadlock?)\n{err}") from exc
    return out, err


def test_one_sigterm_runs_stop_once_on_a_normal_thread_then_exits_as_sigterm_would():
    proc = _child()
    out, err = _burst(proc, 1)
    assert proc.returncode == EXIT_STATUS == 143, err
    assert out.splitlines() == ["stop 1 rs-reactive-sigterm"], out + err


def test_a_burst_of_sigterms_while_the_main_thread_is_inside_event_set_stops_once():
    for _ in range(5):  # each run lands the signals at other points of Event.set / clear
        proc = _child()
        out, err = _burst(proc, 50)
        assert proc.returncode == EXIT_STATUS, err
        assert out.splitlines() == ["stop 1 rs-reactive-sigterm"], out + err


def test_install_refuses_outside_the_main_thread_and_leaves_the_handler_alone():
    from rs_spark.spark.source.sigterm import SigtermStop

    before = signal.getsignal(signal.SIGTERM)
    result = []
    t = threading.Thread(target=lambda: result.append(SigtermStop(lambda: None).install()))
    t.start()
    t.join(10)
    assert result == [False]
    assert signal.getsignal(signal.SIGTERM) is before
