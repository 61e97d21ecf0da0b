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


def test_import_linter_contracts_hold():
    """docs/architecture.md's layers, pyspark only in rs_spark.spark (and the programs above it), and
    no module inside the package importing its root: the contracts in pyproject.toml."""
    r = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "lint-imports"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_import_linter_contracts_catch_an_upward_import(tmp_path):
    """The contracts can fail: a copy of the package where the core imports the Spark layer, the
    delivery layer imports pyspark, the network layer imports the package root and the RSocket
    protocol imports the zero-loss room breaks all four."""
    import shutil

    shutil.copytree(os.path.join(ROOT, "rs_spark"), tmp_path / "rs_spark", ignore=shutil.ignore_patterns("jars"))
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), tmp_path / "pyproject.toml")
    (tmp_path / "rs_spark" / "streams" / "upward.py").write_text("import rs_spark.spark.session\n")
    (tmp_path / "rs_spark" / "delivery" / "spark_rows.py").write_text("import pyspark.sql\n")
    (tmp_path / "rs_spark" / "net" / "root.py").write_text("from rs_spark import read_stream\n")
    (tmp_path / "rs_spark" / "net" / "protocol" / "keeps.py").write_text("from ..zero_loss import retention\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    r = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "lint-imports"), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "Contracts: 0 kept, 4 broken." in out, out
    assert "rs_spark.streams.upward -> rs_spark.spark.session" in out, out
    assert "rs_spark.delivery.spark_rows -> pyspark" in out, out
    assert "rs_spark.net.root -> rs_spark" in out, out
    assert "rs_spark.net.protocol.keeps -> rs_spark.net.zero_loss.retention" in out, out


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
