"""jvm-shim/build picks the interpreter it was given, from any directory, and never another one."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "jvm-shim", "build")


def _build(python, cwd):
    return subprocess.run(
        ["bash", BUILD], cwd=cwd, env=dict(os.environ, PYTHON=python), capture_output=True, text=True, timeout=600
    )


def test_a_relative_python_is_resolved_from_the_callers_directory(tmp_path):
    rel = os.path.relpath(sys.executable, str(tmp_path))
    r = _build(rel, str(tmp_path))
    assert r.returncode == 0, r.stderr


def test_a_python_without_pyspark_is_an_error_not_a_silent_fallback(tmp_path):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    r = _build(str(bare / "bin" / "python"), ROOT)
    assert r.returncode == 1
    assert f"cannot import pyspark with {bare / 'bin' / 'python'}" in r.stderr
    assert "Fix: pip install pyspark into that interpreter" in r.stderr


def test_a_python_that_does_not_exist_is_named_in_the_error():
    r = _build("no-such-python3", ROOT)
    assert r.returncode == 1
    assert "PYTHON=no-such-python3 is not an executable interpreter" in r.stderr
