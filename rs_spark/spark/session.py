"""SparkSession helpers: the Python workers must run this interpreter, and the source must be registered."""

from __future__ import annotations

import os
import sys
from typing import Any

from pyspark.sql import SparkSession


def ensure_worker_python() -> None:
    """Point Spark's Python workers at this interpreter unless the user chose one.

    Workers run ``PYSPARK_PYTHON`` (default: ``python3`` on PATH, not the active venv), which
    would fail with "No module named pyarrow" or "No module named rs_spark".
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def register(spark: SparkSession, replace: bool = False) -> None:
    """Register ``format("reactive")`` on ``spark``.

    Installing the package registers it already, through Spark's discovery of ``pyspark_*``
    modules; this call is for environments where that is off or rs_spark is not installed
    as a package. It does nothing if ``reactive`` is registered, unless ``replace``.
    """
    from .source import ReactiveDataSource

    if not replace:
        try:
            if spark._jsparkSession.sessionState().dataSourceManager().dataSourceExists("reactive"):
                return
        except Exception:  # Spark Connect or an internal API change: just register
            pass
    spark.dataSource.register(ReactiveDataSource)


def local_session(app_name: str = "rs_spark", master: str = "local[2]", **conf: Any) -> SparkSession:
    """A SparkSession for local use with workers on this interpreter and ``reactive`` registered."""
    ensure_worker_python()
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.streaming.stopTimeout", "30s")
    )
    for k, v in conf.items():
        builder = builder.config(k.replace("__", "."), v)
    spark = builder.getOrCreate()
    register(spark)
    return spark


__all__ = ["ensure_worker_python", "register", "local_session"]
