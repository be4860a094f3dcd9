"""tools/practice.py on tiny synthetic notebooks: sections and their tasks, overlap with earlier cells, exit status."""
import importlib.util
import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tapelab.paths import REPO

_spec = importlib.util.spec_from_file_location("practice", REPO / "tools" / "practice.py")
practice = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(practice)

DEMO = """with tf.GradientTape() as tape:
    y = x ** 3 + 2 * x
dy_dx = tape.gradient(y, x)
print(dy_dx)"""
COPIED = "def slope(x):\n    ### BEGIN SOLUTION\n" + "\n".join("    " + line for line in DEMO.splitlines()) \
    + "\n    ### END SOLUTION"
UNRELATED = """def slope(x):
    ### BEGIN SOLUTION
    import json
    table = {k: [v for v in range(k)] for k in (4, 5, 6)}
    return json.dumps(sorted(table.items()), indent=None)
    ### END SOLUTION"""


def answer_cell(source: str, grade_id: str = "ex1_1_answer"):
    return new_code_cell(source, metadata={"nbgrader": {"solution": True, "grade": False, "grade_id": grade_id}})


def graded_cell(grade_id: str = "ex1_1_test"):
    return new_code_cell("ex1_1.check(slope)", metadata={"nbgrader": {"solution": False, "grade": True,
                                                                      "grade_id": grade_id, "points": 1}})


def notebook(tmp_path, answer: str, name: str = "01_x.ipynb", summary_words: int = 3):
    nb = new_notebook(cells=[
        new_markdown_cell("# 01 · A title\n\nIn this notebook you will..."),
        new_markdown_cell("## Setup"),
        new_code_cell("import tensorflow as tf"),
        new_markdown_cell("## 1. A demo\n\nRun the tape on a cubic."),
        new_code_cell("x = tf.Variable(2.0)"),
        new_code_cell(DEMO),
        new_markdown_cell("### Exercise 1.1: The slope\n\n```\n## not a heading\n```"),
        answer_cell(answer),
        graded_cell(),
        new_markdown_cell("## 2. Predict first\n\nWhich gradient is `None`?"),
        new_code_cell("predict('which is None', choices=['a', 'b'])"),
        new_markdown_cell("## 3. Only a demo\n\nA model's `predict` is no question."),
        new_code_cell("model.predict(x)"),
        graded_cell("ex1_1_test2"),
        new_markdown_cell("## Summary\n\n" + " ".join(["word"] * summary_words)),
        new_code_cell("print('after the core path')"),
        new_markdown_cell("## 4. Optional: more"),
        new_code_cell("x + 1"),
    ])
    path = tmp_path / name
    nbformat.write(nb, str(path))
    return path


def test_sections_with_and_without_a_task(tmp_path):
    """Does an answer cell or a predict() call make a task, while model.predict, an exercise's own test cell and
    a heading inside a code fence do not; are Setup, Summary and Optional sections not teaching sections?"""
    result = practice.measure(notebook(tmp_path, COPIED))
    got = {s["title"]: (s["teaching"], s["task"]) for s in result["sections"]}
    assert got == {"Setup": (False, False), "1. A demo": (True, True), "2. Predict first": (True, True),
                   "3. Only a demo": (True, False), "Summary": (False, False), "4. Optional: more": (False, False)}


def test_a_copied_answer_overlaps_fully_and_an_unrelated_one_barely(tmp_path):
    """Does an answer retyped from an earlier demo cell score 100% against that cell, and an unrelated answer
    (sharing only a few operators) score low?"""
    copied = practice.measure(notebook(tmp_path, COPIED))["exercises"]
    assert [(e["id"], e["overlap"], e["cell"]) for e in copied] == [("ex1_1_answer", 1.0, 5)]
    unrelated = practice.measure(notebook(tmp_path, UNRELATED, "02_y.ipynb"))["exercises"][0]
    assert unrelated["overlap"] < 0.3


def test_tokens_leave_out_comments_strings_and_the_def_line():
    """Are comments, strings and the stub's def line left out, and magics skipped without an error?"""
    assert practice.tokens("%timeit f(1)  # a comment\ny = f('text', 2)") == ["y", "f", "2"]
    assert practice.tokens(practice.model_answer(COPIED))[:3] == ["with", "tf", "GradientTape"]
    assert practice.overlap(["a", "a", "b"], ["a", "b", "b"]) == pytest.approx(2 / 3)


def test_core_path_counts_words_and_cells_before_the_summary(tmp_path):
    """Are markdown words and code cells counted only up to the Summary heading?"""
    result = practice.measure(notebook(tmp_path, COPIED, summary_words=500))
    assert result["core_code_cells"] == 8
    words = sum(len(c.source.split()) for c in nbformat.read(str(tmp_path / "01_x.ipynb"), 4).cells[:14]
                if c.cell_type == "markdown")
    assert result["core_words"] == words < 60


def test_exit_status_and_json(tmp_path, capsys):
    """Is the exit 1 when a section lacks a task or an answer is copied, 2 for a missing file, and does
    --json print the same measurements?"""
    assert practice.main([str(notebook(tmp_path, COPIED)), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["sections_without_task"] == 1 and out["summary"]["exercises_at_or_over_70"] == 1
    assert practice.main([str(tmp_path / "missing.ipynb")]) == 2
    assert "no such notebook" in capsys.readouterr().err


def test_exit_status_zero_when_every_threshold_holds(tmp_path, capsys):
    """Is the exit 0 when every teaching section has a task, no answer is retyped and the core path is short?"""
    path = notebook(tmp_path, UNRELATED)
    nb = nbformat.read(str(path), 4)
    nb.cells[12].source = "quick_check('shape', (3,))"
    nbformat.write(nb, str(path))
    assert practice.main([str(path)]) == 0
    assert capsys.readouterr().out.strip().endswith("OK")


@pytest.mark.parametrize("shares, ok", [((0.6, 0.6, 0.5), False), ((0.5, 0.54, 0.69), True), ((0.1, 0.1, 0.7), False)])
def test_median_and_per_exercise_thresholds(shares, ok):
    """Does a median of 55% or more fail even with every exercise under 70%, and one exercise at 70% fail
    with a low median?"""
    result = {"notebook": "x.ipynb", "sections": [], "core_words": 10, "core_code_cells": 1,
              "exercises": [{"overlap": s} for s in shares]}
    assert practice.verdict([result])["ok"] is ok


@pytest.mark.parametrize("name", sorted(p.stem for p in (REPO / "solutions").glob("[0-9][0-9]_*.ipynb")))
def test_every_teaching_section_of_the_course_gives_the_student_something_to_do(name):
    """Does each teaching section of each instructor notebook hold an exercise or a prediction (issue 51)? The
    tool's other measures (overlap, core-path length) are reported by `python tools/practice.py`, not held here."""
    result = practice.measure(REPO / "solutions" / f"{name}.ipynb")
    bare = [s["title"] for s in result["sections"] if s["teaching"] and not s["task"]]
    assert result["sections"] and not bare, f"{name}: sections without a task: {bare}"
