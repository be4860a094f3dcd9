"""Grades for an LMS, from the gradebook: Canvas's gradebook import CSV, Gradescope's autograder
`results.json`, and a long CSV (one row per student and exercise) any other system can read.

Scores are the gradebook's (`standings`, `grades.cells`: manual scores and late penalties
included). The cause column and Gradescope's per-test output come from the autograded notebook's
visible test output, which never holds a hidden test (hidden parts run where nobody sees the
output); as a second line of defence, any output line that quotes a line of a hidden test (from the
course's source/ notebooks) is withheld. Every text cell is made inert for spreadsheets.

Formats, as their readers define them:
- Canvas (Grades > Import), as Canvas's importer reads a file
  (https://github.com/instructure/canvas-lms/blob/master/lib/gradebook_importer.rb; the export it mirrors
  is lib/gradebook_exporter.rb; the instructor's page is
  https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807):
  the header row starts `Student, ID`, then `SIS User ID, SIS Login ID` and `Section`, the last identity
  column; every later column is an assignment, `Title (12345)` naming Canvas assignment 12345 (matched by
  id), any other header matched by exact title or created as a new assignment; a row whose first cell
  holds `Points Possible` sets the points. A student row is matched by `ID`, the Canvas user id (a
  number), before SIS ids and names: here the gradebook's (or the roster's) `lms_user_id`. A student
  without a numeric one cannot be matched and is left out (the caller lists them).
- Gradescope, as its autograder specification lists the fields
  (https://gradescope-autograders.readthedocs.io/en/latest/specs/): {"score" (overrides the tests' sum),
  "output", "output_format", "test_output_format", "test_name_format", "visibility",
  "stdout_visibility", "tests": [{"name", "number", "score", "max_score", "status", "output",
  "visibility"}]}. Formats are `text`, so nothing a student printed is rendered as HTML, Markdown or ANSI
  (the top-level output is otherwise `simple_format`, which renders HTML).
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from tapelab.errors import UsageError
from tapelab.grading.grades import attempts as attempts_
from tapelab.grading.grades.cells import cell_grades, classify
from tapelab.grading.grades.standings import Standing, csv_value
from tapelab.outside import normal

__all__ = ["CANVAS_FIELDS", "LONG_FIELDS", "Canvas", "CanvasError", "canvas_csv", "long_csv", "gradescope_results",
           "withhold"]

CANVAS_FIELDS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
LONG_FIELDS = ("student", "assignment", "notebook", "exercise", "grade_id", "score", "max_score", "outcome", "cause")
WITHHELD = "(output withheld: it quotes a hidden test)"
_CANVAS_ID = re.compile(r"[0-9]+")  # Canvas reads an id with Ruby's to_i: ASCII digits only
_CANVAS_TITLE_AND_ID = re.compile(r"(.*)\s\((\d+)\)", re.ASCII)  # Canvas's Assignment.title_and_id


def _write(rows: list[list]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows([[csv_value(v) for v in row] for row in rows])
    return buffer.getvalue()


@dataclass
class Canvas:
    """The CSV and the students it could not name for Canvas."""

    text: str
    unmatched: list[str] = field(default_factory=list)


class CanvasError(UsageError, ValueError):
    """An assignment column Canvas would not file as asked (an id that is not one, a notebook not released,
    a name Canvas reads as an id); the message names the fix."""


def _canvas_header(notebook: str, assignment_id: str | None) -> str:
    """`01_basic_tape (12345)` for Canvas assignment 12345, else the notebook's name, which Canvas matches
    by title or creates; a name that Canvas would read as `Title (id)` is refused."""
    if assignment_id is not None:
        if not _CANVAS_ID.fullmatch(assignment_id):
            raise CanvasError(f"--canvas-assignment {notebook}={assignment_id}: not a number; pass the number at "
                              "the end of the Canvas assignment's address (.../assignments/12345)")
        return f"{notebook} ({assignment_id})"
    if _CANVAS_TITLE_AND_ID.fullmatch(notebook):
        raise CanvasError(f"Canvas would read the column {notebook!r} as its assignment "
                          f"{_CANVAS_TITLE_AND_ID.fullmatch(notebook)[2]}: pass --canvas-assignment {notebook}=ID")
    return notebook


def canvas_csv(rows: list[Standing], lms_ids: dict[str, str | None], section: str = "",
               assignment_ids: dict[str, str] | None = None) -> Canvas:
    """Canvas's import CSV: one row per student with a Canvas user id (`lms_ids`), one column per notebook
    (score after late penalty; `assignment_ids` maps a notebook to its Canvas assignment id), and the
    Points Possible row."""
    assignment_ids = assignment_ids or {}
    notebooks = sorted({(r.assignment, r.notebook) for r in rows})
    unknown = sorted(set(assignment_ids) - {nb for _, nb in notebooks})
    if unknown:
        raise CanvasError(f"--canvas-assignment {', '.join(unknown)}: not a released notebook (released: "
                          f"{', '.join(nb for _, nb in notebooks)})")
    top = {(r.assignment, r.notebook): r.max_score for r in rows}
    table = [[*CANVAS_FIELDS, *(_canvas_header(nb, assignment_ids.get(nb)) for _, nb in notebooks)],
             ["Points Possible", "", "", "", "", *(top[key] for key in notebooks)]]
    by_student: dict[str, dict] = {}
    for row in rows:
        by_student.setdefault(row.student, {})[(row.assignment, row.notebook)] = row
    unmatched = []
    for student, mine in sorted(by_student.items()):
        lms = (lms_ids.get(student) or "").strip()
        if not _CANVAS_ID.fullmatch(lms):
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
    wanted = (normal(student), normal(notebook))  # ids in one normal form, whatever form the gradebook holds
    row = next((r for r in rows if (normal(r.student), normal(r.notebook)) == wanted), None)
    if row is None:
        raise KeyError(f"{student}/{notebook} is not in the gradebook")
    student, notebook = row.student, row.notebook
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
    return {"score": row.score, "output": summary, "output_format": "text", "test_output_format": "text",
            "test_name_format": "text", "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}

