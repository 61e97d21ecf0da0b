"""Every notebook in notebooks/ runs top to bottom in a real Jupyter kernel (nbclient +
ipykernel, this interpreter; one kernel for all, see ``kernel``), and is stored without outputs.

A run shows the notebook's own output only (no ERROR or WARN line, no traceback, no progress bar,
no reported loss; the JVM's start-up notice aside), and leaves nothing in the kernel's TMPDIR."""

from __future__ import annotations

import glob
import os
import re

import nbformat
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))


def test_there_are_the_four_notebooks():
    names = {os.path.basename(p) for p in NOTEBOOKS}
    assert {"quickstart.ipynb", "backpressure.ipynb", "write_to_subscriber.ipynb", "jvm_publisher.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, f"{path}: clear outputs before committing"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """One Jupyter kernel (ipykernel's own spec: this interpreter; cwd a scratch folder) for the
    notebooks, in turn. A kernel and a Spark JVM per notebook cost half the run; each notebook still
    starts and stops its own SparkSession, and starts with an empty namespace (``%reset -f``), so a
    name it forgot to import or define fails as in a fresh kernel."""
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    tmp = tmp_path_factory.mktemp("notebooks-tmp")
    km.start_kernel(cwd=str(tmp_path_factory.mktemp("notebooks")), env=dict(os.environ, TMPDIR=str(tmp)))
    km.tmpdir = tmp  # what the notebooks' tempfile calls use: each must leave it as it found it
    yield km
    km.shutdown_kernel(now=True)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs_top_to_bottom(path, kernel):
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    before = sorted(p.name for p in kernel.tmpdir.iterdir())
    nb.cells.insert(0, nbformat.v4.new_code_cell("%reset -f"))  # nothing left from the notebook before
    client = NotebookClient(nb, km=kernel, timeout=300)
    try:
        client.execute()
    except CellExecutionError as e:
        kernel.restart_kernel(now=True)  # the next notebook starts clean, not in this one's wreckage
        pytest.fail(f"{os.path.basename(path)} failed:\n{e}")
    noise = [(i, line) for i, line in _stream_lines(nb) if NOISE.search(line) and line != JVM_NOTICE]
    assert noise == [], f"{os.path.basename(path)}: cells printed more than their own output: {noise}"
    left = sorted(set(p.name for p in kernel.tmpdir.iterdir()) - set(before))
    assert left == [], f"{os.path.basename(path)} left {left} in its temp directory"


# What a notebook must not show: a Spark log line at WARN or ERROR (or a logged WARNING), a
# traceback, a progress bar, or a loss reported after a normal run.
NOISE = re.compile(r"\b(ERROR|WARN|WARNING)\b|Traceback|\[Stage \d+|\bare lost\b")
# The JVM prints this itself before any logging starts (see rs_spark.spark.local_session).
JVM_NOTICE = "WARNING: Using incubator modules: jdk.incubator.vector"


def _stream_lines(nb):
    """(cell index, line) of every stdout/stderr line the run printed."""
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                for line in out.get("text", "").splitlines():
                    yield i, line
