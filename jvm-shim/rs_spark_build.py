"""rs_spark's build backend: setuptools, plus the JVM shim compiled into every wheel.

``pip wheel .``, ``pip install .`` and ``python -m build`` (in a clone or from the sdist) run
``bash jvm-shim/build jar <build_lib>/rs_spark/jvm/jars/rs-spark-jvm.jar`` from the ``build_py``
step (:class:`BuildPy`, wired in setup.py). That needs a JDK 17, Debian's libreactive-streams-java
(installed with apt-get when building as root) and pyspark's jars (Arrow for Java), looked for in
this order:

1. ``PYSPARK_JARS``: the directory, e.g. ``.venv/lib/python3.11/site-packages/pyspark/jars``;
2. pyspark importable by the build itself (``--no-build-isolation``, or the build requirement below);
3. ``PYTHON``: an interpreter with pyspark installed;
4. the interpreter running the build frontend: pip runs the backend with its own interpreter and
   only hides that interpreter's site-packages, so ``pip install .`` in a venv with pyspark finds it;
5. ``$SPARK_HOME/jars``.

When none has them, :func:`get_requires_for_build_wheel` asks the frontend for pyspark as a build
requirement (about 400 MB, from the pip cache after the first time) rather than failing: a build
in a fresh venv just works, and every other build pays nothing. A build that still cannot make the
jar fails saying what is missing; ``RS_SPARK_SKIP_JVM=1`` builds a wheel without the jar on purpose
(rs_spark.jvm then says the jar is missing). Editable installs skip the step: they use the jar
``bash jvm-shim/build`` keeps in the source tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  # every other PEP 517 hook is setuptools' own
from setuptools.command.build_py import build_py as _build_py
from setuptools.errors import SetupError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "jvm-shim", "build")
JAR = os.path.join("rs_spark", "jvm", "jars", "rs-spark-jvm.jar")
SKIP = "RS_SPARK_SKIP_JVM"


class JarsNotFound(SetupError):
    """No pyspark jars to compile the shim against, or the compile failed."""


def _has_arrow(d: str) -> bool:
    return os.path.isdir(d) and any(n.startswith("arrow-vector-") and n.endswith(".jar") for n in os.listdir(d))


_PROBE = (
    "import importlib.util as u, os; s = u.find_spec('pyspark'); "
    "print(os.path.join(list(s.submodule_search_locations)[0], 'jars') if s else '')"
)


def _jars_of(python: str) -> str | None:
    """pyspark's jars directory of ``python``; -E: without the PYTHONPATH and PYTHONNOUSERSITE that
    an isolated pip build sets to hide that interpreter's own site-packages."""
    try:
        r = subprocess.run([python, "-E", "-c", _PROBE], capture_output=True, text=True, timeout=120)
    except OSError:
        return None
    d = r.stdout.strip()
    return d if r.returncode == 0 and d and _has_arrow(d) else None


def _jars_here() -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        if _has_arrow(os.path.join(loc, "jars")):
            return os.path.join(loc, "jars")
    return None


def find_spark_jars() -> tuple[str | None, list[str]]:
    """pyspark's jars directory (None when not found) and, for the error, what was looked at."""
    explicit = os.environ.get("PYSPARK_JARS")
    if explicit:
        if not _has_arrow(explicit):
            raise JarsNotFound(
                f"PYSPARK_JARS={explicit} has no arrow-vector-*.jar, so it is not pyspark's jars directory. "
                "Fix: set PYSPARK_JARS to <site-packages>/pyspark/jars of a pyspark 4 install, or unset it."
            )
        return explicit, []
    tried = ["PYSPARK_JARS: not set"]
    found = _jars_here()
    if found:
        return found, tried
    tried.append("pyspark importable in the build environment: no (an isolated build sees only its requirements)")
    python = os.environ.get("PYTHON")
    if python:
        found = _jars_of(python)
        if found:
            return found, tried
    tried.append(f"PYTHON={python}: no pyspark there" if python else "PYTHON: not set")
    found = _jars_of(sys.executable)
    if found:
        return found, tried
    tried.append(f"pyspark of the interpreter running the build ({sys.executable}, own site-packages): none")
    home = os.environ.get("SPARK_HOME")
    if home and _has_arrow(os.path.join(home, "jars")):
        return os.path.join(home, "jars"), tried
    tried.append(f"SPARK_HOME={home}: no jars/arrow-vector-*.jar" if home else "SPARK_HOME: not set")
    return None, tried


def _pyspark_requirement() -> str:
    """pyspark as [project] dependencies of pyproject.toml pin it (one source of truth)."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    return next(d for d in deps if d.replace(" ", "").lower().startswith(("pyspark>", "pyspark=", "pyspark<")))


def get_requires_for_build_wheel(config_settings: Any = None) -> list[str]:
    """setuptools' requirements, and pyspark when its jars cannot be found otherwise (see above)."""
    requires = list(_setuptools.get_requires_for_build_wheel(config_settings))
    if os.environ.get(SKIP) != "1" and find_spark_jars()[0] is None:
        requires.append(_pyspark_requirement())
    return requires


def _skip_banner() -> None:
    print(
        f"\n*** {SKIP}=1: this rs_spark wheel has NO JVM shim jar ({JAR}). rs_spark.jvm, read_jvm_stream and "
        "the jvmPublisher option will fail with ShimNotFound until rs_spark is reinstalled from a full build. ***\n",
        file=sys.stderr,
        flush=True,
    )


def build_jar(out: str) -> None:
    """Compile jvm-shim/ into ``out`` with jvm-shim/build, or raise saying what is missing."""
    if not os.path.isfile(SCRIPT):
        raise JarsNotFound(
            f"{SCRIPT} is missing, so the JVM shim cannot be built: build from a git clone or the rs_spark sdist "
            f"(both carry jvm-shim/), or set {SKIP}=1 to build a wheel without the shim."
        )
    jars, tried = find_spark_jars()
    if jars is None:
        looked = "".join(f"\n  - {t}" for t in tried)
        raise JarsNotFound(
            "rs_spark's wheel includes the JVM shim (jvm-shim/, Java 17), compiled against pyspark's Arrow jars, "
            f"and no pyspark jars were found. Looked at:{looked}\n"
            "Fix (one of):\n"
            f'  - install pyspark where the build runs, then build again: pip install "{_pyspark_requirement()}"\n'
            "  - point the build at pyspark's jars: PYSPARK_JARS=<site-packages>/pyspark/jars pip wheel .\n"
            f"  - build without the shim (rs_spark.jvm will not work): {SKIP}=1 pip wheel ."
        )
    env = dict(os.environ, PYSPARK_JARS=jars)
    r = subprocess.run(["bash", SCRIPT, "jar", out], env=env)
    if r.returncode != 0 or not os.path.isfile(out):
        raise JarsNotFound(
            f"bash {SCRIPT} jar {out} failed (exit {r.returncode}) with PYSPARK_JARS={jars}; its own message above "
            f"says what is missing. Fix that and build again, or set {SKIP}=1 to build a wheel without the shim."
        )


class BuildPy(_build_py):
    """setuptools' build_py, then the JVM shim jar into the build directory (see the module's docstring)."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # the editable install reads the source tree's jar (bash jvm-shim/build)
            return
        out = os.path.join(self.build_lib, JAR)
        if os.environ.get(SKIP) == "1":
            if os.path.exists(out):
                os.remove(out)
            _skip_banner()
            return
        build_jar(out)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if not self.editable_mode and os.environ.get(SKIP) != "1":
            outputs.append(os.path.join(self.build_lib, JAR))
        return outputs
