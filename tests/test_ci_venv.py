""".ci/venv, the venv step of .ci/setup (and so of .ci/demo and .ci/test), on a Debian or Ubuntu
machine without python3-venv: there ``python3 -m venv`` fails half-way (the interpreter has no
``ensurepip``) and leaves a ``.venv`` without pip that every later run tripped on.

The interpreter without ensurepip is real, not a stand-in: a copy of the system's python binary
beside a copy of its standard library (symlinks) that lacks the ``ensurepip`` package, exactly what
Debian installs without python3.X-venv; its ``-m venv`` fails as Debian's does. Only apt-get is a
stand-in in the root case (a script that records its arguments and fails as an offline apt-get
does), since really installing a package would change this machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SETPRIV = shutil.which("setpriv")
AS_NOBODY = [SETPRIV or "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def _system_python() -> Path | None:
    """A python other users can run (the system's, not one under /root), for the copy."""
    for name in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(name):
            real = Path(os.path.realpath(name))
            if all(os.stat(p).st_mode & 0o005 for p in [real, *real.parents]):
                return real
    return None


BASE = _system_python()
pytestmark = pytest.mark.skipif(BASE is None, reason="no system python3 that another user can run")


@pytest.fixture
def work():
    """A folder other users may enter (0755): the python without ensurepip and a repository copy."""
    d = Path(tempfile.mkdtemp(prefix="rs-ci-venv-"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _version(python: Path) -> str:
    return subprocess.run(
        [str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.fixture
def no_ensurepip(work) -> Path:
    """The system python's binary beside its standard library without the ensurepip package."""
    assert BASE is not None
    version = _version(BASE)
    stdlib = subprocess.run(
        [str(BASE), "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    prefix = work / "python"
    lib = prefix / "lib" / f"python{version}"
    lib.mkdir(parents=True)
    (prefix / "bin").mkdir()
    python = prefix / "bin" / f"python{version}"
    shutil.copy2(BASE, python)
    for entry in Path(stdlib).iterdir():
        if entry.name != "ensurepip":
            (lib / entry.name).symlink_to(entry)
    probe = subprocess.run([str(python), "-c", "import venv, ensurepip"], capture_output=True, text=True)
    assert "No module named 'ensurepip'" in probe.stderr, probe.stderr  # venv is there, ensurepip is not
    return python


@pytest.fixture
def repo(work) -> Path:
    """A checkout's .ci/venv in a folder of its own."""
    r = work / "repo"
    (r / ".ci").mkdir(parents=True)
    shutil.copy2(ROOT / ".ci" / "venv", r / ".ci" / "venv")
    return r


def _half_made(repo: Path, python: Path, user: list[str]) -> None:
    """What a plain `python3 -m venv .venv` leaves on such a machine: .venv/bin/python, no pip."""
    done = subprocess.run([*user, str(python), "-m", "venv", str(repo / ".venv")], capture_output=True, text=True)
    assert done.returncode != 0 and (repo / ".venv" / "bin" / "python").exists(), done.stderr


def _run(repo: Path, python: Path, user: list[str], path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": path or os.environ["PATH"], "PYTHON": str(python), "HOME": str(repo)}
    return subprocess.run(
        [*user, "bash", str(repo / ".ci" / "venv")], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.skipif(SETPRIV is None or os.geteuid() != 0, reason="needs root and setpriv to act as another user")
def test_without_root_it_prints_the_exact_fix_and_leaves_no_venv(repo, no_ensurepip):
    shutil.chown(repo, "nobody")
    _half_made(repo, no_ensurepip, AS_NOBODY)  # an earlier run's leftover
    done = _run(repo, no_ensurepip, AS_NOBODY)
    version = _version(no_ensurepip)
    assert done.returncode == 1, done.stderr
    assert f"Fix: sudo apt-get install -y python{version}-venv, then run this again." in done.stderr, done.stderr
    assert "its ensurepip module is missing" in done.stderr and "Traceback" not in done.stderr
    assert not (repo / ".venv").exists(), "a failed venv left .venv behind"


@pytest.mark.skipif(os.geteuid() != 0, reason="the apt-get path is taken as root")
def test_as_root_it_installs_python3_venv_with_apt_get_and_leaves_no_venv_when_that_fails(repo, no_ensurepip, work):
    bin_dir = work / "fake-bin"
    bin_dir.mkdir()
    calls = work / "apt-get.calls"
    apt = bin_dir / "apt-get"
    apt.write_text(
        f'#!/bin/sh\necho "$@" >> {calls}\n'
        'case "$*" in *install*) echo "E: Unable to locate package" >&2; exit 100;; esac\nexit 0\n'
    )
    apt.chmod(0o755)
    done = _run(repo, no_ensurepip, [], path=f"{bin_dir}:{os.environ['PATH']}")
    version = _version(no_ensurepip)
    assert done.returncode == 1, done.stderr
    assert calls.read_text().splitlines() == ["update -qq", f"install -y -qq python{version}-venv"]
    assert f"installing python{version}-venv with apt-get" in done.stderr
    assert "did not give" in done.stderr and "nothing was left in .venv" in done.stderr
    assert not (repo / ".venv").exists()


def test_a_half_made_venv_is_made_again_with_a_python_that_has_ensurepip(repo, no_ensurepip):
    _half_made(repo, no_ensurepip, [])
    done = _run(repo, Path(sys.executable).resolve(), [])
    assert done.returncode == 0, done.stderr
    assert "incomplete (no pip in it" in done.stderr
    pip = subprocess.run([str(repo / ".venv" / "bin" / "python"), "-m", "pip", "--version"], capture_output=True)
    assert pip.returncode == 0
    again = _run(repo, Path(sys.executable).resolve(), [])  # a complete venv is left as it is
    assert again.returncode == 0 and again.stderr == ""
