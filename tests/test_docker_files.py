"""docker/ cannot be run here (no Docker engine), so check it by construction: the build stage
copies every file the wheel build reads and installs what the JVM shim's compile needs, its
`pip wheel` flow builds a wheel with the shim from exactly those files (run here, slow), the
runtime stage installs that wheel, the packages and paths exist, and the job container runs the
spark-submit example with arguments the example accepts (the same job runs on a local
standalone cluster in tests/cluster/test_standalone.py)."""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCKERFILE = open(os.path.join(ROOT, "docker", "Dockerfile")).read()
COMPOSE = yaml.safe_load(open(os.path.join(ROOT, "docker", "compose.yaml")))
PYPROJECT = tomllib.loads(open(os.path.join(ROOT, "pyproject.toml")).read())
JAR = "rs_spark/jvm/jars/rs-spark-jvm.jar"


def _stages() -> dict[str, str]:
    """Each stage's text by name (the last, unnamed one is ``runtime``)."""
    parts = re.split(r"^FROM ", DOCKERFILE, flags=re.M)[1:]
    stages = {}
    for part in parts:
        m = re.match(r"\S+(?: AS (\S+))?", part)
        assert m is not None
        stages[m.group(1) or "runtime"] = part
    return stages


def _instructions(text: str, name: str) -> list[str]:
    """The ``name`` instructions of ``text``, with continuation lines joined."""
    joined = re.sub(r"\\\n", " ", text)
    return [line[len(name) + 1 :].strip() for line in joined.splitlines() if line.startswith(name + " ")]


def _copied(stage: str) -> list[tuple[str, str]]:
    """(source in the repository, destination) of each COPY from the build context."""
    out = []
    for args in _instructions(_stages()[stage], "COPY"):
        if args.startswith("--from="):
            continue
        *sources, dest = shlex.split(args)
        out += [(s, dest) for s in sources]
    return out


def _apt_packages(stage: str) -> list[str]:
    pkgs = []
    for run in _instructions(_stages()[stage], "RUN"):
        for cmd in run.split("&&"):
            words = cmd.split()
            if words[:2] == ["apt-get", "install"]:
                pkgs += [w for w in words[2:] if not w.startswith("-")]
    return pkgs


def _dockerignore() -> list[str]:
    lines = open(os.path.join(ROOT, ".dockerignore")).read().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def _ignored(path: str) -> bool:
    return any(fnmatch.fnmatch(path, p) or path.startswith(p.rstrip("/") + "/") for p in _dockerignore())


def test_everything_the_image_copies_from_the_repository_exists_and_is_in_the_build_context():
    copied = _copied("build") + _copied("runtime")
    assert copied, "the Dockerfile copies nothing"
    for src, _ in copied:
        assert os.path.exists(os.path.join(ROOT, src)), f"Dockerfile copies {src}, which does not exist"
        assert not _ignored(src), f"Dockerfile copies {src}, which .dockerignore leaves out of the context"


def test_the_build_stage_copies_every_file_the_wheel_build_reads():
    sources = {src.rstrip("/") for src, _ in _copied("build")}
    project = PYPROJECT["project"]
    needed = {"pyproject.toml", "setup.py", "MANIFEST.in", project["readme"], *project["license-files"]}
    needed |= {f"{m}.py" for m in PYPROJECT["tool"]["setuptools"]["py-modules"]}
    needed |= set(PYPROJECT["build-system"]["backend-path"])  # the build backend: jvm-shim/
    needed |= {p.rstrip("*") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]}
    # (MANIFEST.in's other entries, CHANGELOG.md and SECURITY.md, are for the sdist: a wheel does not read them.)
    missing = [n for n in sorted(needed) if not any(n == s or n.startswith(s + "/") for s in sources)]
    assert missing == [], f"the wheel build reads {missing}, which the build stage does not copy"


def test_the_build_stage_has_what_the_shim_compile_needs_and_builds_the_wheel_with_pip():
    build = _stages()["build"]
    # jvm-shim/build's `jar` mode: javac 17 and Debian's reactive-streams jar (pyspark's jars for Arrow).
    assert {"openjdk-17-jdk-headless", "libreactive-streams-java"} <= set(_apt_packages("build"))
    assert any('pip install --no-cache-dir "pyspark>=4.2,<5"' in r for r in _instructions(build, "RUN"))
    assert any(r.startswith("pip wheel --no-cache-dir --no-deps . -w /dist") for r in _instructions(build, "RUN"))
    assert JAR in build  # and checks the wheel carries the jar


def test_the_runtime_stage_installs_the_wheel_from_the_build_stage_and_no_sources():
    runtime = _stages()["runtime"]
    assert _copied("runtime") == [], "the runtime image gets rs_spark from the wheel only"
    assert "COPY --from=build /dist/ /dist/" in runtime
    assert any(r.startswith("pip install --no-cache-dir /dist/*.whl") for r in _instructions(runtime, "RUN"))
    assert "rs_spark.jvm.jar_path()" in runtime  # fails the image build if the jar is missing or another version
    assert "openjdk-17-jre-headless" in _apt_packages("runtime")


@pytest.mark.skipif(shutil.which("apt-cache") is None, reason="no apt-cache: not a Debian machine")
def test_the_debian_packages_the_image_installs_exist():
    # The image is Debian bookworm, as CI and this machine (.ci/setup installs with apt-get).
    for pkg in sorted(set(_apt_packages("build") + _apt_packages("runtime"))):
        r = subprocess.run(["apt-cache", "show", pkg], capture_output=True, text=True)
        assert r.returncode == 0 and f"Package: {pkg}" in r.stdout, f"apt has no package {pkg}: {r.stderr}"


def test_image_paths_match_its_python_version_and_spark_s_scripts_exist():
    pythons = set(re.findall(r"FROM python:(\d+\.\d+)", DOCKERFILE))
    assert len(pythons) == 1, pythons
    (py,) = pythons
    site = f"/usr/local/lib/python{py}/site-packages"
    assert f"ENV PYSPARK_JARS={site}/pyspark/jars" in DOCKERFILE
    assert f"SPARK_HOME={site}/pyspark" in DOCKERFILE
    job = COMPOSE["services"]["job"]["command"]
    assert f"{site}/rs_spark/examples/pipeline.py" in job
    assert os.path.isfile(os.path.join(ROOT, "rs_spark", "examples", "pipeline.py"))
    import pyspark  # the same pyspark wheel the image installs: its bin/ has what compose runs

    spark_bin = os.path.join(os.path.dirname(pyspark.__file__), "bin")
    for script in ("spark-class", "spark-submit"):
        assert os.access(os.path.join(spark_bin, script), os.X_OK), f"pyspark ships no bin/{script}"


def test_compose_has_a_master_two_workers_and_a_job_with_valid_arguments():
    from rs_spark.examples.pipeline import parser

    services = COMPOSE["services"]
    assert {"master", "worker1", "worker2", "job"} <= set(services)
    for w in ("worker1", "worker2"):
        assert "spark://master:7077" in services[w]["command"]
    job = services["job"]["command"]
    assert "spark-submit --master spark://master:7077" in job
    argv = shlex.split(job.split("pipeline.py", 1)[1].strip().rstrip('"'))
    args = parser().parse_args(argv)  # SystemExit on an unknown or malformed argument
    # the replay log and outputs live on the shared volume, which every container mounts
    assert args.log_path.startswith("/data/") and args.output.startswith("/data/")
    assert all("data:/data" in svc.get("volumes", []) for svc in services.values())


@pytest.mark.slow
def test_the_build_stage_flow_builds_a_wheel_with_the_shim_from_exactly_the_copied_files(tmp_path):
    """Stage 1 here: the copied files only (no jar from this checkout), `pip wheel --no-deps .` with
    build isolation and PYSPARK_JARS, as in the image; offline, setuptools from a local wheelhouse."""
    import pyspark

    src = tmp_path / "src"
    src.mkdir()
    for path, _ in _copied("build"):
        origin = os.path.join(ROOT, path)
        if os.path.isdir(origin):
            shutil.copytree(origin, src / path, ignore=lambda d, names: [n for n in names if _ignored(_rel(d, n))])
        else:
            shutil.copy2(origin, src / path)
    assert not (src / JAR).exists()
    wheelhouse = tmp_path / "wheelhouse"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    _run([*pip, "download", "--quiet", "-d", str(wheelhouse), "setuptools>=77"], tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHON", "RS_SPARK_SKIP_JVM")}
    env |= {
        "PYSPARK_JARS": os.path.join(os.path.dirname(pyspark.__file__), "jars"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse),
    }
    _run([*pip, "wheel", "--no-cache-dir", "--no-deps", ".", "-w", str(tmp_path / "dist")], src, env)
    (wheel,) = glob.glob(str(tmp_path / "dist" / "*.whl"))
    with zipfile.ZipFile(wheel) as w:
        names = w.namelist()
    assert JAR in names and "pyspark_reactive.py" in names and "rs_spark/examples/sensors.py" in names


def _rel(directory: str, name: str) -> str:
    return os.path.relpath(os.path.join(directory, name), ROOT)


def _run(args: list[str], cwd, env=None) -> None:
    r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"{args} failed:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
