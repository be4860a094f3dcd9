"""Every graded test cell of the gradebook, and what each submitted one ended as.

`cell_grades` reads the released grade cells and every submission's score of them from nbgrader's
gradebook (any SQLAlchemy URL); `classify` names a cell's outcome from its score and the autograded
notebook's `attempts.Attempt`. The class insight, `tapelab review` and the exports read both, so all
three count a cell the same way. Runs in the coordinator.
"""
from __future__ import annotations

from tapelab.grading.grades import attempts as attempts_
from tapelab.grading.grades.standings import submission_rows

__all__ = ["cell_grades", "classify"]


def cell_grades(db_url: str) -> tuple[list[tuple], dict[tuple, tuple[float, float]]]:
    """The released grade cells [(assignment, notebook, grade_id, max_score)] and every submitted cell's
    {(student, assignment, notebook, grade_id): (score, max_score)}, in two queries (any SQLAlchemy URL)."""
    from nbgrader.api import Assignment, GradeCell, Grade, Gradebook, Notebook

    with Gradebook(db_url) as gb:
        cells = (gb.db.query(Assignment.name, Notebook.name, GradeCell.name, GradeCell.max_score)
                 .select_from(GradeCell).join(GradeCell.notebook).join(Notebook.assignment).all())
        graded = submission_rows(gb, GradeCell.name, Grade.score, GradeCell.max_score, start=Grade,
                                 via=(Grade.cell.of_type(GradeCell), Grade.notebook))
    return (sorted(tuple(c) for c in cells),
            {tuple(row[:4]): (float(row[4] or 0.0), float(row[5] or 0.0)) for row in graded})


def classify(score: float, top: float, attempt: attempts_.Attempt | None) -> tuple[str, str | None]:
    """(outcome, cause code) of one submitted test cell. The score decides correct; the notebook only says
    which kind of wrong: `not_attempted` (stub left, or the checker said so), `named` (a catalogued cause),
    `unnamed` (a visible failure with no cause, or no notebook to read), `hidden_only` (the visible part
    passed and showed no failure: the hidden inputs failed)."""
    if score >= top:
        return "correct", None
    if attempt is None:
        return "unnamed", None
    if not attempt.attempted or attempt.outcome == "not-attempted":
        return "not_attempted", None
    if attempt.cause:
        return "named", attempt.cause
    if attempt.outcome or attempt.error:
        return "unnamed", None
    return "hidden_only", None
