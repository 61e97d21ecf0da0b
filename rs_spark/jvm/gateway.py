"""Where the shim's jar is, and a standalone JVM (py4j ``launch_gateway``) for use without Spark.

Inside a Spark driver use ``spark._jvm`` instead (see :mod:`rs_spark.spark.jvm`). This module
imports py4j only, never pyspark; it finds pyspark's bundled Arrow jars by path.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import subprocess
import sys
import threading
import tomllib
import zipfile
from collections.abc import Iterable, Sequence
from typing import Any

JAR_NAME = "rs-spark-jvm.jar"
_HERE = os.path.dirname(os.path.abspath(__file__))
# Java 17 modules: Arrow's memory module reads direct buffers' addresses.
JAVA_OPTS = ("--add-opens=java.base/java.nio=ALL-UNNAMED", "-Dio.netty.tryReflectionSetAccessible=true")
# pyspark's jars the shim needs outside Spark (Arrow and what Arrow needs).
_STANDALONE_PREFIXES = (
    "arrow-",
    "flatbuffers-",
    "netty-buffer",
    "netty-common",
    "slf4j-api",
    "jackson-annotations",
    "jackson-core",
    "jackson-databind",
    "commons-codec",
    "py4j-",
)


class ShimNotFound(RuntimeError):
    """The shim's jar (or its classes in a JVM) cannot be found."""


class ShimVersionMismatch(ShimNotFound):
    """The shim's jar was built for another rs_spark version than this Python package."""


# A source checkout has the Java sources and their build script beside the package.
_SOURCE_ROOT = os.path.dirname(os.path.dirname(_HERE))
_BUILD_SCRIPT = os.path.join(_SOURCE_ROOT, "jvm-shim", "build")
_checked: dict[tuple[str, int, int], None] = {}  # jars whose version matched: (path, mtime_ns, size)


def jar_path() -> str:
    """The shim jar shipped in this package (built by ``bash jvm-shim/build``), checked to be the
    build of this rs_spark version (:class:`ShimVersionMismatch` otherwise)."""
    p = os.path.join(_HERE, "jars", JAR_NAME)
    if not os.path.isfile(p):
        if os.path.isfile(_BUILD_SCRIPT):
            raise ShimNotFound(
                f"{p} is missing: this is a source checkout where the JVM shim was not built yet. "
                "Run: bash jvm-shim/build   (needs a JDK 17; Debian packages are installed when missing)"
            )
        raise ShimNotFound(
            f"{p} is missing: this rs_spark was installed without its JVM shim (a wheel built with "
            "RS_SPARK_SKIP_JVM=1). Reinstall it from a wheel built with the shim (pip wheel . in a checkout, "
            "with a JDK 17 and pyspark at hand)"
        )
    st = os.stat(p)
    key = (p, st.st_mtime_ns, st.st_size)
    if key not in _checked:
        from .._version import __version__

        if not __version__.endswith("+unknown"):  # a source tree never installed has no version to compare
            check_jar_version(p, __version__)
        _checked[key] = None
    return p


def jar_version(path: str) -> str | None:
    """``Implementation-Version`` of the jar's manifest (jvm-shim/build writes pyproject.toml's
    version there), or None when the jar has none."""
    with zipfile.ZipFile(path) as z:
        try:
            text = z.read("META-INF/MANIFEST.MF").decode("utf-8")
        except KeyError:
            return None
    main: dict[str, str] = {}
    last = ""
    for line in text.splitlines():
        if not line:  # the main section ends at the first blank line
            break
        if line.startswith(" ") and last:  # a continuation line (manifests wrap at 72 bytes)
            main[last] += line[1:]
        elif ":" in line:
            last, _, value = line.partition(":")
            main[last] = value.strip()
    return main.get("Implementation-Version")


def check_jar_version(path: str, expected: str) -> None:
    """Raise :class:`ShimVersionMismatch` saying what to do unless the jar at ``path`` was built
    for rs_spark ``expected``."""
    found = jar_version(path)
    if found == expected:
        return
    built = f"was built for rs_spark {found}" if found else "has no Implementation-Version (an older build)"
    what = f"the JVM shim jar {path} {built}, but this rs_spark is {expected}"
    if not os.path.isfile(_BUILD_SCRIPT):
        raise ShimVersionMismatch(
            f"{what}: its jar and Python code come from different builds. Reinstall rs_spark from one wheel: "
            f"pip install --force-reinstall --no-deps <the rs_spark {expected} wheel>"
        )
    declared = _declared_version()
    if found is not None and found == declared:
        raise ShimVersionMismatch(
            f"{what}: pyproject.toml says {declared}, so the installed package metadata is stale, not the jar. "
            f"Reinstall the checkout: pip install -e {_SOURCE_ROOT}"
        )
    raise ShimVersionMismatch(
        f"{what}: a stale jar from an older build. Rebuild it: PYTHON=<a python with pyspark> bash {_BUILD_SCRIPT} "
        "(it rebuilds when pyproject.toml's version changes)"
    )


def _declared_version() -> str | None:
    try:
        with open(os.path.join(_SOURCE_ROOT, "pyproject.toml"), "rb") as f:
            return str(tomllib.load(f)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return None


def spark_jars_dir() -> str | None:
    """pyspark's bundled jars directory (Arrow for Java lives there), found without importing pyspark.

    In Spark's own Python workers pyspark is imported from ``pyspark.zip``, which has no jars: there
    ``SPARK_HOME`` (set by Spark) and the installed package on ``sys.path`` are looked at too."""
    spec = importlib.util.find_spec("pyspark")
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    if os.environ.get("SPARK_HOME"):
        places.append(os.environ["SPARK_HOME"])
    places.extend(os.path.join(p, "pyspark") for p in sys.path if p and os.path.isdir(p))
    for loc in places:
        d = os.path.join(loc, "jars")
        if os.path.isdir(d) and glob.glob(os.path.join(d, "arrow-vector-*.jar")):
            return d
    return None


def debian_jar(name: str) -> str | None:
    """``/usr/share/java/<name>.jar`` when the Debian package is installed (e.g. ``reactive-streams``)."""
    p = os.path.join("/usr/share/java", name + ".jar")
    return p if os.path.isfile(p) else None


def standalone_classpath(extra_jars: Iterable[str] = ()) -> list[str]:
    """The shim jar, Arrow for Java (from pyspark) and ``extra_jars``."""
    jars = [jar_path()]
    d = spark_jars_dir()
    if d is None:
        raise ShimNotFound("pyspark is not installed, and its jars directory holds the Arrow jars the shim needs")
    for j in sorted(glob.glob(os.path.join(d, "*.jar"))):
        if os.path.basename(j).startswith(_STANDALONE_PREFIXES):
            jars.append(j)
    jars.extend(extra_jars)
    return jars


class Gateway:
    """A standalone JVM with the shim, reached through py4j; ``jvm`` is its JVMView. Close it when done."""

    def __init__(self, gateway: Any, proc: Any) -> None:
        self.gateway = gateway
        self.jvm = gateway.jvm
        self._proc = proc

    @property
    def pid(self) -> int | None:
        """The JVM's process id, or None for a JVM this object did not start (e.g. Spark's own)."""
        return None if self._proc is None else int(self._proc.pid)

    def gateway_process_exited(self) -> bool:
        """Whether the JVM process has ended (True for a JVM this object did not start)."""
        return self._proc is None or self._proc.poll() is not None

    def close(self) -> None:
        """Shut the py4j gateway down and end the JVM this object started (terminated, killed
        after 5 s); idempotent."""
        try:
            self.gateway.shutdown()
        except Exception:  # the JVM may be gone already
            pass
        p = self._proc
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def launch(extra_jars: Sequence[str] = (), java_opts: Sequence[str] = (), java: str | None = None) -> Gateway:
    """Start a JVM with the shim on its classpath and connect py4j to it (no Spark involved)."""
    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

    cp = standalone_classpath(extra_jars)
    py4j_jar = next((j for j in cp if os.path.basename(j).startswith("py4j-")), "")
    java_home = os.environ.get("JAVA_HOME")
    java_path = java or (os.path.join(java_home, "bin", "java") if java_home else "java")
    port, proc = launch_gateway(
        jarpath=py4j_jar,
        classpath=os.pathsep.join(cp),
        javaopts=list(JAVA_OPTS) + list(java_opts),
        die_on_exit=True,
        java_path=java_path,
        return_proc=True,
        redirect_stderr=None,
    )
    gw = JavaGateway(gateway_parameters=GatewayParameters(port=port, auto_convert=True, auto_field=False))
    g = Gateway(gw, proc)
    shim(g.jvm)  # fail now, clearly, if the classes are not there
    return g


_shared: dict[tuple[str, ...], Gateway] = {}
_shared_lock = threading.Lock()


def shared(extra_jars: Sequence[str] = ()) -> Gateway:
    """One standalone gateway per process and set of ``extra_jars``, started on first use (for
    factories such as the reader's ``jvmPublisher`` option, and notebooks); it ends with the process."""
    key = tuple(os.path.abspath(j) for j in extra_jars)
    with _shared_lock:
        g = _shared.get(key)
        if g is None or g.gateway_process_exited():
            g = _shared[key] = launch(key)
        return g


def close_shared() -> None:
    """Close every gateway :func:`shared` started (they also end when this process does)."""
    with _shared_lock:
        gateways = list(_shared.values())
        _shared.clear()
    for g in gateways:
        g.close()


def shim(jvm: Any) -> Any:
    """The shim's entry class ``rsspark.jvm.Shim`` in ``jvm`` (a py4j JVMView), or a clear error
    (also when that JVM loaded a shim jar built for another rs_spark version)."""
    cls = jvm.rsspark.jvm.Shim
    try:
        loaded = cls.version()
    except Exception as exc:
        raise ShimNotFound(
            "the JVM has no class rsspark.jvm.Shim: the rs_spark shim jar is not on its classpath. In Spark, start "
            "the session with rs_spark.spark.jvm.configure(builder) (it adds the jar to spark.jars), or pass "
            f"--jars {os.path.join(_HERE, 'jars', JAR_NAME)}; standalone, use rs_spark.jvm.launch(). ({exc})"
        ) from None
    from .._version import __version__

    # None: classes loaded from a directory, not a versioned jar; "+unknown": an uninstalled source tree.
    if loaded is not None and loaded != __version__ and not __version__.endswith("+unknown"):
        raise ShimVersionMismatch(
            f"this JVM loaded rsspark.jvm.Shim from {cls.location()}, built for rs_spark {loaded}, but this rs_spark "
            f"is {__version__}: a stale shim jar is on that JVM's classpath (spark.jars, --jars, jvmJars). Start it "
            f"with this package's jar instead: rs_spark.spark.jvm.configure(builder), or --jars {jar_path()}"
        )
    return cls


__all__ = [
    "JAR_NAME",
    "JAVA_OPTS",
    "Gateway",
    "ShimNotFound",
    "ShimVersionMismatch",
    "check_jar_version",
    "jar_version",
    "close_shared",
    "jar_path",
    "launch",
    "shared",
    "shim",
    "spark_jars_dir",
    "debian_jar",
    "standalone_classpath",
]
