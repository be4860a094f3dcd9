"""Coordinator, after execution: the worker's result, nbgrader's autograde preprocessors, the gradebook.

Only the coordinating process calls this module, so only it writes the gradebook. A worker's
result is checked against RESULT_SCHEMA and its notebook against nbformat's schema before anything
is saved: what is not a result is the grader's fault, never a score. The outcome is what
`nbgrader autograde` leaves: autograded/<student>/<assignment>/<notebook>.ipynb and the grades in
the gradebook, so `nbgrader formgrader`, `generate_feedback` and `export` work on it.
"""
from __future__ import annotations

import warnings
from datetime import datetime
from pathlib import Path

import jsonschema
import nbformat
from nbformat import NotebookNode

from tapelab.errors import InfraError
from tapelab.grading.course import Course
from tapelab.grading.intake.stored import ensure_submission_files
from tapelab.grading.records import atomic_write_text, schema_check, valid_notebook

__all__ = ["RESULT_SCHEMA", "MalformedResult", "executed_notebook", "record_submission", "record_ungraded",
           "save_grades", "explain", "review_note", "name_students", "scores",
           "max_scores"]

_ORIGINAL_CHARS = 2000  # of each replaced cell quoted in a review note

# What `worker.execute` returns.
RESULT_SCHEMA = {
    "type": "object",
    "required": ["nb", "facts", "seconds"],
    "properties": {
        "nb": {"type": ["string", "null"]},
        "seconds": {"type": "number", "minimum": 0},
        "worker": {"type": "string"},
        "facts": {"type": "object", "properties": {
            "flags": {"type": "array", "items": {"type": "string"}},
            "infra_error": {"type": "string"}, "stopped_by": {"type": "string"},
            **{fact: {"type": "boolean"} for fact in ("timed_out", "kernel_died", "output_limit")},
        }},
    },
}


_check_result = schema_check(RESULT_SCHEMA)


class MalformedResult(InfraError, ValueError):
    """A worker result that is not what `worker.execute` returns; the message says where."""


def executed_notebook(result: object) -> NotebookNode | None:
    """The executed notebook of a worker result, None when it was not executed; raises MalformedResult."""
    try:
        _check_result(result)
    except jsonschema.ValidationError as error:
        where = "/".join(map(str, error.absolute_path)) or "the result"
        raise MalformedResult(f"{where}: {error.message[:200]}") from None
    if result["nb"] is None:
        return None
    try:
        nb = valid_notebook(result["nb"])
    except Exception as error:  # nbformat raises several types for what is not a notebook
        raise MalformedResult(f"its notebook is not a valid notebook ({type(error).__name__}: "
                              f"{str(error)[:200]})") from None
    return nb


def _resources(course: Course, student: str, assignment: str, notebook: str) -> dict:
    return {"nbgrader": {"student": student, "assignment": assignment, "notebook": notebook,
                         "db_url": course.db_url}, "unique_key": notebook}


def record_submission(course: Course, student: str, assignment: str, submitted: Path) -> None:
    """Create the student and the submission in the gradebook, at the time of the timestamp.txt beside
    `submitted` (written for every submission, see `intake.stored.ensure_submission_files`)."""
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


def name_students(course: Course, people: dict[str, dict]) -> None:
    """Create or update each student with the names (and email, LMS id) given, leaving out unknown values."""
    from nbgrader.api import Gradebook

    if not people:
        return
    with Gradebook(course.db_url) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for student, names in sorted(people.items()):
            gb.update_or_create_student(student, **{k: v for k, v in names.items() if v})


def record_ungraded(course: Course, student: str, assignment: str, notebook: str, reason: str,
                    submitted_at: datetime | None) -> bool:
    """Give a notebook that could not be graded a submission scoring 0, with `reason` as the comment of
    its first answer, and the released notebook as its autograded copy (so formgrader can open it and
    feedback be handed back like any other).

    Never replaces a submission the gradebook holds (a grade, or a manual score); returns whether it
    recorded one.
    """
    from nbgrader.api import Gradebook, MissingEntry


    with Gradebook(course.db_url) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gb.update_or_create_student(student)
        try:
            gb.find_submission(assignment, student)
            return False
        except MissingEntry:
            pass
    ensure_submission_files(course, student, assignment, submitted_at)
    submitted = course.path("submitted", student, assignment, notebook)
    record_submission(course, student, assignment, submitted)
    with Gradebook(course.db_url) as gb:
        for nb in gb.find_submission(assignment, student).notebooks:
            for grade in nb.grades:
                grade.auto_score, grade.needs_manual_grade = 0.0, False
            for comment in nb.comments:
                comment.auto_comment = "No response."
        gb.db.commit()
    explain(course, student, assignment, notebook, f"Not graded: {reason}. Scored 0.")
    target = course.path("autograded", student, assignment, notebook)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, nbformat.writes(course.release_notebook(assignment, notebook)))
    for name in ("timestamp.txt", "submission_secret.txt"):
        atomic_write_text(target.parent / name, (submitted.parent / name).read_bytes())
    return True


def explain(course: Course, student: str, assignment: str, notebook: str, text: str) -> None:
    """Put `text` (prefixed `tapelab:`) first in the comment of the notebook's first answer cell, where
    formgrader shows it in the comment box and the feedback page under the answer."""
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gb:
        nb = gb.find_submission_notebook(notebook, assignment, student)
        order = {cell.name: i for i, cell in enumerate(nb.notebook.source_cells)}
        comments = sorted(nb.comments, key=lambda c: order.get(c.cell.name, len(order)))
        if comments:
            first = comments[0]
            # Flags and cells quote the student: lone surrogates and NUL would not store as text.
            text = text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")
            first.auto_comment = "\n\n".join(filter(None, [f"tapelab: {text}", first.auto_comment]))
            gb.db.commit()


def review_note(flags: list[str], kept: Path, originals: list[tuple[str, str]]) -> str:
    """Why a submission waits for review, where the file as sent is kept, and the student's own version of
    every locked cell that was restored (bounded), for formgrader's comment box and the feedback page."""
    lines = ["this submission needs review: " + "; ".join(flags) + ".",
             f"The file as the student sent it is kept unchanged at {kept} in the course folder."]
    for gid, source in originals:
        shown = source if len(source) <= _ORIGINAL_CHARS else source[:_ORIGINAL_CHARS] + " [...]"
        lines.append(f"The student's version of locked cell {gid}, replaced by the release's:\n{shown}")
    return "\n".join(lines)


def save_grades(course: Course, nb: NotebookNode, student: str, assignment: str, notebook: str,
                review: bool) -> Path:
    """Run nbgrader's autograde preprocessors on the executed notebook and write autograded/.

    `review` marks every graded cell as needing manual review in formgrader (flagged submissions).
    """
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import AssignLatePenalties, CheckCellMetadata, IgnorePattern, LimitOutput

    resources = _resources(course, student, assignment, notebook)
    for cls in (IgnorePattern, ClearMetadataPreprocessor, LimitOutput):
        nb, resources = cls(config=course.config)(nb, resources)
    _save_auto_grades(course, nb, student, assignment, notebook)
    for cls in (AssignLatePenalties, CheckCellMetadata):
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
        atomic_write_text(target.parent / "timestamp.txt", stamp.read_bytes())
    return target


def _save_auto_grades(course: Course, nb: NotebookNode, student: str, assignment: str, notebook: str) -> None:
    """nbgrader's SaveAutoGrades step in one session and one commit: the same auto score and review mark of
    every graded cell, and "No response." (or nothing) as the auto comment of every answer and task cell, as
    its `_add_score` and `_add_comment` set them; it looks each one up and commits once per cell (on SQLite every
    commit syncs the file: 198 of the 596 commits of a run of 18 submissions). The notebook's grades and comments are
    now saved together or not at all."""
    from nbgrader import utils
    from nbgrader.api import BaseCell, Comment, Grade, Gradebook, MissingEntry
    from traitlets.log import get_logger

    with Gradebook(course.db_url) as gb:
        submitted = gb.find_submission_notebook(notebook, assignment, student)
        grades, comments = ({name: row for name, row in gb.db.query(BaseCell.name, kind).join(
            kind, kind.cell_id == BaseCell.id).filter(kind.notebook_id == submitted.id)} for kind in (Grade, Comment))
        for cell in nb.cells:
            name = cell.metadata.get("nbgrader", {}).get("grade_id")
            if utils.is_grade(cell):
                if (grade := grades.get(name)) is None:
                    raise MissingEntry()
                grade.auto_score, _ = utils.determine_grade(cell, get_logger())
                grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
            if utils.is_solution(cell) or utils.is_task(cell):
                if (comment := comments.get(name)) is None:
                    raise MissingEntry()
                unchanged = cell.metadata.nbgrader.get("checksum", None) == utils.compute_checksum(cell)
                comment.auto_comment = "No response." if unchanged and not utils.is_task(cell) else None
        gb.db.commit()


def scores(course: Course, student: str, assignment: str, notebook: str) -> tuple[float, float]:
    """(score, max_score) of one submitted notebook from the gradebook, late penalty applied."""
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gb:
        sub = gb.find_submission_notebook(notebook, assignment, student)
        return float(sub.score - (sub.late_submission_penalty or 0)), float(sub.max_score)


def max_scores(course: Course) -> dict[str, float]:
    """{notebook: max score} of every released notebook, from the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gb:
        return {nb.name: float(nb.max_score) for a in gb.assignments for nb in a.notebooks}
