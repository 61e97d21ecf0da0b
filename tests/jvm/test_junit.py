"""The shim's JUnit 5 tests (jvm-shim/src/test), run through `bash jvm-shim/build test`."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from .conftest import ROOT


def test_jvm_side_junit5_suite_passes():
    r = subprocess.run(
        ["bash", os.path.join(ROOT, "jvm-shim", "build"), "test"],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHON=sys.executable),  # this interpreter's pyspark jars, not <root>/.venv's
    )
    out = r.stdout + r.stderr
    ok = re.search(r"\[\s*(\d+) tests successful", out)
    failed = re.search(r"\[\s*(\d+) tests failed", out)
    assert r.returncode == 0 and ok and failed and failed.group(1) == "0", out[-4000:]
    assert int(ok.group(1)) >= 20
