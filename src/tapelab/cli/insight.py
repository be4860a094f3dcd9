"""`tapelab insight`: the class report (HTML, CSV, JSON) from a graded course's gradebook; writes no grade."""
from __future__ import annotations

import argparse
from pathlib import Path

from tapelab.cli.graded_course import add_course, require_course, standings_of
from tapelab.outside import printable

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Write COURSE/insight/insight.html (self-contained, no script), insight.json, "
                          "insight-assignments.csv, insight-exercises.csv and insight-causes.csv from the gradebook "
                          "and the autograded notebooks. `tapelab grade` and `tapelab feedback` write it too.")
    add_course(parser)
    parser.add_argument("--out", type=Path, metavar="DIR", help="folder to write into (default: COURSE/insight); "
                        "created when missing, in a folder that exists. A file, or a folder that cannot be written, "
                        "is refused before any work (exit 2)")
    parser.add_argument("--names", action="store_true", help="show student ids instead of `student N`")


def run(args: argparse.Namespace) -> int:
    from tapelab.grading.insight import tables
    from tapelab.grading.records import output_folder

    if args.out is None:
        require_course(args.course)
    out = output_folder(args.out or args.course / tables.INSIGHT_DIR, "--out" if args.out else "the insight folder")
    root, db_url, rows = standings_of(args.course)
    for what, where in tables.write(root, db_url, rows, out=out, names=args.names).items():
        print(f"wrote {what}: {printable(where)}")
    return 0
