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


def test_cli_reads_timeouts_from_the_environment_and_reports_a_bad_factory():
    env = dict(os.environ, PYTHONPATH=ROOT, RS_TCK_DEFAULT_TIMEOUT_MS="300", RS_TCK_NO_SIGNALS_TIMEOUT_MS="30")
    r = subprocess.run([sys.executable, "-m", "rs_spark.tck", "rs_spark.streams:range_", "--skip-stochastic",
                        "--failed", "tests.tck.test_cli:failed_publisher"],
                       capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS   optional   1.4" in r.stdout
    assert "SKIP   stochastic 1.3" in r.stdout
    bad = subprocess.run([sys.executable, "-m", "rs_spark.tck", "no_colon_here"],
                         capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert bad.returncode != 0 and "package.module:factory" in bad.stderr


def failed_publisher():
    from rs_spark import streams as rs
    return rs.error(RuntimeError("failed publisher"))
