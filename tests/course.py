"""Build and grade an nbgrader course in a temporary folder, as an instructor would.

Submissions are the released student notebooks with their answer cells filled in, so every
test grades exactly what a student could hand in.
"""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from answers import Mistake, mistakes, reference_answers
from tapelab.release import nbgrader_env, prepare_course

NOISY_ENV = {"TF_CPP_MIN_LOG_LEVEL": "0", "TF_ENABLE_ONEDNN_OPTS": "1"}


@dataclass
class Submission:
    """One student's notebook: answers by grade id, plus how its kernel should start."""

    student: str
    notebook: str
    answers: dict[str, str]
    mistakes: dict[str, Mistake] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    strip_log_settings: bool = False


# Mistake tiers graded by stock nbgrader (tier k holds each exercise's k-th catalogued mistake): a bounded
# sample, since every catalogued mistake is graded in-process by tests/exercises/test_checkers.py and
# each tier costs one kernel per notebook. TAPELAB_ROUND_TRIP_TIERS=99 sends the whole catalogue.
ROUND_TRIP_TIERS = int(os.environ.get("TAPELAB_ROUND_TRIP_TIERS", "1"))


def round_trip_submissions(notebook: str) -> list[Submission]:
    """Reference, blank, one student per mistake tier (the first ROUND_TRIP_TIERS), and the reference with
    TensorFlow's noise on."""
    reference = reference_answers(notebook)
    catalogue = mistakes(notebook)
    subs = [Submission("reference", notebook, reference), Submission("blank", notebook, {})]
    for tier in range(min(ROUND_TRIP_TIERS, max(len(ms) for ms in catalogue.values()))):
        chosen = {gid: ms[tier] for gid, ms in catalogue.items() if tier < len(ms)}
        answers = {**reference, **{gid: m.code for gid, m in chosen.items()}}
        subs.append(Submission(f"mistakes{tier + 1}", notebook, answers, chosen))
    subs.append(Submission("noisy", notebook, reference, env=NOISY_ENV, strip_log_settings=True))
    return subs


def write_submission(course: Path, sub: Submission) -> Path:
    """Write `sub` into submitted/<student>/<assignment>/ from the released student notebook."""
    nb = nbformat.read(course / "release" / sub.notebook / f"{sub.notebook}.ipynb", as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in sub.answers:
            cell.source = sub.answers[grade_id].strip() + "\n"
        if sub.strip_log_settings and cell.get("id") == "setup":
            cell.source = "\n".join(l for l in cell.source.splitlines() if "os.environ[" not in l)
    target = course / "submitted" / sub.student / sub.notebook / f"{sub.notebook}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return target


_KERNEL_START_FAULTS = ("Kernel died before replying to kernel_info", "Kernel didn't respond in")


def autograde(course: Path, subs: list[Submission], jobs: int = 2, attempts: int = 2) -> None:
    """Run the real `nbgrader autograde`: once per notebook for the students whose kernels start alike, once
    per student with an environment of its own (all its notebooks in one run, assignment `*`, when every
    submission of that student on disk is ours), `jobs` runs at a time (each run pays nbgrader's start-up).

    A run whose kernel fails to start (an infrastructure fault, not the student's) is retried once. The runs
    share one SQLite gradebook: in WAL mode, with a long busy timeout, a run waits for the other's write
    instead of failing with "database is locked" (SQLite's default wait is 5 s).
    """
    db = course / "gradebook.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
    db_url = f"--CourseDirectory.db_url=sqlite:///{db}?timeout=600"
    runs: list[tuple[str, list[str], dict[str, str]]] = []
    apart: list[Submission] = []
    for notebook in sorted({s.notebook for s in subs}):
        mine = [s for s in subs if s.notebook == notebook]
        on_disk = {p.parent.parent.name for p in (course / "submitted").glob(f"*/{notebook}/{notebook}.ipynb")}
        together = [s for s in mine if not s.env]
        if len(together) > 1 and on_disk == {s.student for s in mine}:  # every submission of it is ours
            loners = [s for s in mine if s.env]
            exclude = f"--CourseDirectory.student_id_exclude={','.join(s.student for s in loners)}"
            runs.append((notebook, [exclude] if loners else [], {}))
            apart += loners
        else:
            apart += mine
    for student in sorted({s.student for s in apart}):
        theirs = [s for s in apart if s.student == student]
        on_disk = {p.parent.name for p in (course / "submitted" / student).glob("*/*.ipynb")}
        if len(theirs) > 1 and on_disk == {s.notebook for s in theirs} and all(s.env == theirs[0].env for s in theirs):
            runs.append(("*", ["--student", student], theirs[0].env))
        else:
            runs += [(s.notebook, ["--student", s.student], s.env) for s in theirs]

    def grade(run: tuple[str, list[str], dict[str, str]]) -> None:
        notebook, selection, extra = run
        cmd = [sys.executable, "-m", "nbgrader", "autograde", notebook, *selection, db_url, "--force"]
        for attempt in range(attempts):
            result = subprocess.run(cmd, cwd=course, env={**nbgrader_env(), **extra}, capture_output=True, text=True)
            if result.returncode == 0:
                return
            if not any(fault in result.stderr for fault in _KERNEL_START_FAULTS):
                break
            time.sleep(2 * (attempt + 1))
        raise RuntimeError(f"autograde of {notebook} {' '.join(selection)} failed:\n{result.stderr[-3000:]}")

    runs.sort(key=lambda run: run[0] != "*")  # the longest runs first
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(grade, runs))


def grade_cell_of(answer_id: str) -> str:
    """The graded test cell that checks answer cell `answer_id` (`ex1_2_answer` -> `ex1_2_test`)."""
    return answer_id.replace("_answer", "_test")


@dataclass(frozen=True)
class CellResult:
    score: float
    max_score: float
    message: str


def results(course: Path, sub: Submission) -> dict[str, CellResult]:
    """grade_id of each graded cell -> its score from the gradebook and its visible message."""
    from nbgrader.api import Gradebook

    autograded = course / "autograded" / sub.student / sub.notebook / f"{sub.notebook}.ipynb"
    nb = nbformat.read(autograded, as_version=4)
    messages = {}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        texts = [o.get("evalue", "") if o.output_type == "error" else o.get("text", "")
                 for o in cell.get("outputs", []) if o.output_type in ("error", "stream")]
        messages[grade_id] = "\n".join(texts)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        graded = gb.find_submission_notebook(sub.notebook, sub.notebook, sub.student)
        return {g.name: CellResult(g.score, g.max_score, messages.get(g.name, "")) for g in graded.grades}


def build_course(root: Path, notebooks: list[str], extra: list[Submission] = ()) -> Path:
    """A course in `root` with `notebooks` released, their round-trip submissions and `extra` graded."""
    prepare_course(root, notebooks)
    subs = [s for nb in notebooks for s in round_trip_submissions(nb)] + list(extra)
    for sub in subs:
        write_submission(root, sub)
    autograde(root, subs, jobs=int(os.environ.get("TAPELAB_TEST_JOBS", "2")))
    return root
