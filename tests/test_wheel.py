"""The distribution as users get it. A clean clone of HEAD builds a wheel that carries the JVM shim;
the wheel installs into a fresh venv (not editable) and runs, from there, the demo (also three times
under CPU load: it must stop cleanly every time) and a JVM publisher read through Spark; the sdist
carries jvm-shim/ and builds the same wheel offline.
The wheel is built and installed with the README's install commands as written (its ``install``
section), and so are its other two ways, from a git URL and from a clone, each in a fresh venv
(``REPO``: the clean clone, as a file:// URL).

The fresh venv gets pyspark, pyarrow and py4j as links to this interpreter's installed packages
(400 MB not copied again); rs_spark itself comes from the wheel only. Builds run offline
(--no-index) against a wheelhouse of the build requirements, fetched once.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from importlib import metadata

import pytest

from .cpu_load import CpuLoad
from .demo_check import UNDER_LOAD, assert_stopped_cleanly
from .jvm.conftest import FIXTURES, build

pytestmark = pytest.mark.slow  # builds two wheels and an sdist, and starts Spark twice

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSION = tomllib.loads(open(os.path.join(ROOT, "pyproject.toml")).read())["project"]["version"]
JAR = "rs_spark/jvm/jars/rs-spark-jvm.jar"
LINKED = ("pyspark", "pyarrow", "py4j")  # rs_spark's dependencies, reused from this interpreter
# Variables that would make the venv's Python import rs_spark from somewhere else than the wheel.
# PYSPARK_JARS, PYTHON, SPARK_HOME: the builds find pyspark's jars by themselves, as in a user's venv.
FOREIGN = ("PYTHONPATH", "PYTHONHOME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")
FOREIGN += ("SPARK_HOME", "PYSPARK_JARS", "PYTHON", "RS_SPARK_SKIP_JVM")


def _run(args, timeout=600, **kw):
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    assert r.returncode == 0, f"{args} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    return r


class Job:
    """A subprocess started now and checked later; its output goes to a file, so it never blocks on a pipe."""

    def __init__(self, args, log, **kw):
        self.args = args
        self._log = open(log, "w+")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, text=True, **kw)

    def output(self, timeout=600):
        """Its output (stdout and stderr) once it ended with 0; fails the test otherwise."""
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        self._log.seek(0)
        out = self._log.read()
        self._log.close()
        assert rc == 0, f"{self.args} failed ({rc}):\n{out[-6000:]}"
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Dist:
    """The clone, its venv and what was built (paths under one temporary directory)."""

    def __init__(self, base):
        self.base = base
        self.clone = str(base / "clone")
        self.venv = str(base / "venv")
        self.python = os.path.join(self.venv, "bin", "python")
        self.wheelhouse = str(base / "wheelhouse")
        self.run_dir = base / "run"  # cwd of the installed runs: outside the clone
        self.run_dir.mkdir()
        path = os.path.join(self.venv, "bin") + os.pathsep + os.environ.get("PATH", "")
        self.env = {k: v for k, v in os.environ.items() if k not in FOREIGN} | {"PATH": path}
        # Offline: build requirements come from the wheelhouse only.
        self.offline = self.env | {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": self.wheelhouse}

    def pip(self, *args, env=None):
        return _run([self.python, "-m", "pip", "--disable-pip-version-check", *args], env=env or self.offline)

    def start_wheel(self, source, out):
        """``pip wheel`` of ``source`` into ``out``, offline, started in the background."""
        args = [
            self.python,
            "-m",
            "pip",
            "--disable-pip-version-check",
            "wheel",
            "--no-deps",
            "-w",
            str(self.base / out),
        ]
        return Job([*args, source], self.base / f"{out}.log", env=self.offline)

    def wheel_in(self, out):
        (wheel,) = glob.glob(str(self.base / out / "*.whl"))
        return wheel


def install_commands():
    """The README's install commands, in their groups: the pyspark prelude, from a git URL, from a
    clone, and a wheel (each group a list of shell lines, comments and blank lines dropped)."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = re.search(r"<!-- section: install -->(.*?)<!-- end section: install -->", text, re.S)
    assert section, "README.md has no section 'install' (<!-- section: install --> ... <!-- end section: install -->)"
    (block,) = re.findall(r"^```bash\n(.*?)^```$", section.group(1), re.S | re.M)
    groups: list[list[str]] = [[]]
    for line in block.splitlines():
        if line.startswith("#") or not line.strip():
            if groups[-1]:
                groups.append([])
            continue
        groups[-1].append(line)
    groups = [g for g in groups if g]
    assert len(groups) == 4, f"README install block: expected 4 groups of commands, found {groups}"
    return groups


def _shell(lines, repo):
    """The commands as a user types them (``REPO`` replaced), for ``bash -e``."""
    return ["bash", "-ec", "\n".join(lines).replace("REPO", repo)]


def _fresh_venv(path):
    """A venv with pyspark, pyarrow and py4j linked in; its python."""
    _run([sys.executable, "-m", "venv", path])
    python = os.path.join(path, "bin", "python")
    _link_dependencies(python)
    return python


def _clone_head(dest):
    head = _run(["git", "-C", ROOT, "rev-parse", "HEAD"]).stdout.strip()
    _run(["git", "clone", "--quiet", "--no-checkout", ROOT, dest])
    _run(["git", "-C", dest, "checkout", "--quiet", "--detach", head])


def _link_dependencies(venv_python):
    """Symlink this interpreter's pyspark, pyarrow and py4j (packages and dist-info) into the venv."""
    site = _run([venv_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    for name in LINKED:
        dist = metadata.distribution(name)
        tops = {f.parts[0] for f in dist.files or [] if f.parts[0] != ".."}
        for top in tops:
            src = os.path.join(str(dist.locate_file("")), top)
            if os.path.exists(src) and not os.path.exists(os.path.join(site, top)):
                os.symlink(src, os.path.join(site, top))


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    d = Dist(tmp_path_factory.mktemp("wheel"))
    _clone_head(d.clone)
    _run([sys.executable, "-m", "venv", d.venv])
    _link_dependencies(d.python)
    # The only download: the build requirements (and `build`, for the sdist), from PyPI or pip's cache.
    d.pip("download", "--quiet", "-d", d.wheelhouse, "setuptools>=77", "build", env=d.env)
    d.pip("install", "--quiet", "build")
    _run([d.python, "-m", "build", "--sdist", "--outdir", str(d.base / "sdist"), d.clone], env=d.offline)
    (d.sdist,) = glob.glob(str(d.base / "sdist" / "*.tar.gz"))
    prelude, _, _, (build_wheel, *install_wheel) = install_commands()
    _run(_shell(prelude, d.clone), env=d.offline, cwd=d.run_dir)  # pyspark: the linked one satisfies it
    # The two wheel builds overlap (javac, mostly); the sdist is made before, as both write egg-info in the clone.
    # The clone's: the README's command, in the clone.
    from_clone = Job(_shell([build_wheel], d.clone), d.base / "from-clone.log", env=d.offline, cwd=d.clone)
    try:
        d.start_wheel(d.sdist, "from-sdist").output()
        from_clone.output()
    finally:
        from_clone.stop()
    (d.wheel,) = glob.glob(os.path.join(d.clone, "dist", "*.whl"))
    d.sdist_wheel = d.wheel_in("from-sdist")
    _run(_shell(install_wheel, d.clone), env=d.offline, cwd=d.clone)  # the README's `pip install dist/...whl`
    d.pip("check")  # the linked pyspark, pyarrow and py4j satisfy the wheel's requirements
    return d


def test_the_wheel_carries_the_shim_jar_of_this_version_and_no_test_classes(dist):
    with zipfile.ZipFile(dist.wheel) as w:
        assert JAR in w.namelist()
        with w.open(JAR) as f, zipfile.ZipFile(f) as jar:
            manifest = jar.read("META-INF/MANIFEST.MF").decode()
            classes = jar.namelist()
    assert f"Implementation-Version: {VERSION}" in manifest and "Implementation-Title: rs-spark-jvm" in manifest
    assert "rsspark/jvm/Shim.class" in classes
    assert not [c for c in classes if c.startswith(("rsspark/bench/", "rsspark/fixtures/"))]


def test_the_sdist_carries_the_jvm_sources_and_builds_an_identical_wheel_offline(dist):
    with tarfile.open(dist.sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    wanted = {
        "setup.py",
        "jvm-shim/build",
        "jvm-shim/rs_spark_build.py",
        "jvm-shim/src/main/java/rsspark/jvm/Shim.java",
    }
    assert wanted <= names
    assert not [n for n in names if n.endswith(".jar")], "an sdist is sources: each wheel compiles its jar"
    with zipfile.ZipFile(dist.wheel) as a, zipfile.ZipFile(dist.sdist_wheel) as b:
        assert os.path.basename(dist.wheel) == os.path.basename(dist.sdist_wheel)
        assert sorted(a.namelist()) == sorted(b.namelist())
        differ = [n for n in a.namelist() if a.read(n) != b.read(n)]
    assert differ == [], f"the sdist's wheel differs from the clone's in {differ}"


def test_rs_spark_comes_from_the_wheel_in_the_fresh_venv(dist):
    code = "import json, rs_spark, rs_spark.jvm as j; print(json.dumps([rs_spark.__file__, rs_spark.__version__, "
    code += "j.jar_path()]))"
    where, version, jar = json.loads(_run([dist.python, "-c", code], env=dist.env, cwd=dist.run_dir).stdout)
    assert where.startswith(dist.venv + os.sep) and version == VERSION
    assert jar.startswith(dist.venv + os.sep)  # jar_path() checked its manifest's version too


def test_the_wheel_registers_format_reactive_with_a_plain_session(dist):
    """Spark's own discovery of pyspark_reactive, no rs_spark helper called (tests/test_discovery.py)."""
    from .test_discovery import PLAIN, plain_session  # that module imports this one's helpers

    assert plain_session(dist.python, dist.run_dir) == PLAIN


READ_JVM = """
import json, sys
import rs_spark
from rs_spark.spark import local_session
from rs_spark.spark.jvm import jvm, read_jvm_stream

spark = local_session("rs_spark-wheel")
try:
    j = jvm(spark)  # the installed package's jar joins the driver
    df = read_jvm_stream(spark, j.rsspark.jvm.Sources.submissionLongs(3000), "value:int64", batch_rows=1000)
    q = df.writeStream.format("memory").queryName("longs").start()
    q.processAllAvailable()
    q.stop()
    values = [r[0] for r in spark.sql("select value from longs order by value").collect()]
    # Option jvmPublisher: the reader (a Python worker) starts a JVM of its own with the installed jar.
    opt = (spark.read.format("reactive").schema("value LONG").option("jvmPublisher", "rsspark.fixtures.Feeds#longs")
           .option("jvmJars", sys.argv[1]).option("publisher.count", "500").load())
    worker = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("rs_spark").__file__).first()
    print(json.dumps({"values": values == list(range(3000)), "option_rows": opt.count(), "worker": worker}))
finally:
    spark.stop()
"""


@pytest.fixture(scope="module")
def bare(dist):
    """A venv without pyspark, with setuptools >= 77 (offline): for builds that cannot find pyspark's jars."""
    venv = str(dist.base / "bare")
    _run([sys.executable, "-m", "venv", venv])
    python = os.path.join(venv, "bin", "python")
    _run([python, "-m", "pip", "install", "--quiet", "setuptools>=77"], env=dist.offline)
    return python


def _build_in_place(python, dist, out, **env):
    """pip wheel of the clone with ``python``, no build isolation (the build sees only that venv)."""
    args = [python, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation", "-w", str(dist.base / out)]
    return subprocess.run(
        [*args, dist.clone], capture_output=True, text=True, timeout=600, env=dist.offline | env, cwd=dist.run_dir
    )


def test_a_build_that_finds_no_pyspark_jars_fails_saying_what_is_missing_and_how_to_fix_it(dist, bare):
    r = _build_in_place(bare, dist, "no-jars")
    assert r.returncode != 0 and not glob.glob(str(dist.base / "no-jars" / "*.whl"))
    out = r.stdout + r.stderr
    assert "no pyspark jars were found. Looked at:" in out and "PYSPARK_JARS: not set" in out, out[-4000:]
    assert 'pip install "pyspark>=' in out and "PYSPARK_JARS=<site-packages>/pyspark/jars pip wheel ." in out
    assert "RS_SPARK_SKIP_JVM=1 pip wheel ." in out


def test_rs_spark_skip_jvm_builds_a_wheel_without_the_jar_and_says_so(dist, bare):
    r = _build_in_place(bare, dist, "no-jvm", RS_SPARK_SKIP_JVM="1")
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert "RS_SPARK_SKIP_JVM=1: this rs_spark wheel has NO JVM shim jar" in r.stdout + r.stderr
    (wheel,) = glob.glob(str(dist.base / "no-jvm" / "*.whl"))
    with zipfile.ZipFile(wheel) as w:
        assert JAR not in w.namelist() and "rs_spark/jvm/gateway.py" in w.namelist()


@pytest.fixture(scope="module")
def demo(dist):
    """The demo from the install, started before the JVM read, so its run (until the first window
    average reaches its Subscriber) overlaps that test instead of adding to the run."""
    args = [dist.python, "-m", "rs_spark", "demo", "--batches", "1", "--deliveries", "1", "--subscriber-ms", "1"]
    args += ["--chart", ""]
    job = Job(args, dist.base / "demo.log", env=dist.env, cwd=dist.run_dir)
    yield job
    job.stop()


def test_a_jvm_publisher_reads_through_spark_from_the_installed_wheel(dist, demo):
    build()  # the fixtures jar (test publishers) of this checkout: never in the wheel
    r = _run([dist.python, "-c", READ_JVM, FIXTURES], env=dist.env, cwd=dist.run_dir, timeout=300)
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["values"] and got["option_rows"] == 500
    assert got["worker"].startswith(dist.venv + os.sep), "Spark's Python workers must run the installed rs_spark"


def test_the_demo_runs_from_the_installed_wheel(demo):
    out = demo.output(timeout=600)
    # Records arrived at both ends (exact data through Spark: the JVM read above).
    m = re.search(r"([1-9]\d*) sensor records in \d+ micro-batches \(none above 2000\); ([1-9]\d*) window", out)
    assert m, out[-3000:]
    assert "Subscriber signalled: on_complete" in out, out[-3000:]
    spark_error = re.search(r"^[\d/]+ [\d:]+ ERROR ", out, re.M)  # a Spark log line at ERROR level
    assert "Traceback" not in out and not spark_error, out[-5000:]


@pytest.mark.timeout(3 * 900 + 60)
def test_the_installed_demo_stops_cleanly_every_run_under_cpu_load(dist):
    """Issue 32: the demo from the installed wheel stops at a micro-batch boundary under load, with no
    aborted batch and no traceback (pyspark's accumulator server included), three runs in a row."""
    for i in range(3):
        run_dir = dist.base / f"demo-under-load-{i}"
        run_dir.mkdir()
        with CpuLoad(seconds=900):
            job = Job([dist.python, "-m", "rs_spark", *UNDER_LOAD], run_dir / "out.log", env=dist.env, cwd=run_dir)
            try:
                out = job.output(timeout=900)
            finally:
                job.stop()
        assert_stopped_cleanly(out, f"run {i + 1} of 3")


def test_the_readme_installs_from_a_git_url_and_from_a_clone_work_as_written(dist):
    """Each in a fresh venv (pyspark linked in, as the README's first command would install it),
    offline, ``REPO`` the clean clone; both builds run at once."""
    _, by_url, by_clone, _ = install_commands()
    repo = "file://" + dist.clone
    jobs = []
    for name, lines in (("url", by_url), ("clone", by_clone)):
        python = _fresh_venv(str(dist.base / f"venv-{name}"))
        env = dist.offline | {"PATH": os.path.dirname(python) + os.pathsep + os.environ.get("PATH", "")}
        cwd = dist.base / f"install-{name}"
        cwd.mkdir()
        jobs.append((python, env, Job(_shell(lines, repo), dist.base / f"install-{name}.log", env=env, cwd=cwd)))
    try:
        for python, env, job in jobs:
            job.output(timeout=900)
            code = "import json, rs_spark, rs_spark.jvm as j; print(json.dumps([rs_spark.__file__, j.jar_path()]))"
            where, jar = json.loads(_run([python, "-c", code], env=env, cwd=dist.run_dir).stdout)
            venv = os.path.dirname(os.path.dirname(python))
            assert where.startswith(venv + os.sep) and jar.startswith(venv + os.sep), (where, jar)
    finally:
        for _, _, job in jobs:
            job.stop()
