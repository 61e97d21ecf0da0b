"""jvm-shim/build: the interpreter it was given (from any directory, never another one), strict javac,
the product jar alone (`build jar OUT`), versioned and reproducible."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile

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


def _build_args(args, env, cwd=ROOT, script=BUILD):
    return subprocess.run(
        ["bash", str(script), *args], cwd=cwd, env=dict(os.environ, **env), capture_output=True, text=True, timeout=600
    )


def _spark_jars():
    import pyspark

    return os.path.join(os.path.dirname(pyspark.__file__), "jars")


def test_build_jar_makes_the_product_jar_alone_with_pyprojects_version_reproducibly(tmp_path):
    a = _build_args(["jar", str(tmp_path / "a.jar")], {"PYTHON": sys.executable})
    b = _build_args(["jar", "b.jar"], {"PYSPARK_JARS": _spark_jars()}, cwd=str(tmp_path))  # a relative OUT
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert (tmp_path / "a.jar").read_bytes() == (tmp_path / "b.jar").read_bytes()  # sorted entries, fixed dates
    declared = tomllib.loads(open(os.path.join(ROOT, "pyproject.toml")).read())["project"]["version"]
    with zipfile.ZipFile(tmp_path / "a.jar") as z:
        assert f"Implementation-Version: {declared}" in z.read("META-INF/MANIFEST.MF").decode()
        names = z.namelist()
    assert "rsspark/jvm/Shim.class" in names
    assert not [n for n in names if n.startswith(("rsspark/bench/", "rsspark/fixtures/"))]


def test_a_javac_warning_fails_the_build(tmp_path):
    shim = tmp_path / "jvm-shim"
    shutil.copytree(os.path.join(ROOT, "jvm-shim", "src", "main"), shim / "src" / "main")
    shutil.copy(BUILD, shim / "build")
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), tmp_path / "pyproject.toml")
    (shim / "src" / "main" / "java" / "rsspark" / "jvm" / "Raw.java").write_text(
        "package rsspark.jvm;\nclass Raw {\n    java.util.List<?> items = new java.util.ArrayList();\n}\n"
    )
    r = _build_args(["jar", str(tmp_path / "out.jar")], {"PYTHON": sys.executable}, script=shim / "build")
    assert r.returncode != 0 and not (tmp_path / "out.jar").exists()
    assert "warning: [rawtypes]" in r.stderr and "warnings found and -Werror specified" in r.stderr, r.stderr


def test_pyspark_jars_without_arrow_is_named_in_the_error(tmp_path):
    r = _build_args(["jar", str(tmp_path / "out.jar")], {"PYSPARK_JARS": str(tmp_path)})
    assert r.returncode == 1
    assert f"{tmp_path} has no arrow-vector-*.jar: it is not pyspark's jars directory" in r.stderr
    assert "Fix: point PYSPARK_JARS at <site-packages>/pyspark/jars" in r.stderr


def test_an_unknown_argument_prints_the_usage():
    r = _build_args(["tests"], {"PYTHON": sys.executable})
    assert r.returncode == 2
    assert "unknown argument 'tests'. Usage: bash jvm-shim/build [test | jar OUT.jar]" in r.stderr
