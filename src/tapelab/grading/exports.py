"""Grades for an LMS, from the gradebook: Canvas's gradebook import CSV, Gradescope's autograder
`results.json`, and a long CSV (one row per student and exercise) any other system can read.

Scores are the gradebook's (`standings`, `insight.cell_grades`: manual scores and late penalties
included). The cause column and Gradescope's per-test output come from the autograded notebook's
visible test output, which never holds a hidden test (hidden parts run where nobody sees the
output); as a second line of defence, any output line that quotes a line of a hidden test (from the
course's source/ notebooks) is withheld. Every text cell is made inert for spreadsheets.

Formats, as published:
- Canvas (Grades > Import): a header row `Student, ID, SIS User ID, SIS Login ID, Section` and one
  column per assignment; an optional second row `Points Possible`. Canvas matches a row by `ID`, its
  user id: the gradebook's (or the roster's) `lms_user_id`. A student without one cannot be matched and
  is left out (the caller lists them).
- Gradescope (autograder specification): {"score", "output", "visibility", "stdout_visibility",
  "tests": [{"name", "number", "score", "max_score", "status", "output", "visibility"}]}.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from tapelab.grading import attempts as attempts_
from tapelab.grading.insight import cell_grades, classify
from tapelab.grading.standings import Standing, _cell

__all__ = ["CANVAS_FIELDS", "LONG_FIELDS", "Canvas", "canvas_csv", "long_csv", "gradescope_results", "withhold"]

CANVAS_FIELDS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
LONG_FIELDS = ("student", "assignment", "notebook", "exercise", "grade_id", "score", "max_score", "outcome", "cause")
WITHHELD = "(output withheld: it quotes a hidden test)"


def _write(rows: list[list]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows([[_cell(v) for v in row] for row in rows])
    return buffer.getvalue()


@dataclass
class Canvas:
    """The CSV and the students it could not name for Canvas."""

    text: str
    unmatched: list[str] = field(default_factory=list)


def canvas_csv(rows: list[Standing], lms_ids: dict[str, str | None], section: str = "") -> Canvas:
    """Canvas's import CSV: one row per student with a Canvas user id (`lms_ids`), one column per notebook
    (score after late penalty), and the Points Possible row."""
    notebooks = sorted({(r.assignment, r.notebook) for r in rows})
    top = {(r.assignment, r.notebook): r.max_score for r in rows}
    table = [[*CANVAS_FIELDS, *(nb for _, nb in notebooks)],
             ["Points Possible", "", "", "", "", *(top[key] for key in notebooks)]]
    by_student: dict[str, dict] = {}
    for row in rows:
        by_student.setdefault(row.student, {})[(row.assignment, row.notebook)] = row
    unmatched = []
    for student, mine in sorted(by_student.items()):
        lms = lms_ids.get(student)
        if not lms:
            unmatched.append(student)
            continue
        first = next(iter(mine.values()))
        name = ", ".join(p for p in (first.last_name, first.first_name) if p) or student
        table.append([name, lms, "", "", section, *(mine[k].score if k in mine else "" for k in notebooks)])
    return Canvas(_write(table), unmatched)


def long_csv(root: Path, db_url: str, rows: list[Standing]) -> str:
    """One row per student and exercise of every released notebook: the gradebook's cell score and, when
    not correct, the outcome and the cause code the checker printed (analytics, not part of the score)."""
    cells, grades = cell_grades(db_url)
    table = [list(LONG_FIELDS)]
    for row in rows:
        seen = attempts_.read_submission(root, row.student, row.assignment, row.notebook) if row.submitted else {}
        for assignment, notebook, gid, top in cells:
            if (assignment, notebook) != (row.assignment, row.notebook):
                continue
            score, cell_top = grades.get((row.student, assignment, notebook, gid), (0.0, float(top or 0.0)))
            outcome, cause = classify(score, cell_top, seen.get(gid)) if row.submitted else ("not_submitted", None)
            table.append([row.student, assignment, notebook, attempts_.exercise_label(gid), gid, score, cell_top,
                          outcome, cause or ""])
    return _write(table)


def withhold(text: str, hidden: set[str]) -> str:
    """`text` with every line that contains a line of a hidden test replaced by a note."""
    return "\n".join(WITHHELD if any(h in line for h in hidden) else line for line in text.splitlines())


def gradescope_results(root: Path, db_url: str, rows: list[Standing], student: str, notebook: str) -> dict:
    """Gradescope's results.json for one student's notebook: the gradebook's score, and one test per exercise
    with its cell score and the visible output of its check."""
    row = next((r for r in rows if r.student == student and r.notebook == notebook), None)
    if row is None:
        raise KeyError(f"{student}/{notebook} is not in the gradebook")
    cells, grades = cell_grades(db_url)
    source = root / "source" / row.assignment / f"{notebook}.ipynb"
    hidden = attempts_.hidden_lines(source) if source.is_file() else set()
    seen = attempts_.read_submission(root, student, row.assignment, notebook) if row.submitted else {}
    tests = []
    for assignment, nb, gid, top in cells:
        if (assignment, nb) != (row.assignment, notebook):
            continue
        score, cell_top = grades.get((student, assignment, nb, gid), (0.0, float(top or 0.0)))
        attempt = seen.get(gid)
        output = withhold(attempt.output, hidden) if attempt else "not submitted"
        label = attempts_.exercise_label(gid)
        tests.append({"name": f"Exercise {label}", "number": label, "score": score, "max_score": cell_top,
                      "status": "passed" if score >= cell_top else "failed", "output": output,
                      "visibility": "visible"})
    summary = f"{notebook}: {row.score:g} of {row.max_score:g}"
    if row.late_penalty:
        summary += f" (raw {row.raw_score:g}, late penalty {row.late_penalty:g})"
    if row.status != "graded":
        summary += f"; status {row.status}" + (f": {row.reason}" if row.reason else "")
    return {"score": row.score, "output": summary, "visibility": "visible", "stdout_visibility": "hidden",
            "tests": tests}

