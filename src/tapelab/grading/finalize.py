"""Coordinator, after execution: nbgrader's autograde preprocessors, the gradebook, autograded/.

Only the coordinating process calls this module, so only it writes the gradebook. The result is
what `nbgrader autograde` leaves: autograded/<student>/<assignment>/<notebook>.ipynb and the
grades in the gradebook, so `nbgrader formgrader`, `generate_feedback` and `export` work on it.
"""
from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from tapelab.grading.course import Course
from tapelab.grading.records import atomic_write_text

__all__ = ["record_submission", "save_grades", "scores"]


def _resources(course: Course, student: str, assignment: str, notebook: str) -> dict:
    return {"nbgrader": {"student": student, "assignment": assignment, "notebook": notebook,
                         "db_url": course.db_url}, "unique_key": notebook}


def record_submission(course: Course, student: str, assignment: str, submitted: Path) -> None:
    """Create the student and the submission (with its timestamp.txt, if any) in the gradebook."""
    from nbgrader.api import Gradebook
    from nbgrader.coursedir import CourseDirectory

    timestamp = CourseDirectory(config=course.config).get_existing_timestamp(str(submitted.parent))
    with Gradebook(course.db_url) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's own SQLAlchemy autoflush warnings
        gb.update_or_create_student(student)
        if timestamp:
            gb.update_or_create_submission(assignment, student, timestamp=timestamp)
        else:
            gb.update_or_create_submission(assignment, student)


def save_grades(course: Course, nb: NotebookNode, student: str, assignment: str, notebook: str,
                review: bool) -> Path:
    """Run nbgrader's autograde preprocessors on the executed notebook and write autograded/.

    `review` marks every graded cell as needing manual review in formgrader (flagged submissions).
    """
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, IgnorePattern, LimitOutput,
                                        SaveAutoGrades)

    resources = _resources(course, student, assignment, notebook)
    for cls in (IgnorePattern, ClearMetadataPreprocessor, LimitOutput, SaveAutoGrades, AssignLatePenalties,
                CheckCellMetadata):
        nb, resources = cls(config=course.config)(nb, resources)
    if review:
        with Gradebook(course.db_url) as gb:
            for grade in gb.find_submission_notebook(notebook, assignment, student).grades:
                grade.needs_manual_grade = True
            gb.db.commit()
    target = course.path("autograded", student, assignment, notebook)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, nbformat.writes(nb))
    stamp = course.path("submitted", student, assignment, notebook).parent / "timestamp.txt"
    if stamp.is_file():
        shutil.copy(stamp, target.parent / "timestamp.txt")
    return target


def scores(course: Course, student: str, assignment: str, notebook: str) -> tuple[float, float]:
    """(score, max_score) of one submitted notebook from the gradebook, late penalty applied."""
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gb:
        sub = gb.find_submission_notebook(notebook, assignment, student)
        return float(sub.score - (sub.late_submission_penalty or 0)), float(sub.max_score)
