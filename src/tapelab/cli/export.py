"""`tapelab export FORMAT`: a graded course's scores for an LMS (Canvas CSV, Gradescope results.json, long CSV)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tapelab.cli.graded_course import add_course, require_course, standings_of
from tapelab.errors import UsageError
from tapelab.outside import normal, printable

__all__ = ["FORMATS", "add_arguments", "run"]

FORMATS = {"canvas": "canvas.csv", "long": "grades-long.csv", "gradescope": "results.json"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "canvas: Canvas's gradebook import CSV (Student, ID, SIS User ID, SIS Login ID, Section, one column per "
        "notebook, `NOTEBOOK (ID)` for a Canvas assignment named by --canvas-assignment, a Points Possible row); "
        "long: student, assignment, notebook, exercise, grade_id, score, max_score, outcome, cause; gradescope: one "
        "student's results.json.")
    parser.add_argument("format", choices=sorted(FORMATS))
    add_course(parser)
    parser.add_argument("--out", type=Path, metavar="FILE", help="where to write (default: COURSE/exports/canvas.csv, "
                        "grades-long.csv or results.json); an existing folder gets that file name inside it. Its "
                        "folder must exist and be writable, or nothing is done (exit 2)")
    parser.add_argument("--roster", type=Path, metavar="CSV", help="canvas: lms_user_id of each student id "
                        "(nbgrader's roster columns), else the gradebook's")
    parser.add_argument("--section", default="", help="canvas: the Section column")
    parser.add_argument("--canvas-assignment", action="append", default=[], metavar="NOTEBOOK=ID",
                        help="canvas: fill Canvas assignment ID (the number in its address) with NOTEBOOK's scores; "
                        "repeat per notebook (without it Canvas matches the notebook's name or creates an assignment)")
    parser.add_argument("--student", help="gradescope: the student id")
    parser.add_argument("--notebook", help="gradescope: the notebook, e.g. 01_basic_tape")


def _lms_ids(db_url: str, roster: Path | None) -> dict[str, str | None]:
    """Canvas user id of each student: the roster's lms_user_id when given, else the gradebook's."""
    from nbgrader.api import Gradebook, Student

    from tapelab.grading.intake.roster import read_roster

    with Gradebook(db_url) as gb:
        ids = dict(gb.db.query(Student.id, Student.lms_user_id).all())
    if roster is not None:
        ids |= {p.id: p.lms_user_id for p in read_roster(roster).people if p.lms_user_id}
    return ids


def _assignment_ids(pairs: list[str]) -> dict[str, str]:
    """`--canvas-assignment NOTEBOOK=ID` values as {notebook: Canvas assignment id}."""
    ids = {}
    for pair in pairs:
        notebook, sep, assignment_id = pair.partition("=")
        if not (sep and notebook.strip() and assignment_id.strip()):
            raise UsageError(f"--canvas-assignment {printable(pair)!r}: write NOTEBOOK=ID, e.g. "
                             "--canvas-assignment 01_basic_tape=12345")
        ids[normal(notebook.strip())] = assignment_id.strip()
    return ids


def _target(args: argparse.Namespace) -> Path:
    """The file to write, checked before any work (`--out` a folder: the format's file name in it)."""
    from tapelab.grading.records import destination, output_folder

    if args.out is not None:
        return destination(args.out, FORMATS[args.format], "--out")
    require_course(args.course)
    return destination(output_folder(args.course / "exports", "the exports folder"), FORMATS[args.format], "--out")


def run(args: argparse.Namespace) -> int:
    from tapelab.grading import exports
    from tapelab.grading.records import atomic_write_text

    if args.format == "gradescope" and not (args.student and args.notebook):
        raise UsageError("gradescope writes one student's results.json: pass --student ID --notebook NAME")
    target = _target(args)
    root, db_url, rows = standings_of(args.course)
    warning = None
    if args.format == "canvas":
        canvas = exports.canvas_csv(rows, _lms_ids(db_url, args.roster), section=args.section,
                                    assignment_ids=_assignment_ids(args.canvas_assignment))
        text = canvas.text
        if canvas.unmatched:
            warning = (f"{len(canvas.unmatched)} student(s) have no Canvas user id (a number) and were left out: "
                       f"{', '.join(map(printable, canvas.unmatched))}. Add their lms_user_id to a roster and pass "
                       "--roster")
    elif args.format == "long":
        text = exports.long_csv(root, db_url, rows)
    else:
        import json

        try:
            results = exports.gradescope_results(root, db_url, rows, args.student, args.notebook)
        except KeyError as error:
            raise UsageError(f"{printable(error.args[0])}: pass a student and notebook `tapelab grade` "
                             "graded") from None
        text = json.dumps(results, indent=1)
    atomic_write_text(target, text, what=f"the {args.format} export")
    print(f"wrote {args.format}: {printable(target)}")
    if warning:
        print(f"tapelab export: warning: {warning}", file=sys.stderr)
    return 0
