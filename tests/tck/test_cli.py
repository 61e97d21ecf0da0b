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
    assert "PASS   required   3.9" in r.stdout and "SKIP   optional   1.4" in r.stdout  # no --failed publisher
    # the untested rules are listed once, after the tests, not run as skips
    assert "UNTESTED 1.6" in r.stdout and "SKIP   untested" not in r.stdout
    assert "0 failed, 2 skipped, 7 rules untested" in r.stdout


def one_shot(elements):
    """A factory for the CLI test: a one-shot iterator serves one subscriber (optional rule 1.11)."""
    from rs_spark import streams as rs

    return rs.from_iterable(iter(range(elements)))


def test_cli_optional_test_fails_unless_declared_not_implemented():
    r = _run("tests.tck.test_cli:one_shot", "--skip-stochastic")
    rows = [ln for ln in r.stdout.splitlines() if ln.split()[1:3] == ["optional", "1.11"]]
    assert len(rows) == 5 and all(ln.startswith("FAIL") for ln in rows), r.stdout
    assert r.returncode == 0, r.stderr  # an optional rule: the publisher still conforms
    declared = _run("tests.tck.test_cli:one_shot", "--skip-stochastic", "--not-implemented", "1.11")
    rows = [ln for ln in declared.stdout.splitlines() if ln.split()[1:3] == ["optional", "1.11"]]
    assert len(rows) == 5 and all(ln.startswith("SKIP") for ln in rows), declared.stdout
    assert all("does NOT implement this OPTIONAL" in ln for ln in rows)


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
from rs_spark.tck import PublisherVerification, run, untested_rules

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
print(untested_rules(V)[0].rule, untested_rules(V)[0].why)
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
    assert failed == 0 and skipped == 5, (
        r.stdout
    )  # stochastic, no failed publisher (2), more than 10 elements (3.12, 3.17)
    assert untested.startswith("1.6 what the publisher considers cancelled")
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
    assert "PASS   required   3.9" in r.stdout and "UNTESTED 1.6" in r.stdout and "0 failed" in r.stdout
    assert "pytest" not in r.stderr


_SUBSCRIBER_AND_PROCESSOR_WITHOUT_PYTEST = """
from rs_spark import streams
from rs_spark.streams.subscribers import BlockingIterator
from rs_spark.tck import IdentityProcessorVerification, SubscriberBlackboxVerification, Timeouts, run, untested_rules

FAST = Timeouts(default=0.5, no_signals=0.03, poll=0.01, gc=0.5)

class Blackbox(SubscriberBlackboxVerification):
    timeouts = FAST
    def create_subscriber(self):
        return BlockingIterator(prefetch=8)

class Identity(IdentityProcessorVerification):
    timeouts = FAST
    skips = {
        "1.3": "turned off",
        "1.11": "one subscriber",
        "test_required_spec104_must_call_on_error_on_all_its_subscribers_if_it_encounters_a_non_recoverable_error": "1",
        "test_required_must_request_from_upstream_for_elements_that_have_been_requested_long_ago": "one subscriber",
    }
    def create_identity_processor(self, buffer_size):
        return streams.map(lambda x: x)
    def skip_stochastic_tests(self):
        return True

for v in (Blackbox(), Identity()):
    results = run(v)
    counts = {r: sum(1 for res, _ in results.values() if res == r) for r in ("pass", "fail", "skip")}
    print(type(v).__name__, counts["pass"], counts["fail"], counts["skip"], len(untested_rules(v)))
"""


def test_subscriber_and_processor_verifications_run_without_pytest_importable():
    r = _python(_NO_PYTEST + _SUBSCRIBER_AND_PROCESSOR_WITHOUT_PYTEST)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert list(map(int, lines["Blackbox"].split())) == [11, 0, 0, 15], r.stdout  # 15 untested rules: no tests
    passed, failed, skipped, untested = map(int, lines["Identity"].split())
    assert (failed, skipped, untested) == (0, 8, 20) and passed == 40, r.stdout  # 1.11 and 2 subscribers skip


_UNDER_UNITTEST = """
import unittest
from rs_spark import streams
from rs_spark.tck import PublisherVerification

class V(PublisherVerification):
    def create_publisher(self, elements):
        return streams.range_(elements)

class Case(unittest.TestCase):
    def test_without_failed_publisher(self):
        V().test_optional_spec104_must_signal_on_error_when_fails()

unittest.main(argv=["x", "-v"])
"""


def test_tck_skip_is_reported_as_a_skip_by_unittest_without_pytest_importable():
    r = _python(_NO_PYTEST + _UNDER_UNITTEST)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "skipped 'create_failed_publisher() returned None" in r.stderr and "OK (skipped=1)" in r.stderr
