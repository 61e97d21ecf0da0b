"""Installing rs_spark registers ``format("reactive")`` with a plain ``SparkSession``: Spark's
Python worker lists the path entries with ``pkgutil.iter_modules()`` and imports every
``pyspark_*`` module it finds (pyspark/sql/worker/lookup_data_sources.py). A module that only an
import hook knows (setuptools' default editable install of a flat layout) is never listed, and
the session fails with ``DATA_SOURCE_NOT_FOUND``; pyproject.toml's ``package-dir`` makes the
editable install a path entry instead.

Each run is a user's: no PYTHONPATH, run from an empty folder, the venv's bin/ first on PATH (an
activated venv, so Spark's workers run ``python3`` of that venv), no ``rs_spark`` helper called.
tests/test_wheel.py runs the same session from the wheel installed in its fresh venv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata

import pytest

from .test_wheel import FOREIGN, _link_dependencies, _run

pytestmark = pytest.mark.slow  # starts Spark twice, and pip once

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PLAIN_SESSION = """
import json, logging, pkgutil, tempfile
from pyspark.sql import SparkSession

listed = any(m.name == "pyspark_reactive" for m in pkgutil.iter_modules())
spark = SparkSession.builder.master("local[1]").appName("rs_spark-discovery").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
SCHEMA = "sensor STRING, ts TIMESTAMP, temperature DOUBLE, seq LONG"
update = None
try:
    df = (spark.read.format("reactive").schema(SCHEMA)
          .option("publisher", "rs_spark.examples.sensors:readings").option("publisher.total", 7).load())
    rows = df.count()
    # What such a session's user sees of format("reactive") in update mode (no session extension here): Spark's
    # refusal once the query runs, and, after rs_spark.spark.register, rs_spark's listener saying what to use.
    said = []
    class Keep(logging.Handler):
        def emit(self, record):
            said.append(record.getMessage())
    logging.getLogger("rs_spark.sink").addHandler(Keep())
    import rs_spark.spark
    from rs_spark.spark.internals import wait_listener_bus
    rs_spark.spark.register(spark)
    counts = (spark.readStream.format("reactive").schema(SCHEMA)
              .option("publisher", "rs_spark.examples.sensors:readings").option("publisher.total", 7).load()
              .groupBy("sensor").count())
    q = (counts.writeStream.format("reactive").option("endpoint", "tcp://127.0.0.1:9?token=t").outputMode("update")
         .option("checkpointLocation", tempfile.mkdtemp()).start())
    try:
        q.awaitTermination(120)
        spark_said = "no error"
    except Exception as e:
        spark_said = "requirement failed: reactive does not support Update mode" in str(e) or str(e)[:300]
    update = {"spark": spark_said, "rs_spark": wait_listener_bus(spark, 30_000) and any(
        "cannot write output mode update" in m and f"query {q.id}" in m for m in said)}
except Exception as e:  # DATA_SOURCE_NOT_FOUND: reactive, when discovery missed it
    rows = next((line for line in str(e).splitlines() if "DATA_SOURCE" in line), repr(e)[:300])
finally:
    spark.stop()
print(json.dumps({"listed": listed, "rows": rows, "update": update}))
"""
PLAIN = {"listed": True, "rows": 7, "update": {"spark": True, "rs_spark": True}}
"""What PLAIN_SESSION prints when discovery works: the rows, and in update mode Spark's refusal, then rs_spark's
advice (a session built without the shim's extension: local_session's refuses at start(),
tests/spark/test_sink_update.py)."""


def plain_session(python, cwd):
    """PLAIN_SESSION run by ``python`` as a user of its venv runs it; its JSON line."""
    path = os.path.dirname(python) + os.pathsep + os.environ.get("PATH", "")
    env = {k: v for k, v in os.environ.items() if k not in FOREIGN} | {"PATH": path}
    r = subprocess.run([python, "-c", PLAIN_SESSION], cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    assert r.returncode == 0 and lines, f"a plain SparkSession could not read format('reactive'):\n{r.stderr[-4000:]}"
    return json.loads(lines[-1])


def _copy_project(dest):
    """What an editable install reads: the metadata, the build backend and the Python sources
    (this checkout's working tree, so an uncommitted change to pyproject.toml is what is tested)."""
    for name in ("pyproject.toml", "setup.py", "pyspark_reactive.py", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy(os.path.join(ROOT, name), dest / name)
    (dest / "jvm-shim").mkdir()
    shutil.copy(os.path.join(ROOT, "jvm-shim", "rs_spark_build.py"), dest / "jvm-shim")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.jar")
    shutil.copytree(os.path.join(ROOT, "rs_spark"), dest / "rs_spark", ignore=ignore)


def test_a_fresh_editable_install_registers_format_reactive_with_a_plain_session(tmp_path):
    project, venv, wheelhouse, run = (tmp_path / d for d in ("project", "venv", "wheelhouse", "run"))
    project.mkdir()
    run.mkdir()
    _copy_project(project)
    _run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    _link_dependencies(python)  # pyspark, pyarrow, py4j: this interpreter's, linked
    env = {k: v for k, v in os.environ.items() if k not in FOREIGN}
    pip = [python, "-m", "pip", "--disable-pip-version-check"]
    _run([*pip, "download", "--quiet", "-d", str(wheelhouse), "setuptools>=77"], env=env)
    offline = env | {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse)}
    _run([*pip, "install", "--quiet", "--no-deps", "-e", str(project)], env=offline)  # as .ci/setup installs
    assert plain_session(python, run) == PLAIN


def test_this_interpreters_install_registers_format_reactive_with_a_plain_session(tmp_path):
    """The venv of .ci/setup (or whichever install runs the tests), as it is."""
    try:
        metadata.distribution("rs-spark")
    except metadata.PackageNotFoundError:
        pytest.skip("rs_spark is not installed in this interpreter (only on PYTHONPATH): nothing to check")
    got = plain_session(sys.executable, tmp_path)
    assert got == PLAIN, (
        f"{got}: this interpreter's rs_spark install hides pyspark_reactive from pkgutil.iter_modules(); an "
        "editable install from before pyproject.toml's package-dir: install it again (bash .ci/setup does)"
    )
