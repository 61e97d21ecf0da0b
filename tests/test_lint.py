"""rs_spark/ is lint-clean (ruff: pycodestyle, pyflakes, bugbear, import order) and type-clean
(mypy, as configured in pyproject.toml): the package ships py.typed, so its users' type checkers
read these annotations."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing_in_the_package():
    r = _run("ruff", "check", "--no-cache", "rs_spark")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_finds_nothing_in_the_package():
    r = _run("mypy", "--no-incremental")
    assert r.returncode == 0, r.stdout + r.stderr
