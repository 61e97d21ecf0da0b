"""The type matrix's real queries in America/New_York: the user's process, Spark's JVM (and so the
session time zone) and its Python workers all in a zone with DST, as a user there runs them.

The zone of a JVM is fixed when it starts, so the paths run in a pytest of their own with ``TZ`` set
(the shared session of this run stays in this process's zone). Its rows include a wall clock in the
DST gap and one in the DST overlap (tests/spark/type_rows.py).
"""

from __future__ import annotations

import os
import subprocess
import sys

from ..conftest import ROOT

PATHS = "(this_process and not partitions) or a_factory or subscriber_gets and (rows or dicts)"
"""In New York: the user's process converting (read_stream), Spark's workers converting (a factory), and
the Subscriber's process converting back (rows, dicts); the other paths share these conversions."""


def test_every_path_gives_what_pyspark_gives_in_new_york():
    env = dict(os.environ, TZ="America/New_York", PYTHONPATH=ROOT)
    probe = "import datetime as d; print(d.datetime(2026, 7, 1, 12).astimezone().utcoffset())"
    assert subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True).stdout.strip() == (
        "-1 day, 20:00:00"
    ), "TZ does not reach a child process here: the test would prove nothing"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/spark/test_types_paths.py",
            "-k",
            PATHS,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = (r.stdout + r.stderr)[-4000:]
    assert r.returncode == 0, f"the paths in America/New_York failed:\n{tail}"
    assert "\n4 passed" in r.stdout, tail
