"""Session-wide checks and the fixtures shared by every test package.

``spark``: the one local SparkSession of the run. Starting one costs seconds (and its first query
more, while the JVM warms up), so every test that needs a local session gets this one; it is
stopped once, when the test session ends. Tests never stop it (a test that must stop or configure
a session of its own starts it in a subprocess and says why, e.g. tests/reliability/driver.py).

``rsocket_js``: rsocket-js ready to run (Node.js on PATH and ``npm ci --prefix interop/js`` done).
"""

from __future__ import annotations

import os

import pytest

from .js_peer import require_rsocket_js

pytest_plugins = ["tests.leakcheck"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def spark():
    # Spark's Python workers import the tests' factories (tests.spark.publishers ...): put the
    # checkout on their path.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [ROOT, os.environ.get("PYTHONPATH")] if p)
    from rs_spark.spark import local_session

    session = local_session("rs_spark-tests", **{"spark.sql.streaming.pollingDelay": "10ms"})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def rsocket_js() -> str:
    """The ``node`` executable, once rsocket-js is known to be installed (else skip or fail, saying why)."""
    return require_rsocket_js()
