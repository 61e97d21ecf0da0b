"""SparkSession helpers: the Python workers must run this interpreter, and the source must be registered."""

from __future__ import annotations

import os
import sys
from typing import Any

from pyspark.sql import SparkSession

from ..net.address import parse


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
    as a package. It does nothing if ``reactive`` is registered, unless ``replace``; either way it
    makes the source's shared environment map thread-safe (a Spark race: rs_spark.spark.shared_env),
    so call it before starting queries on a session rs_spark did not create.
    """
    from .datasource import ReactiveDataSource
    from .shared_env import guard_shared_env

    if not replace:
        try:
            if spark._jsparkSession.sessionState().dataSourceManager().dataSourceExists("reactive"):
                guard_shared_env(spark)
                return
        except Exception:  # Spark Connect or an internal API change: just register
            pass
    spark.dataSource.register(ReactiveDataSource)
    guard_shared_env(spark)


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


def check_reachable(spark: Any, bind: str, what: str) -> None:
    """Refuse a loopback endpoint that a Spark Connect server on another host could not reach."""
    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        return  # a classic session: its driver (and reader, and commits) run on this machine
    try:
        host = str(spark.client.host)
    except Exception:
        return
    if not parse(bind, need_name=False).is_loopback or host in ("localhost", "::1") or host.startswith("127."):
        return
    raise ValueError(
        f"{what}(): this Spark Connect session's server runs at {host}, and it must connect back to the "
        f"Publisher/Subscriber in this process, which is served on {bind} (loopback: not reachable from "
        f"{host}). Pass bind='tcp://<an address of this machine that {host} can reach>:0' (a token is added), "
        "or serve it with rs_spark.net yourself and use option endpoint"
    )


def is_local(spark: SparkSession) -> bool:
    try:
        return str(spark.sparkContext.master).startswith("local")
    except Exception:  # Spark Connect: no SparkContext here; the server decides
        return False


__all__ = ["ensure_worker_python", "register", "local_session", "check_reachable", "is_local"]
