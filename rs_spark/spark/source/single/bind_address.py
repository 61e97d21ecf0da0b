"""Where the reader process's batch server listens: loopback unless executors may be elsewhere.

The reader process is a Python worker started by the driver JVM and is not given the
session's configuration, so it reads what the driver was launched with: the JVM's command line
(``spark-submit`` and pyspark both pass ``--master`` / ``--conf k=v`` there) and
``spark-defaults.conf``. With a ``local`` master every executor is on this host, so the server
listens on 127.0.0.1 only. Otherwise it also listens on the address Spark itself uses for the
driver (``spark.driver.bindAddress``, ``spark.driver.host``, ``SPARK_LOCAL_IP``, else the
interface of the default route); never on every interface.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from .batch_fetch import default_route_address

LOOPBACK = "127.0.0.1"
_SUBMIT_CLASS = "org.apache.spark.deploy.SparkSubmit"


def batch_server_binds() -> list[str]:
    """The addresses the batch server of this reader process listens on."""
    return binds_for(driver_conf(), os.environ.get("SPARK_LOCAL_IP"), default_route_address())


def binds_for(conf: dict[str, str], local_ip: str | None, route_ip: str | None) -> list[str]:
    """Loopback, plus the driver's address unless the master is local (see the module docstring)."""
    if conf.get("spark.master", "").startswith("local"):
        return [LOOPBACK]
    host = conf.get("spark.driver.bindAddress") or conf.get("spark.driver.host") or local_ip or route_ip
    if not host or host in ("0.0.0.0", "::") or host.startswith("127.") or host == "localhost":
        return [LOOPBACK]
    return [LOOPBACK, host]


def driver_conf(pid: int | None = None) -> dict[str, str]:
    """The Spark configuration the driver JVM above ``pid`` was started with ({} if there is none)."""
    argv = _driver_argv(os.getpid() if pid is None else pid)
    if argv is None:
        return {}
    conf = _defaults_file()
    conf.update(parse_submit_args(argv))
    return conf


def parse_submit_args(argv: Iterable[str]) -> dict[str, str]:
    """``--master m`` and ``--conf k=v`` (both also as ``--opt=value``) of a spark-submit command line."""
    conf: dict[str, str] = {}
    args = list(argv)
    for i, a in enumerate(args):
        value = args[i + 1] if i + 1 < len(args) else ""
        if a.startswith("--master="):
            conf["spark.master"] = a.split("=", 1)[1]
        elif a == "--master":
            conf["spark.master"] = value
        elif a.startswith("--conf=") or a == "--conf":
            kv = a.split("=", 1)[1] if a.startswith("--conf=") else value
            if "=" in kv:
                k, v = kv.split("=", 1)
                conf[k] = v
    return conf


def _driver_argv(pid: int) -> list[str] | None:
    """The command line of the nearest ancestor of ``pid`` that runs SparkSubmit."""
    for _ in range(16):  # reader -> pyspark daemon -> JVM: a few levels at most
        argv = _cmdline(pid)
        if argv and _SUBMIT_CLASS in argv:
            return argv
        parent = _parent(pid)
        if parent is None or parent <= 1:
            return None
        pid = parent
    return None


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rindex(b")") + 2 :].split()[1])  # after "(comm) state"
    except (OSError, ValueError, IndexError):
        return None


def _defaults_file() -> dict[str, str]:
    conf_dir = os.environ.get("SPARK_CONF_DIR") or os.path.join(os.environ.get("SPARK_HOME", ""), "conf")
    conf: dict[str, str] = {}
    try:
        with open(os.path.join(conf_dir, "spark-defaults.conf"), encoding="utf-8") as f:
            for line in f:
                parts = line.strip().split(None, 1)
                if len(parts) == 2 and not parts[0].startswith("#"):
                    conf[parts[0]] = parts[1].strip()
    except OSError:
        pass
    return conf


__all__ = ["batch_server_binds", "binds_for", "driver_conf", "parse_submit_args"]
