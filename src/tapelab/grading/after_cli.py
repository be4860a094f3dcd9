"""The commands for after grading: `tapelab insight`, `tapelab export FORMAT`, `tapelab review EXERCISE`.

Each reads a course folder `tapelab grade` graded into (its gradebook is the one source of scores) and
writes nothing into the gradebook. Usage errors (not a course folder, an unknown exercise or student)
exit 2 with a message naming the fix.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tapelab.paths import GRADER

__all__ = ["add_commands"]

FORMATS = {"canvas": "canvas.csv", "long": "grades-long.csv", "gradescope": "results.json"}


class _Usage(Exception):
    pass


def _rows(course_dir: Path):
    """(course root, gradebook URL, every standing) of a course folder, or _Usage."""
    from tapelab.grading import CourseError, GradebookError, standings
    from tapelab.grading.course import open_course
    from tapelab.grading.records import STATE_FILE, State

    if not (course_dir / "nbgrader_config.py").is_file():
        raise _Usage(f"--course {course_dir} is not a course folder (no nbgrader_config.py): pass the folder "
                     "`tapelab grade` graded into")
    try:
        course = open_course(course_dir)
    except (CourseError, GradebookError) as error:
        raise _Usage(str(error)) from None
    try:
        return course.root, course.db_url, standings.read(course.db_url, State(course.root / STATE_FILE).entries)
    finally:
        course.close()


def _run(command: str, body) -> int:
    try:
        return body()
    except _Usage as error:
        print(f"tapelab {command}: {error}", file=sys.stderr)
        return 2


def _insight(args: argparse.Namespace) -> int:
    from tapelab.grading import insight

    def body() -> int:
        root, db_url, rows = _rows(args.course)
        for what, where in insight.write(root, db_url, rows, out=args.out, names=args.names).items():
            print(f"wrote {what}: {where}")
        return 0
    return _run("insight", body)


def _lms_ids(db_url: str, roster: Path | None) -> dict[str, str | None]:
    """Canvas user id of each student: the roster's lms_user_id when given, else the gradebook's."""
    from nbgrader.api import Gradebook, Student

    from tapelab.grading.roster import RosterError, read_roster

    with Gradebook(db_url) as gb:
        ids = dict(gb.db.query(Student.id, Student.lms_user_id).all())
    if roster is not None:
        try:
            people = read_roster(roster).people
        except RosterError as error:
            raise _Usage(str(error)) from None
        ids |= {p.id: p.lms_user_id for p in people if p.lms_user_id}
    return ids


def _assignment_ids(pairs: list[str]) -> dict[str, str]:
    """`--canvas-assignment NOTEBOOK=ID` values as {notebook: Canvas assignment id}."""
    ids = {}
    for pair in pairs:
        notebook, sep, assignment_id = pair.partition("=")
        if not (sep and notebook.strip() and assignment_id.strip()):
            raise _Usage(f"--canvas-assignment {pair!r}: write NOTEBOOK=ID, e.g. "
                         "--canvas-assignment 01_basic_tape=12345")
        ids[notebook.strip()] = assignment_id.strip()
    return ids


def _export(args: argparse.Namespace) -> int:
    from tapelab.grading import exports
    from tapelab.grading.records import atomic_write_text

    def body() -> int:
        root, db_url, rows = _rows(args.course)
        target = args.out or root / "exports" / FORMATS[args.format]
        warning = None
        if args.format == "canvas":
            try:
                canvas = exports.canvas_csv(rows, _lms_ids(db_url, args.roster), section=args.section,
                                            assignment_ids=_assignment_ids(args.canvas_assignment))
            except exports.CanvasError as error:
                raise _Usage(str(error)) from None
            text = canvas.text
            if canvas.unmatched:
                warning = (f"{len(canvas.unmatched)} student(s) have no Canvas user id (a number) and were left out: "
                           f"{', '.join(canvas.unmatched)}. Add their lms_user_id to a roster and pass --roster")
        elif args.format == "long":
            text = exports.long_csv(root, db_url, rows)
        else:
            import json

            if not (args.student and args.notebook):
                raise _Usage("gradescope writes one student's results.json: pass --student ID --notebook NAME")
            try:
                text = json.dumps(exports.gradescope_results(root, db_url, rows, args.student, args.notebook), indent=1)
            except KeyError as error:
                raise _Usage(f"{error.args[0]}: pass a student and notebook `tapelab grade` graded") from None
        atomic_write_text(Path(target), text)
        print(f"wrote {args.format}: {target}")
        if warning:
            print(f"tapelab export: warning: {warning}", file=sys.stderr)
        return 0
    return _run("export", body)


def _review(args: argparse.Namespace) -> int:
    from tapelab.grading.review import ReviewError, review

    def body() -> int:
        root, db_url, rows = _rows(args.course)
        try:
            print(review(root, db_url, rows, args.exercise))
        except ReviewError as error:
            raise _Usage(str(error)) from None
        return 0
    return _run("review", body)


def add_commands(commands) -> None:
    """Add insight, export and review to the `tapelab` subcommand parser `commands`."""
    course_help = "the nbgrader course folder tapelab grade graded into (default: grader/course)"
    insight = commands.add_parser(
        "insight", help="class report: scores, completion, named mistakes per exercise (HTML, CSV, JSON)",
        description="Write COURSE/insight/insight.html (self-contained, no script), insight.json, "
                    "insight-assignments.csv, insight-exercises.csv and insight-causes.csv from the gradebook and the "
                    "autograded notebooks. "
                    "`tapelab grade` and `tapelab feedback` write it too.")
    insight.add_argument("--course", type=Path, default=GRADER / "course", help=course_help)
    insight.add_argument("--out", type=Path, metavar="DIR", help="folder to write into (default: COURSE/insight)")
    insight.add_argument("--names", action="store_true", help="show student ids instead of `student N`")
    insight.set_defaults(run=_insight)
    export = commands.add_parser(
        "export", help="grades for an LMS: Canvas import CSV, Gradescope results.json, long CSV",
        description="canvas: Canvas's gradebook import CSV (Student, ID, SIS User ID, SIS Login ID, Section, one "
                    "column per notebook, `NOTEBOOK (ID)` for a Canvas assignment named by --canvas-assignment, a "
                    "Points Possible row); long: student, assignment, notebook, exercise, grade_id, score, max_score, "
                    "outcome, cause; gradescope: one student's results.json.")
    export.add_argument("format", choices=sorted(FORMATS))
    export.add_argument("--course", type=Path, default=GRADER / "course", help=course_help)
    export.add_argument("--out", type=Path, metavar="FILE", help="where to write (default: COURSE/exports/...)")
    export.add_argument("--roster", type=Path, metavar="CSV", help="canvas: lms_user_id of each student id "
                        "(nbgrader's roster columns), else the gradebook's")
    export.add_argument("--section", default="", help="canvas: the Section column")
    export.add_argument("--canvas-assignment", action="append", default=[], metavar="NOTEBOOK=ID",
                        help="canvas: fill Canvas assignment ID (the number in its address) with NOTEBOOK's scores; "
                        "repeat per notebook (without it Canvas matches the notebook's name or creates an assignment)")
    export.add_argument("--student", help="gradescope: the student id")
    export.add_argument("--notebook", help="gradescope: the notebook, e.g. 01_basic_tape")
    export.set_defaults(run=_export)
    review = commands.add_parser(
        "review", help="every student's answer to one exercise, grouped by cause code",
        description="List every submitted answer to EXERCISE, grouped by the cause the checker named (then "
                    "unnamed, hidden-only, not attempted, correct), with each student's score.")
    review.add_argument("exercise", metavar="EXERCISE", help="the exercise number (1.2) or its grade id (ex1_2_test)")
    review.add_argument("--course", type=Path, default=GRADER / "course", help=course_help)
    review.set_defaults(run=_review)
