"""python -m rs_spark.tck on a conformant and on a broken publisher factory, as a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "rs_spark.tck",
            *args,
            "--timeout-ms",
            "300",
            "--no-signals-timeout-ms",
            "50",
            "--gc-timeout-ms",
            "300",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )


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
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "rs_spark.tck",
            "rs_spark.streams:range_",
            "--skip-stochastic",
            "--failed",
            "tests.tck.test_cli:failed_publisher",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS   optional   1.4" in r.stdout
    assert "SKIP   stochastic 1.3" in r.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "rs_spark.tck", "no_colon_here"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )
    assert bad.returncode != 0 and "package.module:factory" in bad.stderr


def failed_publisher():
    from rs_spark import streams as rs

    return rs.error(RuntimeError("failed publisher"))


_WITHOUT_PYTEST = """
import sys
sys.modules["pytest"] = None  # any `import pytest` now raises ImportError
from rs_spark import streams
from rs_spark.tck import PublisherVerification, run

class V(PublisherVerification):
    default_timeout_ms = 300
    no_signals_timeout_ms = 30
    def create_publisher(self, elements):
        return streams.range_(elements)
    def max_elements_from_publisher(self):
        return 10  # below what the spec317 tests need: they skip for this reason
    def skip_stochastic_tests(self):
        return True

results = run(V())
skipped = {name: why for name, (res, why) in results.items() if res == "skip"}
failed = {name: why for name, (res, why) in results.items() if res == "fail"}
print(len(skipped), len(failed))
print(skipped["test_untested_spec106_must_consider_subscription_cancelled_after_on_error_or_on_complete_has_been_called"])
print(skipped["test_stochastic_spec103_must_signal_on_methods_sequentially"])
"""


def test_tck_skips_work_without_pytest_installed():
    """The kit's skips are its own (a unittest.SkipTest), so `run` works where pytest cannot be imported."""
    r = subprocess.run(
        [sys.executable, "-c", _WITHOUT_PYTEST],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=ROOT),
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    counts, untested, stochastic = r.stdout.splitlines()
    skipped, failed = map(int, counts.split())
    assert failed == 0 and skipped >= 8, r.stdout
    assert untested.startswith("untested: rule 1.6")
    assert stochastic.startswith("stochastic tests are turned off")


_NO_PYTEST = "import sys; sys.modules['pytest'] = None  # any `import pytest` now raises ImportError\n"


def _python(code, *args):
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=ROOT),
        cwd=ROOT,
    )


def test_cli_runs_a_verification_without_pytest_importable():
    r = _python(
        _NO_PYTEST + "import runpy; runpy.run_module('rs_spark.tck', run_name='__main__')",
        "rs_spark.streams:range_",
        "--skip-stochastic",
        "--timeout-ms",
        "300",
        "--no-signals-timeout-ms",
        "30",
        "--gc-timeout-ms",
        "300",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS   required   3.9" in r.stdout and "SKIP   untested" in r.stdout and "0 failed" in r.stdout
    assert "pytest" not in r.stderr


_SUBSCRIBER_AND_PROCESSOR_WITHOUT_PYTEST = """
from rs_spark import streams
from rs_spark.streams.subscribers import BlockingIterator
from rs_spark.tck import IdentityProcessorVerification, SubscriberBlackboxVerification, Timeouts, run

FAST = Timeouts(default=0.5, no_signals=0.03, poll=0.01, gc=0.5)

class Blackbox(SubscriberBlackboxVerification):
    timeouts = FAST
    def create_subscriber(self):
        return BlockingIterator(prefetch=8)

class Identity(IdentityProcessorVerification):
    timeouts = FAST
    def create_identity_processor(self, buffer_size):
        return streams.map(lambda x: x)
    def skip_stochastic_tests(self):
        return True

for v in (Blackbox(), Identity()):
    results = run(v)
    counts = {r: sum(1 for res, _ in results.values() if res == r) for r in ("pass", "fail", "skip")}
    print(type(v).__name__, counts["pass"], counts["fail"], counts["skip"])
"""


def test_subscriber_and_processor_verifications_run_without_pytest_importable():
    r = _python(_NO_PYTEST + _SUBSCRIBER_AND_PROCESSOR_WITHOUT_PYTEST)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    for name in ("Blackbox", "Identity"):
        passed, failed, skipped = map(int, lines[name].split())
        assert failed == 0 and passed > 0 and skipped > 0, r.stdout  # untested rules skip, with TckSkipped


_UNDER_UNITTEST = """
import unittest
from rs_spark import streams
from rs_spark.tck import PublisherVerification

class V(PublisherVerification):
    def create_publisher(self, elements):
        return streams.range_(elements)

class Case(unittest.TestCase):
    def test_untested_rule(self):
        V().test_untested_spec106_must_consider_subscription_cancelled_after_on_error_or_on_complete_has_been_called()

unittest.main(argv=["x", "-v"])
"""


def test_tck_skip_is_reported_as_a_skip_by_unittest_without_pytest_importable():
    r = _python(_NO_PYTEST + _UNDER_UNITTEST)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "skipped 'untested: rule 1.6" in r.stderr and "OK (skipped=1)" in r.stderr
