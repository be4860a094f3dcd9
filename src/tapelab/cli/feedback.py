"""`tapelab feedback`: feedback pages and grades.csv regenerated from the gradebook (after manual grading)."""
from __future__ import annotations

import argparse
import sys

from tapelab.cli.graded_course import add_course, require_course
from tapelab.outside import printable

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Regenerate feedback/<student>/<assignment>/<notebook>.html (hidden tests removed) for every "
                          "submission whose grades, comments or autograded notebook changed, and grades.csv, from the "
                          "gradebook: manual scores and comments given in formgrader included, with a copy of each page "
                          "in handback/ (the pages alone: upload that folder to an LMS, never feedback/, which holds "
                          "nbgrader's submission secrets). `tapelab grade` does the same at the end of every run.")
    add_course(parser, "the nbgrader course folder (default: grader/course)")
    parser.add_argument("--force", action="store_true", help="regenerate every page, changed or not")


def run(args: argparse.Namespace) -> int:
    from tapelab.grading.course import open_course
    from tapelab.grading.grades.lateness import apply_penalties
    from tapelab.grading.outputs import refresh
    from tapelab.grading.insight.tables import INSIGHT_DIR
    from tapelab.grading.outputs import GRADES_FILE
    from tapelab.grading.records import STATE_FILE, State, check_writable, output_folder

    require_course(args.course)
    for folder, what in (("feedback", "the feedback folder"), (INSIGHT_DIR, "the insight folder")):
        output_folder(args.course / folder, what)  # before any work: a read-only folder is refused (exit 2)
    check_writable(args.course / GRADES_FILE, "the course file")
    course = open_course(args.course)
    try:
        state = State(course.root / STATE_FILE)
        apply_penalties(course.db_url, course.config)  # a manual score changes what a late day costs
        outputs = refresh(course, state.entries, force=args.force)
    finally:
        course.close()
    for what, where in outputs.written.items():
        print(f"wrote {what}: {printable(where)}")
    for problem in outputs.problems:
        print(f"tapelab feedback: warning: {printable(problem)}", file=sys.stderr)
    return 1 if outputs.problems else 0
