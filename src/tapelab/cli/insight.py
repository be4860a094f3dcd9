"""`tapelab insight`: the class report (HTML, CSV, JSON) from a graded course's gradebook; writes no grade."""
from __future__ import annotations

import argparse
from pathlib import Path

from tapelab.cli.graded_course import add_course, standings_of

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Write COURSE/insight/insight.html (self-contained, no script), insight.json, "
                          "insight-assignments.csv, insight-exercises.csv and insight-causes.csv from the gradebook "
                          "and the autograded notebooks. `tapelab grade` and `tapelab feedback` write it too.")
    add_course(parser)
    parser.add_argument("--out", type=Path, metavar="DIR", help="folder to write into (default: COURSE/insight)")
    parser.add_argument("--names", action="store_true", help="show student ids instead of `student N`")


def run(args: argparse.Namespace) -> int:
    from tapelab.grading.insight import tables

    root, db_url, rows = standings_of(args.course)
    for what, where in tables.write(root, db_url, rows, out=args.out, names=args.names).items():
        print(f"wrote {what}: {where}")
    return 0
