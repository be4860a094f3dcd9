"""Fixture submissions for `tapelab grade`, built from the released notebooks like real hand-ins.

The course holds the real 01_basic_tape and a tiny TensorFlow-free `09_fixture` notebook (one
answer, one test with a hidden part), which keeps the runs that only need *some* kernel cheap.
"""
from __future__ import annotations

import atexit
import copy
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from answers import reference_answers
from course import round_trip_submissions
from tapelab.paths import SOLUTIONS
from tapelab.release import nbgrader_env, prepare_course

BASIC, TINY = "01_basic_tape", "09_fixture"
TINY_HIDDEN = 'assert answer() + 0 == 42, "hidden check of answer()"'


def _nbgrader(grade_id: str, **flags) -> dict:
    meta = {"grade": False, "locked": False, "solution": False, "task": False, "schema_version": 3,
            "grade_id": grade_id}
    meta.update(flags)
    return {"nbgrader": meta}


def tiny_solution() -> nbformat.NotebookNode:
    """A one-exercise course notebook: `answer()` must return 42."""
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                               "language": "python"}})
    nb.cells = [
        new_markdown_cell("# Fixture\nWrite `answer()`."),
        new_code_cell("import time\n", id="setup9"),
        new_code_cell("def answer():\n    ### BEGIN SOLUTION\n    return 42\n    ### END SOLUTION\n",
                      metadata=_nbgrader("ex9_1_answer", solution=True), id="ex9_1_answer"),
        new_code_cell('assert answer() == 42, "answer() should return 42"\n### BEGIN HIDDEN TESTS\n'
                      f"{TINY_HIDDEN}\n### END HIDDEN TESTS\n",
                      metadata=_nbgrader("ex9_1_test", grade=True, locked=True, points=1), id="ex9_1_test"),
    ]
    return nb


@functools.cache
def _template() -> Path:
    """One course built with nbgrader per test process (about 13 s), copied by every `make_course`."""
    root = Path(tempfile.mkdtemp(prefix="tapelab-course-template-"))
    atexit.register(shutil.rmtree, root, True)
    solutions = root / "solutions"
    solutions.mkdir()
    shutil.copy(SOLUTIONS / f"{BASIC}.ipynb", solutions)
    nbformat.write(tiny_solution(), solutions / f"{TINY}.ipynb")
    prepare_course(root / "course", [BASIC, TINY], solutions=solutions)
    return root


def make_course(root: Path, name: str = "course") -> Path:
    """An nbgrader course `root/name` with 01_basic_tape and 09_fixture released, and their solutions in
    `root/solutions`: a copy of one course (the gradebook is SQLite in the folder, the exchange is found
    from the config's own place), so each module gets a fresh course for the price of a copy."""
    template = _template()
    shutil.copytree(template / "solutions", root / "solutions")
    return Path(shutil.copytree(template / "course", root / name, symlinks=True))


def limit_cells(course: Path, seconds: int) -> Path:
    """Set the course's per-cell time limit (nbgrader reads both names): a test whose stalling submission is
    stopped by the cell limit waits `seconds` for it, not the course config's two minutes."""
    with (course / "nbgrader_config.py").open("a") as config:
        config.write(f"c.Execute.timeout = c.ExecutePreprocessor.timeout = {seconds}\n")
    return course


def released(course: Path, notebook: str) -> nbformat.NotebookNode:
    return nbformat.read(course / "release" / notebook / f"{notebook}.ipynb", as_version=4)


def fill(course: Path, notebook: str, answers: dict[str, str], extra: list[str] = (),
         edit=None) -> nbformat.NotebookNode:
    """The released notebook with `answers` by grade id and `extra` cells after the setup cell."""
    return fill_copy(released(course, notebook), answers, extra, edit)


def fill_copy(student_copy: nbformat.NotebookNode, answers: dict[str, str], extra: list[str] = (),
              edit=None) -> nbformat.NotebookNode:
    """A student's copy of `student_copy` (a released notebook) with `answers` by grade id and `extra` cells
    after the setup cell."""
    nb = copy.deepcopy(student_copy)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid].strip() + "\n"
    at = next(i for i, c in enumerate(nb.cells) if c.get("id") in ("setup", "setup9")) + 1
    for offset, code in enumerate(extra):
        nb.cells.insert(at + offset, new_code_cell(code))
    if edit:
        edit(nb)
    return nb


def write(nb: nbformat.NotebookNode, path: Path, age: float = 0) -> Path:
    """Write `nb` at `path`; `age` seconds > 0 dates the file that far back (an older submission)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    if age:
        when = path.stat().st_mtime - age
        os.utime(path, (when, when))
    return path


def reference() -> dict[str, str]:
    return reference_answers(BASIC)


def partial() -> tuple[dict[str, str], set[str]]:
    """The reference with the round-trip set's first mistake for Exercise 1.1: only ex1_1_test fails."""
    sub = next(s for s in round_trip_submissions(BASIC) if s.student == "mistakes1")
    return {**reference(), "ex1_1_answer": sub.mistakes["ex1_1_answer"].code}, {"ex1_1_test"}


def tiny(value: str = "42", sleep: float = 0) -> dict[str, str]:
    pause = f"    time.sleep({sleep})\n" if sleep else ""
    return {"ex9_1_answer": f"def answer():\n{pause}    return {value}\n"}


def run_grade(path: Path, course: Path, *args: str, report: Path | None = None,
              timeout: int = 900) -> subprocess.CompletedProcess:
    """`tapelab grade` as an instructor runs it, in a subprocess."""
    cmd = [sys.executable, "-m", "tapelab.cli", "grade", str(path), "--course", str(course), *args]
    if report is not None:
        cmd += ["--report", str(report)]
    return subprocess.run(cmd, env=nbgrader_env(), capture_output=True, text=True, timeout=timeout)


def load_report(path: Path) -> dict:
    return json.loads(path.read_text())


def by_student(report: dict, student: str, notebook: str = BASIC) -> dict:
    matches = [s for s in report["submissions"]
               if s["student"] == student and s["notebook"] == notebook and s["status"] not in ("duplicate", "superseded")]
    assert len(matches) == 1, (student, notebook, matches)
    return matches[0]


def outputs_text(course: Path, student: str, notebook: str = BASIC) -> str:
    """Every output of the autograded notebook, as text."""
    nb = nbformat.read(course / "autograded" / student / notebook / f"{notebook}.ipynb", as_version=4)
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts += [out.get("text", ""), out.get("evalue", ""), str(out.get("data", {}).get("text/plain", ""))]
    return "\n".join(parts)


def cell_scores(course: Path, student: str, notebook: str = BASIC) -> dict[str, float]:
    return {name: score for name, (score, _) in cell_grades(course, student, notebook).items()}


def cell_grades(course: Path, student: str, notebook: str = BASIC) -> dict[str, tuple[float, float]]:
    """grade id -> (score, max score) of each graded cell of the student's submission, from the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        sub = gb.find_submission_notebook(notebook, notebook, student)
        return {g.name: (g.score, g.max_score) for g in sub.grades}


def orphaned_sandboxes() -> list[str]:
    """Sandbox wrappers whose grading process is gone (re-parented to init)."""
    ps = subprocess.run(["ps", "-eo", "ppid=,args="], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if line.split()[0] == "1" and "tapelab-sandbox" in line]


def env_with(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}
