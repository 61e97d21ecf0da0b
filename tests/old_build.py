"""The last build before issue 50's READY question (``ab88d32``), run for real beside this one: its
``rs_spark`` package taken from this repository's history (``git archive``) and run by processes of
its own, so a test puts today's reader against its endpoint and its reader against today's.

The history is needed: a clone has it (CI runs ``.ci/run`` on a clone of main, and
tests/test_figures.py's check of the commits docs/benchmarks.md names needs it too). Without it
(a shallow clone, a source tarball) the tests that use it fail saying so, rather than skip.
"""

from __future__ import annotations

import io
import json
import os
import select
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
OLD = "ab88d32"
"""The last build before the READY question (the baseline of benchmarks/triggers.py's link cases)."""


def extract(dest: Path) -> Path:
    """``OLD``'s ``rs_spark`` package under ``dest`` (a folder to put on PYTHONPATH); fails the test
    saying what is missing when this checkout has no such commit."""
    git = ["git", "-C", str(ROOT)]
    try:
        found = subprocess.run([*git, "cat-file", "-e", f"{OLD}^{{commit}}"], capture_output=True, timeout=60)
    except FileNotFoundError:
        pytest.fail(f"these tests run build {OLD} from the repository's history, and git is not installed")
    if found.returncode != 0:
        pytest.fail(
            f"these tests run build {OLD} (the last before the READY question) from the repository's history, "
            f"and this checkout has no commit {OLD} ({found.stderr.decode(errors='replace').strip()}): a shallow "
            "clone or a source tarball? Run them in a full clone (git fetch --unshallow)"
        )
    archive = subprocess.run([*git, "archive", "--format=tar", OLD, "rs_spark"], capture_output=True, timeout=120)
    assert archive.returncode == 0, archive.stderr.decode(errors="replace")
    safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python 3.11.4+
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, **safe)
    return dest


def env(old: Path) -> dict[str, str]:
    """The environment of a process running the old build: it alone on PYTHONPATH (the spark fixture
    puts this checkout there for Spark's workers)."""
    return {**os.environ, "PYTHONPATH": str(old), "PYTHONDONTWRITEBYTECODE": "1"}


_SERVE = r"""
import json, sys
import rs_spark
from rs_spark import net
from rs_spark import streams as rs

token, backlogs = sys.argv[1], json.loads(sys.argv[2])
server = net.Server(token=token)
for name, (first, rows) in backlogs.items():
    server.add_publisher(name, rs.from_iterable([{"id": i} for i in range(first, first + rows)]))
print(json.dumps({"base": server.base_address, "package": rs_spark.__file__}), flush=True)
sys.stdin.read()  # serve until the test closes stdin
server.stop()
"""


class OldProcess:
    """``code`` run by the old build in a process of its own, with ``args``: it prints one JSON line
    when it has something to say (:attr:`said`, read within ``timeout`` seconds), then waits for
    :meth:`close` (its stdin closed) to end, so the test decides when it may go."""

    def __init__(self, old: Path, code: str, *args: str, timeout: float = 60) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            cwd=old,
            env=env(old),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            err = self.close()
            raise AssertionError(f"the old build's process said nothing within {timeout} s:\n{err[-5000:]}")
        self.said: Any = json.loads(line)
        assert self.said["package"].startswith(str(old)), f"the process ran {self.said['package']}, not build {OLD}"

    def close(self) -> str:
        """End it (stdin closed, then killed if it does not exit); what it wrote on stderr."""
        try:
            _, err = self.proc.communicate(timeout=20)  # closes its stdin
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=10)
        return err or ""


class OldEndpoint(OldProcess):
    """``rs_spark.net`` of the old build serving finite backlogs (name -> (first id, rows); each row
    ``{"id": i}``, all ready at once) in a process of its own; ``base`` is its address."""

    def __init__(self, old: Path, token: str, backlogs: dict[str, tuple[int, int]]) -> None:
        super().__init__(old, _SERVE, token, json.dumps(backlogs))
        self.base: str = self.said["base"]

    def address(self, name: str) -> str:
        return f"{self.base}/{name}"


__all__ = ["OLD", "OldEndpoint", "OldProcess", "extract", "env"]
