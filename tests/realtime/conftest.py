"""A SparkSession with the shim jar for the real-time tests (jar built if its sources changed).

Spark's real-time batches last at least ``spark.sql.streaming.realTimeMode.minBatchDuration``
(5 s by default); the tests lower it to 1 s so a query crosses several batches quickly."""

from __future__ import annotations

import os

import pytest

from tests.jvm.conftest import ROOT, build


@pytest.fixture(scope="session")
def rt_spark():
    build()
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [ROOT, os.environ.get("PYTHONPATH")] if p)
    from pyspark import SparkContext

    from rs_spark.spark import local_session
    from rs_spark.spark.jvm import jars, jvm

    created = SparkContext._active_spark_context is None
    session = local_session(
        "rs_spark-realtime-tests",
        **{"spark.jars": ",".join(jars()), "spark.sql.streaming.pollingDelay": "10ms"},
    )
    jvm(session)  # a session another test module started first: the shim joins its classpath now
    session.conf.set("spark.sql.streaming.realTimeMode.minBatchDuration", "1000")
    yield session
    if created:
        session.stop()
