"""Session-wide checks and the fixtures shared by every test package.

``spark``: the one local SparkSession of the run. Starting one costs seconds (and its first query
more, while the JVM warms up), so every test that needs a local session gets this one; it is
stopped once, when the test session ends. Tests never stop it (a test that must stop or configure
a session of its own starts it in a subprocess and says why, e.g. tests/reliability/driver.py).

``rsocket_js``: rsocket-js ready to run (Node.js on PATH and ``npm ci --prefix interop/js`` done).

``old_build``: the package of build ab88d32, the last before the READY question, for processes that
run it beside this one (tests/old_build.py).

Every rs_spark.tck verification this suite collects pins its skips (``skips = {...}``, see
docs/tck.md): collection stops, naming the class, where one does not.
"""

from __future__ import annotations

import os
import sys

import pytest

from .js_peer import require_rsocket_js

pytest_plugins = ["tests.leakcheck"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_collection_modifyitems(config, items):
    """A TCK verification left with ``skips = None`` would let any skip pass: refuse to run it."""
    env = sys.modules.get("rs_spark.tck.env")  # not imported: no verification was collected
    if env is None:
        return
    unpinned = sorted(
        {
            f"{item.nodeid.split('::')[0]}::{item.cls.__name__}"
            for item in items
            if isinstance(item.cls, type) and issubclass(item.cls, env.Verification) and item.cls.skips is None
        }
    )
    if unpinned:
        raise pytest.UsageError(
            f"TCK verifications without skips: {', '.join(unpinned)}. Declare which of their tests may skip "
            "and why: skips = {'test_... or rule': 'why'} ({} if none may); see docs/tck.md"
        )


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
def old_build(tmp_path_factory):
    """The ``rs_spark`` package of build ab88d32 (the last before the READY question), from the
    repository's history: a folder to put on a process's PYTHONPATH (tests/old_build.py)."""
    from .old_build import extract

    return extract(tmp_path_factory.mktemp("ab88d32"))


@pytest.fixture(scope="session")
def rsocket_js() -> str:
    """The ``node`` executable, once rsocket-js is known to be installed (else skip or fail, saying why)."""
    return require_rsocket_js()
