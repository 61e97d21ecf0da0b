"""SparkSession helpers: the Python workers must run this interpreter, and the source must be registered."""

from __future__ import annotations

import os
import sys
from typing import Any

from pyspark.sql import SparkSession

from ..net.protocol.address import parse


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
    so call it before starting queries on a session rs_spark did not create, and adds a listener that
    says what to use when a query writes ``format("reactive")`` in update mode (rs_spark.spark.sink.mode_refusal).
    """
    from .datasource import ReactiveDataSource
    from .internals import data_source_exists
    from .shared_env import guard_shared_env
    from .sink.mode_refusal import watch

    watch(spark)  # a query writing format("reactive") in update mode is told what to use instead
    if not replace and data_source_exists(spark, "reactive"):  # None (cannot tell): just register
        guard_shared_env(spark)
        return
    spark.dataSource.register(ReactiveDataSource)
    guard_shared_env(spark)


LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")
_LOG4J2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")


def local_session(
    app_name: str = "rs_spark", master: str = "local[2]", log_level: str | None = "ERROR", **conf: Any
) -> SparkSession:
    """A SparkSession for local use with workers on this interpreter and ``reactive`` registered.

    ``log_level``: Spark's log level from its JVM's start (default ``ERROR``: no start-up notices,
    no WARN lines, and no console progress bars); ``"WARN"`` or ``"INFO"`` to see more, ``None`` for
    Spark's own defaults (WARN and progress bars). It applies when this call starts the JVM; keyword
    arguments become Spark conf (``a__b`` for ``a.b``) and win over these defaults. The shim jar joins
    ``spark.jars`` and its session extension ``spark.sql.extensions`` (:data:`rs_spark.spark.jvm.EXTENSIONS`:
    ``start()`` refuses ``format("reactive")`` in update mode saying what to use), after any you give; both
    are left out when this install has no shim jar.
    """
    from .jvm import with_shim

    ensure_worker_python()
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.streaming.stopTimeout", "30s")
    )
    conf = with_shim({k.replace("__", "."): v for k, v in conf.items()})
    java_options = conf.pop("spark.driver.extraJavaOptions", None)
    for k, v in {**log_conf(log_level, java_options), **conf}.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    register(spark)
    return spark


def log_conf(level: str | None, java_options: Any = None) -> dict[str, str]:
    """Spark conf that sets Spark's log ``level`` from its JVM's start (through a log4j2
    configuration given to the driver JVM, as ``setLogLevel`` would come after the start-up
    messages) and turns the console progress bars off; ``java_options``: the caller's own
    ``spark.driver.extraJavaOptions``, kept after ours. ``None``: Spark's defaults."""
    if level is None:
        return {} if java_options is None else {"spark.driver.extraJavaOptions": str(java_options)}
    if str(level).upper() not in LOG_LEVELS:
        raise ValueError(f"local_session(log_level={level!r}): use one of {', '.join(LOG_LEVELS)}, or None")
    ours = f"-Dlog4j2.configurationFile=file:{_LOG4J2} -Drs_spark.sparkLogLevel={str(level).lower()}"
    return {
        "spark.driver.extraJavaOptions": ours if java_options is None else f"{ours} {java_options}",
        "spark.ui.showConsoleProgress": "false",
    }


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


__all__ = ["ensure_worker_python", "register", "local_session", "log_conf", "LOG_LEVELS", "check_reachable", "is_local"]
