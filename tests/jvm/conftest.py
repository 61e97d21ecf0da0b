"""A real JVM for the shim's tests: one standalone py4j gateway per module (jar built if missing)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "jvm-shim", "target", "rs-spark-jvm-fixtures.jar")


def build() -> None:
    """Build the jars when a source is newer (the script is a no-op otherwise)."""
    r = subprocess.run(
        ["bash", os.path.join(ROOT, "jvm-shim", "build")],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHON=sys.executable),
    )
    if r.returncode != 0:
        pytest.fail(f"bash jvm-shim/build failed:\n{r.stdout}\n{r.stderr}")


def extra_jars():
    from rs_spark.jvm import debian_jar

    jars = [FIXTURES]
    for name in ("reactive-streams", "netty-reactive-streams"):
        p = debian_jar(name)
        if p is None:
            pytest.fail(f"/usr/share/java/{name}.jar is missing: run bash jvm-shim/build (installs it)")
        jars.append(p)
    return jars


@pytest.fixture(scope="module")
def gw():
    build()
    from rs_spark.jvm import launch

    g = launch(extra_jars=extra_jars() + _netty_jars())
    _warm_up(g.jvm)
    yield g
    g.close()


@pytest.fixture(scope="module")
def jvm(gw):
    return gw.jvm


def _netty_jars():
    # Standalone, netty-reactive-streams needs netty's channel classes: pyspark ships netty 4.2.
    from rs_spark.jvm.gateway import spark_jars_dir

    d = spark_jars_dir()
    return [
        os.path.join(d, f)
        for f in sorted(os.listdir(d))
        if f.startswith(
            ("netty-transport-4", "netty-resolver-4", "netty-handler-4", "netty-codec-4", "netty-codec-base")
        )
    ]


def _warm_up(jvm) -> None:
    """Load Arrow's classes once, so the first test's timeouts measure the bridge, not class loading."""
    from rs_spark.jvm import JvmPublisher
    from rs_spark.streams.subscribers import BlockingIterator

    for transfer in ("file", "bytes"):
        it = BlockingIterator(prefetch=8)
        JvmPublisher(jvm.rsspark.jvm.Sources.submissionLongs(3), jvm, transfer=transfer).subscribe(it)
        assert list(it) == [0, 1, 2]


def standalone_jvm():
    """A JVM with the shim started by ``rs_spark.jvm.launch`` for a module's tests (a generator for a
    fixture), closed after them. Once a SparkSession ran in this process pyspark routes every py4j
    error through the Spark JVM to convert it, which fails for a standalone gateway's (a Py4JError
    without the message): py4j's own handler while it is in use."""
    import py4j.java_gateway
    import py4j.protocol

    from rs_spark.jvm import launch

    build()
    g = launch()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(py4j.java_gateway, "get_return_value", py4j.protocol.get_return_value)
            yield g.jvm
    finally:
        g.close()
