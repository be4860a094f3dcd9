"""Every exercise checker, three ways: the reference passes (visible and hidden tests), each
catalogued mistake fails naming its cause, and the untouched stub reports "not attempted".

The test cell's own source is executed, as nbgrader does, in a namespace holding the answer.
"""
import re

import keras
import nbformat
import numpy as np
import pytest
import tensorflow as tf

import tapelab.exercise
from answers import define, mistakes, reference_answers
from course import grade_cell_of
from tapelab.feedback import Incorrect, NotAttempted
from tapelab.paths import SOLUTIONS, assignment_names

_IMPORT = re.compile(r"^from tapelab\.exercises\.\w+ import .*$", re.M)


def _cells(notebook):
    """grade_id -> source for every nbgrader cell, and the line importing the exercises."""
    nb = nbformat.read(SOLUTIONS / f"{notebook}.ipynb", as_version=4)
    setup = next(c.source for c in nb.cells if c.get("id") == "setup")
    graded = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells if "nbgrader" in c.metadata}
    return _IMPORT.search(setup).group(0), graded


def _run(notebook, answer_id, answer_code, monkeypatch):
    """Define `answer_code`, then execute the exercise's full test cell (visible and hidden)."""
    import_line, graded = _cells(notebook)
    namespace = {"tf": tf, "np": np, "keras": keras}
    exec(import_line, namespace)
    define(answer_code, f"{notebook}:{answer_id}", namespace)
    monkeypatch.setattr(tapelab.exercise, "_user_namespace", lambda: namespace)
    exec(graded[grade_cell_of(answer_id)], namespace)


REFERENCE = [(nb, gid) for nb in assignment_names() for gid in sorted(reference_answers(nb))]
MISTAKES = [(nb, gid, m) for nb in assignment_names() for gid, ms in sorted(mistakes(nb).items()) for m in ms]


@pytest.mark.parametrize("notebook,answer_id", REFERENCE)
def test_reference_passes_visible_and_hidden_tests(notebook, answer_id, monkeypatch):
    """Does the solution notebook's own answer pass the whole test cell?"""
    _run(notebook, answer_id, reference_answers(notebook)[answer_id], monkeypatch)


@pytest.mark.parametrize("notebook,answer_id", REFERENCE)
def test_every_exercise_has_two_catalogued_mistakes(notebook, answer_id):
    """Is every exercise proven against at least two realistic mistakes?"""
    assert len(mistakes(notebook).get(answer_id, [])) >= 2


@pytest.mark.parametrize(
    "notebook,answer_id,mistake", MISTAKES, ids=[f"{nb}-{gid}-{m.name}" for nb, gid, m in MISTAKES]
)
def test_each_mistake_fails_naming_its_cause(notebook, answer_id, mistake, monkeypatch):
    """Is each catalogued mistake rejected, with a message that names it?"""
    with pytest.raises(Incorrect) as failure:
        _run(notebook, answer_id, mistake.code, monkeypatch)
    assert mistake.says in str(failure.value)


@pytest.mark.parametrize("notebook,answer_id", REFERENCE)
def test_untouched_stub_is_not_attempted(notebook, answer_id, monkeypatch):
    """Does the stub nbgrader generates (`raise NotImplementedError()`) report "not attempted"?"""
    reference = reference_answers(notebook)[answer_id]
    header = reference.strip().splitlines()[0]
    stub = (f"{header}\n    # YOUR CODE HERE\n    raise NotImplementedError()\n" if header.startswith("def ")
            else "# YOUR CODE HERE\n")
    with pytest.raises(NotAttempted):
        _run(notebook, answer_id, stub, monkeypatch)


@pytest.mark.parametrize("notebook,answer_id", REFERENCE)
def test_revealed_solution_is_the_notebooks_solution(notebook, answer_id):
    """Does `exN_M.solution()` reveal the same code as the instructor notebook's answer cell?"""
    import_line, _ = _cells(notebook)
    namespace = {}
    exec(import_line, namespace)
    exercise = namespace[answer_id.removesuffix("_answer")]
    assert exercise.solution_code.strip() == reference_answers(notebook)[answer_id].strip()
