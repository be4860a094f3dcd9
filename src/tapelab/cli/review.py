"""`tapelab review EXERCISE`: every student's answer to one exercise, grouped by the cause the checker named."""
from __future__ import annotations

import argparse

from tapelab.cli.graded_course import add_course, standings_of

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("List every submitted answer to EXERCISE, grouped by the cause the checker named (then "
                          "unnamed, hidden-only, not attempted, correct), with each student's score.")
    parser.add_argument("exercise", metavar="EXERCISE", help="the exercise number (1.2) or its grade id (ex1_2_test)")
    add_course(parser)


def run(args: argparse.Namespace) -> int:
    from tapelab.grading.insight.review import review

    root, db_url, rows = standings_of(args.course)
    print(review(root, db_url, rows, args.exercise))
    return 0
