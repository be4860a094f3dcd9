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

__all__ = ["Standing", "read", "write_grades_csv", "distribution", "CSV_FIELDS", "NOT_SUBMITTED"]

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


def read(db_url: str, statuses: dict[str, dict] | None = None) -> list[Standing]:
    """Every gradebook student x every released notebook, ordered by student, assignment, notebook.

    `statuses` maps a key (student/assignment/notebook) to tapelab's record of it ({"status", "reason"}).
    """
    from nbgrader.api import Gradebook

    statuses = statuses or {}
    rows: list[Standing] = []
    with Gradebook(db_url) as gb:
        students = sorted(gb.students, key=lambda s: s.id)
        for assignment in sorted(gb.assignments, key=lambda a: a.name):
            submitted = {sub.student.id: sub for sub in assignment.submissions}
            for notebook in sorted(assignment.notebooks, key=lambda n: n.name):
                for student in students:
                    sub = submitted.get(student.id)
                    nb = next((n for n in sub.notebooks if n.name == notebook.name), None) if sub else None
                    if nb is None:
                        raw = penalty = 0.0
                        manual = review = False
                    else:
                        raw, penalty = float(nb.score), float(nb.late_submission_penalty or 0.0)
                        manual = any(g.manual_score is not None or g.extra_credit for g in nb.grades)
                        review = bool(nb.needs_manual_grade)
                    row = Standing(student.id, student.first_name, student.last_name, assignment.name,
                                   notebook.name, _timestamp(sub.timestamp) if sub else None, raw, penalty,
                                   max(0.0, raw - penalty), float(notebook.max_score), manual, review, nb is not None)
                    known = statuses.get(row.key)
                    if known and (nb is not None or known.get("status") not in GRADED_STATUSES):
                        row.status, row.reason = known.get("status") or row.status, known.get("reason") or ""
                    rows.append(row)
    return rows


def _cell(value):
    """`value` as a spreadsheet shows it, never evaluates: a leading formula character gets a `'` (OWASP)."""
    if isinstance(value, bool):
        return "yes" if value else ""
    if not isinstance(value, str):
        return "" if value is None else value
    value = value.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates from undecodable names
    return "'" + value if value.startswith(_FORMULA_START) else value


def write_grades_csv(path: Path, rows: list[Standing]) -> None:
    """grades.csv: one row per gradebook student and released notebook, safe to open in a spreadsheet."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    writer.writeheader()  # text quoted (a CR inside it cannot split a row), numbers bare
    for row in rows:
        values = asdict(row)
        writer.writerow({k: _cell(values[k]) for k in CSV_FIELDS})
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
