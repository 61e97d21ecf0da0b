"""python -m rs_spark.tck on a conformant and on a broken publisher factory, as a real subprocess."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "rs_spark.tck", *args, "--timeout-ms", "300",
                           "--no-signals-timeout-ms", "50", "--gc-timeout-ms", "300"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)


def test_cli_conformant_factory_exits_zero_with_a_rule_table():
    r = _run("rs_spark.streams:range_")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS   required   3.9" in r.stdout and "SKIP   untested" in r.stdout
    assert "0 failed" in r.stdout


def test_cli_broken_factory_exits_non_zero_naming_the_rule():
    r = _run("tests.tck.test_selftest_publishers:overshooting")
    assert r.returncode == 1
    line = next(ln for ln in r.stdout.splitlines() if "spec101" in ln)
    assert line.startswith("FAIL") and "1.1" in line
    assert "does not conform" in r.stderr
