"""Run All on the student notebooks, every exercise left as its stub.

A student who runs a notebook top to bottom before solving anything must reach the last cell: only the
exercises' own check cells may fail (with "not attempted"), and demonstrations of expected errors
(cells tagged `raises-exception`). A demo that needs a solved exercise must say so, not crash.
"""
import os

import nbformat
import pytest
from nbclient import NotebookClient

from tapelab.paths import assignment_names

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = [pytest.mark.notebooks, pytest.mark.heavy(65)]  # seconds for all six, about (one kernel at a time)


@pytest.mark.parametrize("notebook", assignment_names())
def test_run_all_with_stubs_reaches_the_end(notebook, monkeypatch):
    """Does Run All on the untouched student notebook fail only in exercise check cells, as not attempted?"""
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    path = os.path.join(ROOT, "notebooks", f"{notebook}.ipynb")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True, store_widget_state=False,
                   resources={"metadata": {"path": os.path.dirname(path)}}).execute()
    unexpected = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        errors = [out.ename for out in cell.get("outputs", []) if out.output_type == "error"]
        if cell.metadata.get("nbgrader", {}).get("grade", False):  # an exercise's check cell
            if errors != ["NotAttempted"]:
                unexpected.append((cell.id, errors or "no error: the stub passed its check?"))
        elif errors and "raises-exception" not in cell.metadata.get("tags", []):
            unexpected.append((cell.id, errors))
    assert not unexpected, f"{notebook}: cells that fail in Run All with stubs: {unexpected}"
    last = next(c for c in reversed(nb.cells) if c.cell_type == "code")
    assert last.get("execution_count") is not None, f"{notebook}: Run All did not reach the last code cell"
