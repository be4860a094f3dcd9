"""Notebook cells read as IPython reads them: magics, shell escapes and help requests are not syntax errors, a
cell in another language is skipped, and findings keep the cell's own line and column."""
import json

import pytest

from tapelab.lint import cells
from tapelab.lint.cells import cell_code, read_cell

BUGGY = "x = tf.constant(3.0)\nwith tf.GradientTape() as tape:\n    y = x * x\ng = tape.gradient(y, x)\n"
MAGICS = ["%tensorflow_version 2.x\n%matplotlib inline\n!pip install -q tensorflow",
          "%%bash\nif [ -d logs ]; then ls logs; fi",
          "%%writefile config.py\nBATCH = (",
          "files = !ls\ntf.GradientTape?\n%load_ext tensorboard",
          "%%time\nfor i in range(2):\n    !echo hi\n    total = i"]


@pytest.fixture(params=["ipython", "no ipython"])
def reader(request, monkeypatch):
    """Each test twice: with IPython's transformer (the course's env) and without it (the linter alone)."""
    if request.param == "no ipython":
        monkeypatch.setattr(cells, "_transformer", lambda: None)
    return request.param


def test_a_notebook_of_magics_has_no_syntax_error(reader, write_notebook, run_lint):
    """Do line and cell magics, shell escapes (alone or assigned) and help requests give no finding at all,
    with or without IPython installed?"""
    status, out, _ = run_lint(write_notebook(MAGICS), "--format", "json")
    assert (status, json.loads(out)) == (0, [])


def test_a_cell_in_another_language_is_skipped_and_a_python_cell_magic_is_read(reader):
    """Is `%%bash` (not Python) skipped, while `%%time`'s body is Python with its lines where Jupyter counts them?"""
    assert cell_code("%%bash\nls -la") is None and cell_code("\n%%writefile a.py\nx = (") is None
    assert cell_code("%%time\nx = 1\ny = 2") == "\nx = 1\ny = 2"


def test_findings_after_magics_keep_the_cells_line_and_column(reader, write_notebook, run_lint):
    """Is a pitfall after magic lines reported at its line in its cell, and one inside `%time stmt` at its
    column in the cell, not at the column of the statement with `%time` removed?"""
    timed = "x = tf.constant(3.0)\nwith tf.GradientTape() as tape:\n    y = x * x\n%time g = tape.gradient(y, x)"
    path = write_notebook(["%pip install -q keras\n!nvidia-smi\n" + BUGGY, timed])
    status, out, _ = run_lint(path, "--format", "json")
    found = [(f["cell"], f["line"], f["column"], f["rule"]) for f in json.loads(out)]
    assert status == 1 and found == [(1, 6, 22, "TPL101"), (2, 4, 28, "TPL101")]
    assert read_cell("%time y = f(x)")[1] == {1: 6}


def test_a_real_syntax_error_beside_magics_is_still_reported(reader, write_notebook, run_lint):
    """Is a cell that is broken Python reported as TPL001 even when it also holds magics?"""
    status, out, _ = run_lint(write_notebook(["%matplotlib inline\ndef f(:\n    pass"]), "--format", "json")
    assert status == 1 and [(f["cell"], f["line"], f["rule"]) for f in json.loads(out)] == [(1, 2, "TPL001")]
