"""The code is lint-clean and formatted (ruff: pycodestyle, pyflakes, bugbear, import order, as
configured in pyproject.toml): the package, its tests and its benchmarks. The package is also
type-clean (mypy, as configured): it ships py.typed, so its users' type checkers read these
annotations."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINTED = ("rs_spark", "tests", "benchmarks")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing_in_the_package_tests_and_benchmarks():
    r = _run("ruff", "check", "--no-cache", *LINTED)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_package_tests_and_benchmarks_are_formatted():
    r = _run("ruff", "format", "--check", "--no-cache", *LINTED)
    assert r.returncode == 0, f"run `ruff format {' '.join(LINTED)}`:\n{r.stdout}{r.stderr}"


def test_mypy_finds_nothing_in_the_package():
    r = _run("mypy", "--no-incremental")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_checks_the_typed_usage_of_the_public_entry_points():
    r = _run("mypy", "--no-incremental", os.path.join("tests", "typing", "usage.py"))
    assert r.returncode == 0, r.stdout + r.stderr


_MISUSE = """\
import rs_spark
from pyspark.sql import SparkSession
from rs_spark import streams as rs


def misuse(spark: SparkSession) -> None:
    rs_spark.read_stream(spark, rs.range_(3), options={"maxRecordsPerTrigger": [1]})
    rs_spark.write_stream(spark, "tcp://127.0.0.1:1/x")
    rs_spark.read_stream(spark, rs.range_(3), bind=7878)
    rs_spark.serve_sink(rs.range_(3))
"""


def test_mypy_rejects_a_misuse_of_the_public_entry_points(tmp_path):
    """The usage check can fail: wrong option values, a session for a DataFrame, a port for an
    address and a Publisher for a Subscriber are each an error on their line."""
    snippet = tmp_path / "misuse.py"
    snippet.write_text(_MISUSE)
    r = _run("mypy", "--no-incremental", str(snippet))
    assert r.returncode == 1, r.stdout + r.stderr
    lines = {int(line.split(":")[1]) for line in r.stdout.splitlines() if ": error:" in line}
    assert lines == {7, 8, 9, 10}, r.stdout
