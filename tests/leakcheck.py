"""A pytest plugin: the run fails if a process the tests started outlives them.

At the start of the session every process the tests start inherits a fresh marker in its
environment (``RS_SPARK_TEST_SESSION``): Spark's JVM, its Python workers and reader processes,
endpoints in subprocesses, JVM publishers. At the end (after every fixture is torn down and this
process's own Spark JVM is shut down) any process still carrying the marker gets a grace period to
exit; those left are named with what they listen on, killed, and the session fails. Only this
session's processes are looked at, so concurrent runs on the same machine do not interfere.
"""

from __future__ import annotations

import os
import signal
import time
import uuid

import pytest

MARKER = "RS_SPARK_TEST_SESSION"
GRACE_S = float(os.environ.get("RS_SPARK_LEAK_GRACE_S", "30"))


def pytest_configure(config):
    os.environ[MARKER] = uuid.uuid4().hex  # overrides one inherited from an outer test run


def _marked(token):
    needle = f"{MARKER}={token}".encode()
    me = os.getpid()
    for pid in (int(d) for d in os.listdir("/proc") if d.isdigit()):
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue  # exited; its parent has not reaped it yet
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        yield pid


def _listening_inodes():
    inodes = {}
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/net/{table}") as f:
                rows = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for row in rows:
            cols = row.split()
            if cols[3] == "0A":  # LISTEN
                port = int(cols[1].rsplit(":", 1)[1], 16)
                inodes[cols[9]] = port
    return inodes


def _describe(pid, listening):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = "?"
    ports = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in listening:
                ports.add(listening[link[8:-1]])
    except OSError:
        pass
    where = f", listening on port(s) {sorted(ports)}" if ports else ""
    return f"pid {pid}: {cmd[:300]}{where}"


def _shut_down_own_spark_jvm():
    """pyspark's JVM exits only when this process does (EOF on its stdin): end it now."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return
    gateway = SparkContext._gateway
    if gateway is None:
        return
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    except Exception:  # already closed
        pass
    SparkContext._gateway = None
    SparkContext._jvm = None
    if proc is not None:
        proc.stdin.close()  # the JVM's own EOF watch ends it
        try:
            proc.wait(GRACE_S)
        except Exception:
            proc.kill()


def _stop_own_resource_tracker():
    """multiprocessing's spawn context starts a resource tracker that exits only with this process:
    stop it now (a private method, but the stdlib's own way to end it) so it is not reported."""
    from multiprocessing import resource_tracker

    stop = getattr(resource_tracker._resource_tracker, "_stop", None)
    if stop is not None:
        stop()


def leftovers(token, grace_s):
    """The marked processes still running after up to ``grace_s`` (polled: no event says a process
    of another tree exited). Unlike tests/waits.wait_until it returns what is left instead of failing."""
    deadline = time.monotonic() + grace_s
    while True:
        pids = list(_marked(token))
        if not pids or time.monotonic() > deadline:
            return pids
        time.sleep(0.2)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    token = os.environ.get(MARKER)
    if not token:
        return
    _shut_down_own_spark_jvm()
    _stop_own_resource_tracker()
    pids = leftovers(token, GRACE_S)
    if not pids:
        return
    listening = _listening_inodes()
    lines = [_describe(pid, listening) for pid in pids]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    text = (
        f"leak check: {len(pids)} process(es) started by the tests outlived them by {GRACE_S:g} s "
        "(killed now):\n  " + "\n  ".join(lines)
    )
    if reporter is not None:
        reporter.write_line(text, red=True)
    else:
        print(text)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
