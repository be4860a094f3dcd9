"""One line for hints everywhere: each exercise's text names its hints as `exN_M.hint()`, then `hint(2)`, ...
up to its last tier, the number of tiers its checker has (hints + the last, from the answers)."""
import importlib
import re

import nbformat
import pytest

from tapelab.paths import SOLUTIONS, assignment_names


def _texts(name: str) -> dict[str, str]:
    """grade id stem (ex1_2) -> the markdown cells right before its answer cell, joined."""
    cells = nbformat.read(SOLUTIONS / f"{name}.ipynb", as_version=4).cells
    texts = {}
    for i, cell in enumerate(cells):
        if cell.metadata.get("nbgrader", {}).get("solution"):
            start = i
            while start > 0 and cells[start - 1].cell_type == "markdown":
                start -= 1
            texts[cell.metadata.nbgrader.grade_id.removesuffix("_answer")] = "\n".join(c.source for c in cells[start:i])
    return texts


@pytest.mark.parametrize("name", assignment_names())
def test_every_exercise_names_its_hints_in_one_form(name):
    """Does every exercise's text say `exN_M.hint()`, then `hint(2)`, ... `hint(T)` with T its checker's tiers?"""
    module = importlib.import_module(f"tapelab.exercises.{name.split('_', 1)[1]}")
    texts = _texts(name)
    assert texts
    for ex, text in texts.items():
        tiers = len(getattr(module, ex).hints) + 1
        line = f"`{ex}.hint()`, then " + ", ".join(f"`hint({k})`" for k in range(2, tiers + 1))
        assert re.search(re.escape(line) + r"(?!, `hint)", text), (ex, tiers, text[-400:])
