"""One SparkSession for every Spark test module (starting one costs seconds)."""

from __future__ import annotations

import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def spark():
    # Spark's Python workers must import tests.spark.publishers: put the repo on their path.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [ROOT, os.environ.get("PYTHONPATH")] if p)
    from rs_spark.spark import local_session

    session = local_session("rs_spark-tests", **{"spark.sql.streaming.pollingDelay": "10ms"})
    yield session
    session.stop()
