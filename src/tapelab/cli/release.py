"""`tapelab release`: student notebooks generated from solutions/ by nbgrader, and the answers data."""
from __future__ import annotations

import argparse
from pathlib import Path

from tapelab.paths import NOTEBOOKS

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", help="notebooks to release, e.g. 01_basic_tape (default: all)")
    parser.add_argument("--out", type=Path, default=NOTEBOOKS, help="folder for student notebooks")
    parser.add_argument("--answers", metavar="SETTING",
                        help='what students may see of the answers: "self-study" (solution() and every hint), '
                             '"locked-until:YYYY-MM-DD" or "locked" (solution() and the last hint say so); default: '
                             "c.TapelabCourse.answers in grader/nbgrader_config.py, else self-study. The answers "
                             "distribution's data (answers/) is written either way")


def run(args: argparse.Namespace) -> int:
    from tapelab.release import release
    from tapelab.release_answers import ANSWER_DATA

    for path in release(args.names or None, out=args.out, answers=args.answers, answer_data=ANSWER_DATA):
        print(f"released {path}")
    return 0
