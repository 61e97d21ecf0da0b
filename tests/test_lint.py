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
