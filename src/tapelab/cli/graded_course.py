"""The `--course` argument of the verbs that read a graded course folder (feedback, insight, export, review)."""
from __future__ import annotations

import argparse
from pathlib import Path

from tapelab.errors import UsageError
from tapelab.paths import GRADER

__all__ = ["add_course", "require_course", "standings_of"]


def add_course(parser: argparse.ArgumentParser,
               help_text: str = "the nbgrader course folder tapelab grade graded into (default: grader/course)") -> None:
    parser.add_argument("--course", type=Path, default=GRADER / "course", help=help_text)


def require_course(course_dir: Path) -> None:
    """UsageError unless `course_dir` is a course folder (it holds nbgrader_config.py)."""
    if not (course_dir / "nbgrader_config.py").is_file():
        raise UsageError(f"--course {course_dir} is not a course folder (no nbgrader_config.py): pass the folder "
                         "`tapelab grade` graded into")


def standings_of(course_dir: Path):
    """(course root, gradebook URL, every standing of the gradebook) of a graded course folder."""
    from tapelab.grading.course import open_course
    from tapelab.grading.grades import standings
    from tapelab.grading.records import STATE_FILE, State

    require_course(course_dir)
    course = open_course(course_dir)
    try:
        return course.root, course.db_url, standings.read(course.db_url, State(course.root / STATE_FILE).entries)
    finally:
        course.close()
