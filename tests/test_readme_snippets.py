"""The README's code as a new user runs it: the two snippets ("Read a Publisher", then "Write into a
Subscriber", which uses the first one's ``df``) copied into one script, run by a fresh interpreter
from an empty folder with a private, empty TMPDIR, and nothing added: no ``spark.stop()``, no
``rs_spark.stop_served()``, no cleanup. (tests/test_docs.py runs them too, in a harness that
cleans up after each page, so it cannot see what the interpreter's exit does.)

The script must print its own output and nothing else: no ERROR line, no traceback, no Spark WARN
line, no progress bar; and leave nothing in the temp directory or the folder it ran in.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("source-example", "sink-example")  # the README's sections, in the order a user copies them
# The JVM prints this itself before any logging starts (Spark 4 runs with that module; see
# rs_spark.spark.local_session): the one line a quiet session cannot turn off.
JVM_NOTICE = "WARNING: Using incubator modules: jdk.incubator.vector"


def readme_section(name: str) -> str:
    """The python fence between the README's ``<!-- section: NAME -->`` and ``<!-- end section: NAME -->``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(rf"<!-- section: {name} -->\n(.*?)<!-- end section: {name} -->", text, re.S)
    assert section, f"README.md has no section {name!r}"
    fences = re.findall(r"^```python\n(.*?)^```$", section.group(1), re.S | re.M)
    assert len(fences) == 1, f"README.md section {name!r}: expected one python fence, found {len(fences)}"
    return fences[0]


def test_the_readme_sections_are_the_snippets_a_user_copies():
    source, sink = (readme_section(n) for n in SECTIONS)
    assert "local_session()" in source and "read_stream" in source
    assert "write_stream" in sink and "printer.done.wait" in sink


@pytest.mark.slow
def test_the_readme_snippets_print_only_their_own_output_and_leave_nothing_behind(tmp_path):
    script = tmp_path / "readme.py"
    script.write_text("".join(readme_section(n) for n in SECTIONS), encoding="utf-8")
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    # A user's shell: none of the variables this test run may have set for Spark's workers.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    out = subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=dict(env, TMPDIR=str(tmp)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-5000:]
    # stdout: the source snippet's show() of the 3000 readings per sensor, then the five rows the sink
    # snippet's Printer prints; nothing between or after them (no progress bar, no log line).
    rule = re.escape("+--------+---+")
    table = [rule, re.escape("|  sensor|  n|"), rule, *(rf"\|sensor-{i}\|\s*\d+\|" for i in range(8)), rule, ""]
    rows = [str({"id": i, "amount": 1.5 * i}) for i in range(5)]
    lines = out.stdout.splitlines()
    assert len(lines) == len(table) + len(rows), out.stdout
    for pattern, line in zip(table, lines, strict=False):
        assert re.fullmatch(pattern, line), out.stdout
    counts = [int(re.search(r"(\d+)\|$", line).group(1)) for line in lines[3:11]]
    assert sum(counts) == 3000, out.stdout
    assert lines[len(table) :] == rows, out.stdout
    # stderr: the JVM's own notice at most. An ERROR line, a traceback (e.g. a listener still
    # registered when the interpreter exits), a Spark WARN line or a progress bar fails here.
    noise = [line for line in out.stderr.splitlines() if line.strip() and line != JVM_NOTICE]
    assert noise == [], out.stderr[-5000:]
    assert sorted(p.name for p in tmp.iterdir()) == [], "the snippets left these in TMPDIR"
    assert sorted(p.name for p in cwd.iterdir()) == [], "the snippets left these in the folder they ran in"
