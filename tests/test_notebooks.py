"""Every notebook in notebooks/ runs top to bottom in a real Jupyter kernel (nbclient +
ipykernel, this interpreter), and is stored without outputs."""

from __future__ import annotations

import glob
import os

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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs_top_to_bottom(path, tmp_path):
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    # The kernel is this interpreter (ipykernel's own spec); cwd is a scratch folder.
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except CellExecutionError as e:
        pytest.fail(f"{os.path.basename(path)} failed:\n{e}")
