"""The suite's leak check itself: a run whose test leaves a process behind fails, naming it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_LEAKY = """
import socket
import subprocess
import sys

def test_starts_a_listening_child_and_forgets_it():
    subprocess.Popen([sys.executable, "-c",
                      "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
                      "print(s.getsockname()[1], flush=True); time.sleep(600)"], stdout=subprocess.PIPE)
"""

_TIDY = """
import subprocess
import sys

def test_starts_a_child_and_waits_for_it():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
"""


def _pytest(tmp_path, source):
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(source))
    env = dict(os.environ, PYTHONPATH=ROOT, RS_SPARK_LEAK_GRACE_S="1")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.leakcheck",
            str(tmp_path / "test_inner.py"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=str(tmp_path),
    )


def test_a_process_that_outlives_its_test_fails_the_run_and_is_named(tmp_path):
    r = _pytest(tmp_path, _LEAKY)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1 passed" in r.stdout  # the test itself passed: the session check failed the run
    assert "leak check: 1 process(es) started by the tests outlived them" in r.stdout
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("pid "))
    assert "time.sleep(600)" in line and "listening on port(s) [" in line


def test_a_run_that_leaves_nothing_passes(tmp_path):
    r = _pytest(tmp_path, _TIDY)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "leak check" not in r.stdout
