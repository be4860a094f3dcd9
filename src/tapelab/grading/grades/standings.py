"""Every grade the gradebook holds, as rows: the one source of grades.csv, report.json's scores and the summary.

nbgrader's gradebook is the truth: manual scores given in formgrader, extra credit, late penalties
and the submissions of earlier runs all live there, and only there. `read` lists every student of
the gradebook against every released notebook, with the same arithmetic as `nbgrader export`
(score = max(0, raw score - late penalty), 0 for a notebook not submitted), so the two agree cell
by cell. What tapelab knows besides (the status and reason of the input graded last; for a notebook
not submitted, why: `missing_notebook`) is joined by key, never used for a score.
"""
from __future__ import annotations

import csv
import io
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path

from tapelab.grading.records import atomic_write_text
from tapelab.grading.statuses import GRADED_STATUSES
from tapelab.outside import printable

__all__ = ["Standing", "read", "write_grades_csv", "distribution", "csv_value", "submission_rows", "CSV_FIELDS", "NOT_SUBMITTED"]

NOT_SUBMITTED = "not_submitted"
CSV_FIELDS = ("student", "first_name", "last_name", "assignment", "notebook", "timestamp", "raw_score",
              "late_penalty", "score", "max_score", "manual", "needs_review", "status", "reason")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@dataclass
class Standing:
    """One student's grade for one released notebook, as the gradebook has it."""

    student: str
    first_name: str | None
    last_name: str | None
    assignment: str
    notebook: str
    timestamp: str | None  # the submission time nbgrader recorded (UTC), None when not submitted
    raw_score: float
    late_penalty: float
    score: float
    max_score: float
    manual: bool  # a score or extra credit was given by hand (formgrader)
    needs_review: bool  # nbgrader's needs_manual_grade
    submitted: bool
    status: str = NOT_SUBMITTED  # tapelab's status of the input graded last; not_submitted when none
    reason: str = ""

    @property
    def key(self) -> str:
        return f"{self.student}/{self.assignment}/{self.notebook}"


def _timestamp(value) -> str | None:
    return value.isoformat(sep=" ") if value is not None else None


def submission_rows(gb, *columns, start, via=(), where=None) -> list[tuple]:
    """(student, assignment, notebook, *columns) of every submitted notebook (those matching `where`), in
    one query joined from `start` (a table of nbgrader's gradebook) via the relations `via`."""
    from nbgrader.api import Assignment, Notebook, Student, SubmittedAssignment, SubmittedNotebook

    query = gb.db.query(Student.id, Assignment.name, Notebook.name, *columns).select_from(start)
    for relation in (*via, SubmittedNotebook.assignment, SubmittedAssignment.student, SubmittedAssignment.assignment,
                     SubmittedNotebook.notebook):
        query = query.join(relation)
    return (query if where is None else query.filter(where)).all()


def read(db_url: str, statuses: dict[str, dict] | None = None) -> list[Standing]:
    """Every gradebook student x every released notebook, ordered by student, assignment, notebook.

    Four queries whatever the size of the class, with nbgrader's own score expressions (the column
    properties `nbgrader export` reads). `statuses` maps a key (student/assignment/notebook) to
    tapelab's record of it ({"status", "reason"}).
    """
    from nbgrader.api import Assignment, Grade, Gradebook, Notebook, Student, SubmittedAssignment, SubmittedNotebook
    from sqlalchemy import and_, or_

    statuses = statuses or {}
    with Gradebook(db_url) as gb:
        students = gb.db.query(Student.id, Student.first_name, Student.last_name).order_by(Student.id).all()
        released = (gb.db.query(Assignment.name, Notebook.name, Notebook.max_score).select_from(Notebook)
                    .join(Notebook.assignment).order_by(Assignment.name, Notebook.name).all())
        submitted = {tuple(row[:3]): row[3:] for row in submission_rows(
            gb, SubmittedNotebook.score, SubmittedNotebook.late_submission_penalty,
            SubmittedNotebook.needs_manual_grade, SubmittedAssignment.timestamp, start=SubmittedNotebook)}
        given = or_(Grade.manual_score.isnot(None), and_(Grade.extra_credit.isnot(None), Grade.extra_credit != 0))
        by_hand = set(map(tuple, submission_rows(gb, start=Grade, via=(Grade.notebook,), where=given)))
    rows: list[Standing] = []
    for student, first, last in students:
        for assignment, notebook, top in released:
            key = (student, assignment, notebook)
            score, penalty, review, when = submitted.get(key, (0.0, 0.0, False, None))
            raw, penalty = float(score or 0.0), float(penalty or 0.0)
            row = Standing(student, first, last, assignment, notebook, _timestamp(when), raw, penalty,
                           max(0.0, raw - penalty), float(top or 0.0), key in by_hand, bool(review), key in submitted)
            known = statuses.get(row.key)
            if known and (row.submitted or known.get("status") not in GRADED_STATUSES):
                row.status, row.reason = known.get("status") or row.status, known.get("reason") or ""
            rows.append(row)
    return sorted(rows, key=lambda r: (r.student, r.assignment, r.notebook))


def csv_value(value):
    """`value` as a spreadsheet shows it, never evaluates: in its printable form (`tapelab.outside`), and a
    leading formula character gets a `'` (OWASP)."""
    if isinstance(value, bool):
        return "yes" if value else ""
    if not isinstance(value, str):
        return "" if value is None else value
    value = printable(value)
    return "'" + value if value.startswith(_FORMULA_START) else value


def write_grades_csv(path: Path, rows: list[Standing]) -> None:
    """grades.csv: one row per gradebook student and released notebook, safe to open in a spreadsheet."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    writer.writeheader()  # text quoted (a CR inside it cannot split a row), numbers bare
    for row in rows:
        values = asdict(row)
        writer.writerow({k: csv_value(values[k]) for k in CSV_FIELDS})
    atomic_write_text(path, buffer.getvalue())


def distribution(rows: list[Standing]) -> list[dict]:
    """Per notebook: how many submitted, mean, median, min and max score, and a five-bin histogram of
    score / max score (0-20%, ..., 80-100%)."""
    out = []
    for notebook in sorted({r.notebook for r in rows}):
        mine = [r for r in rows if r.notebook == notebook]
        scores = [r.score for r in mine if r.submitted]
        top = max((r.max_score for r in mine), default=0.0)
        bins = [0] * 5
        for score in scores:
            bins[min(4, int(5 * score / top)) if top else 0] += 1
        out.append({"notebook": notebook, "students": len(mine), "submitted": len(scores), "max_score": top,
                    "mean": round(statistics.fmean(scores), 2) if scores else None,
                    "median": round(statistics.median(scores), 2) if scores else None,
                    "min": min(scores, default=None), "max": max(scores, default=None), "bins": bins})
    return out
