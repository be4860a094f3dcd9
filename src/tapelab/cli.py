"""The `tapelab` command: instructor tasks as subcommands. Usage errors exit with status 2.

Faults of the grader end in one paragraph on stderr naming what happened and what to do, never a
Python traceback (the log keeps it): a usage or set-up fault exits 2, anything retryable exits 1,
and a run stopped by Ctrl-C or SIGTERM writes the report of what it did and exits 128 + the signal.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from tapelab.paths import GRADER, NOTEBOOKS

__all__ = ["main"]


def _release(args: argparse.Namespace) -> int:
    from tapelab.release import ReleaseError, release
    from tapelab.release_answers import ANSWER_DATA

    try:
        for path in release(args.names or None, out=args.out, answers=args.answers, answer_data=ANSWER_DATA):
            print(f"released {path}")
    except ReleaseError as error:
        print(f"tapelab release: {error}", file=sys.stderr)
        return 2
    return 0


GRADE_EPILOG = """\
accepted submission names (relative to PATH, or inside the zip):
  submitted/<student>/<assignment>/<notebook>.ipynb   nbgrader's layout (PATH may be submitted/ itself)
  <student>/<assignment>/<notebook>.ipynb
  <student>/<notebook>.ipynb                          one folder per student
  <student>_<notebook>.ipynb                          flat, as LMS downloads are, at any depth
Notebook names start with two digits (01_basic_tape); a copy number such as 01_basic_tape-1 is
ignored. A student id may contain underscores: jo_ann_01_basic_tape.ipynb is student jo_ann.
LMS names: Blackboard <assignment>_<user>_attempt_<time>_<file> is student <user>; Canvas
<lastfirst>[_LATE]_<userid>_<attachmentid>_<file> is <lastfirst>_<userid>; Moodle
<First Last>_<id>_assignsubmission_file_/<file> is <id>; a trailing _2026-10-01T13-45-12 is a time.
Zip entries with absolute paths or `..` are refused.

resubmissions: the newest file of a student's notebook is graded (nbgrader's timestamp.txt, else
the time in its name, else the file's time); older ones are `superseded`, also in later runs.
--prefer FILE grades that file instead. --roster CSV (nbgrader's student import format) gives ids
and names; every student in it joins the gradebook.

outputs, in the course folder: the gradebook, submitted/ and autograded/, feedback/<student>/<assignment>/
*.html, grades.csv (every student x notebook of the gradebook, as `nbgrader export` scores them),
report.json (this run's inputs, the whole gradebook, every input's history), grading.log.jsonl,
grading-state.json. Feedback and grades.csv are refreshed from the gradebook at the end of every run;
after manual grading in formgrader, run `tapelab feedback`. A second run regrades only new or changed
files; --force regrades everything.

several machines: start `dask scheduler` on one, `dask worker tcp://HOST:8786` on each grading
machine (same checkout and `make venv`, as root), then pass --scheduler tcp://HOST:8786 here.
several graders at once: each uses a course folder of their own and the same --db server URL.

statuses: graded, tampered, timed_out, kernel_died, output_limit, invalid_notebook,
unknown_notebook, missing_notebook, superseded, duplicate, bad_name, unsafe_path, too_large,
unreadable, infra_error (see docs/instructor-guide.md).
exit status: 0 every input has a final status, 1 some inputs are infra_error or the grader failed
(rerun), 2 usage error, nothing to grade in PATH, or an unusable course folder, gradebook, roster or
report path (nothing was graded), 130/143 stopped by Ctrl-C/SIGTERM (report.json lists what was
graded; rerun to finish).
"""


def _usage(message: str) -> int:
    print(f"tapelab grade: {message}", file=sys.stderr)
    return 2


def _stop_on_sigterm() -> None:
    """SIGTERM stops the run as Ctrl-C does: the coordinator writes its report, then exits."""
    def stop(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)


def _stopped(name: str, report: Path | None) -> int:
    listed = f"; {report} lists it, and the submissions not reached are `infra_error` there" if report else ""
    print(f"tapelab grade: stopped by {name}. What was graded is saved (gradebook, grading-state.json){listed}. "
          "Rerun the same command to grade the rest: what was graded is skipped.", file=sys.stderr)
    return 128 + signal.Signals[name].value


def _crashed(error: Exception) -> int:
    where = " ".join(getattr(error, "__notes__", [])) or "report a bug with this message"
    print(f"tapelab grade: the grader itself failed ({type(error).__name__}: {error}). Everything graded before "
          f"is kept (gradebook, grading-state.json): rerun the same command. If it fails again, {where}.",
          file=sys.stderr)
    return 1


def _grade(args: argparse.Namespace) -> int:
    from tapelab.grading import CourseError, GradebookError, InputError, Options, grade
    from tapelab.grading.lateness import DueError, parse_due
    from tapelab.grading.records import Unwritable
    from tapelab.grading.report import summary_table
    from tapelab.grading.roster import RosterError
    from tapelab.grading.sandbox import SandboxError

    if (args.jobs is not None and args.jobs < 1) or args.timeout < 1:
        return _usage("--jobs and --timeout must be at least 1")
    if not args.path.exists():
        return _usage(f"{args.path} does not exist: pass the folder of submissions or the LMS zip "
                      "(see `tapelab grade --help` for the accepted names)")
    try:
        due = dict(map(parse_due, args.due))
    except DueError as error:
        return _usage(str(error))
    errors: tuple[type[Exception], ...] = (InputError, CourseError, GradebookError, Unwritable, SandboxError,
                                           RosterError, DueError)
    if args.scheduler:
        if args.jobs is not None:
            return _usage("--jobs is for grading on this machine; with --scheduler each worker's "
                          "`dask worker --nthreads N` sets how many notebooks it runs at once")
        try:
            from tapelab.grading.cluster import ClusterError
        except ImportError as error:
            return _usage(f"--scheduler needs dask.distributed ({error}): install requirements.lock "
                          "(`make venv`) or `pip install 'tapelab[cluster]'`")
        errors += (ClusterError,)
    options = Options(source=args.path, course=args.course, jobs=args.jobs or os.cpu_count() or 1,
                      timeout=args.timeout, force=args.force, report=args.report, progress_stream=sys.stderr,
                      scheduler=args.scheduler, db_url=args.db, prefer=tuple(args.prefer), roster=args.roster,
                      due=due)
    _stop_on_sigterm()
    try:
        report = grade(options)
    except errors as error:
        print(f"tapelab grade: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:  # before grading started
        return _stopped(str(stop) or "SIGINT", None)
    except Exception as error:
        return _crashed(error)
    print(summary_table(report))
    if report.get("interrupted"):
        return _stopped(report["interrupted"], args.report or args.course.resolve() / "report.json")
    if report.get("nothing_to_grade"):
        return _usage(f"nothing to grade: {args.path} holds no notebook (.ipynb) and no student folder. Pass the "
                      "folder or zip of submissions (see `tapelab grade --help` for the accepted names)")
    if report["counts"].get("infra_error"):
        print(f"tapelab grade: {report['counts']['infra_error']} input(s) are infra_error, not graded: rerun the "
              "same command to grade them", file=sys.stderr)
        return 1
    return 0


def _feedback(args: argparse.Namespace) -> int:
    from tapelab.grading import CourseError, GradebookError
    from tapelab.grading.course import open_course
    from tapelab.grading.derived import refresh
    from tapelab.grading.lateness import apply_penalties
    from tapelab.grading.records import STATE_FILE, State

    if not (args.course / "nbgrader_config.py").is_file():
        print(f"tapelab feedback: --course {args.course} is not a course folder (no nbgrader_config.py): pass "
              "the folder `tapelab grade` graded into", file=sys.stderr)
        return 2
    try:
        course = open_course(args.course)
    except (CourseError, GradebookError) as error:
        print(f"tapelab feedback: {error}", file=sys.stderr)
        return 2
    try:
        state = State(course.root / STATE_FILE)
        apply_penalties(course.db_url, course.config)  # a manual score changes what a late day costs
        outputs = refresh(course, state.entries, force=args.force)
    finally:
        course.close()
    for what, where in outputs.written.items():
        print(f"wrote {what}: {where}")
    for problem in outputs.problems:
        print(f"tapelab feedback: warning: {problem}", file=sys.stderr)
    return 1 if outputs.problems else 0


def _lint(args: argparse.Namespace) -> int:
    from tapelab.lint import lint_paths, load_config
    from tapelab.lint.output import render

    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        print(f"tapelab lint: {', '.join(missing)} does not exist: pass .py files, notebooks or folders", file=sys.stderr)
        return 2
    try:
        config = load_config(args.config or Path.cwd())
    except (KeyError, ValueError) as error:  # KeyError's str() adds quotes: print its message as written
        print(f"tapelab lint: [tool.tapelab.lint] in pyproject.toml: {error.args[0]}", file=sys.stderr)
        return 2
    findings, warnings, _ = lint_paths(args.paths, config, jobs=args.jobs)
    for warning in warnings:
        print(f"tapelab lint: warning: {warning}", file=sys.stderr)
    text = render(findings, args.format)
    if text:
        print(text)
    return 1 if findings else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tapelab", description="Instructor tools for the tapelab course.")
    commands = parser.add_subparsers(dest="command", required=True)
    release = commands.add_parser(
        "release", help="generate student notebooks from solutions/ (nbgrader) and the answers distribution's data")
    release.add_argument("names", nargs="*", help="notebooks to release, e.g. 01_basic_tape (default: all)")
    release.add_argument("--out", type=Path, default=NOTEBOOKS, help="folder for student notebooks")
    release.add_argument("--answers", metavar="SETTING",
                         help='what students may see of the answers: "self-study" (solution() and every hint), '
                              '"locked-until:YYYY-MM-DD" or "locked" (solution() and the last hint say so); default: '
                              "c.TapelabCourse.answers in grader/nbgrader_config.py, else self-study. The answers "
                              "distribution's data (answers/) is written either way")
    release.set_defaults(run=_release)
    grade = commands.add_parser(
        "grade", help="autograde student submissions (nbgrader gradebook, feedback, grades.csv)",
        description="Autograde submissions in a sandbox, in parallel, resumably.",
        epilog=GRADE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    grade.add_argument("path", type=Path, metavar="PATH", help="folder of submissions or an LMS zip")
    grade.add_argument("--course", type=Path, default=GRADER / "course",
                       help="nbgrader course folder; set up from solutions/ when missing or empty "
                            "(default: grader/course)")
    grade.add_argument("--jobs", type=int, default=None,
                       help="notebooks executed at once on this machine (default: number of CPUs)")
    grade.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                       help="execute on the workers of this Dask scheduler instead of this machine; "
                            "the gradebook is still written only here")
    grade.add_argument("--db", metavar="URL",
                       help="gradebook of a new course folder: any SQLAlchemy URL, e.g. "
                            "postgresql+psycopg://USER:PASSWORD@HOST/DB (default: gradebook.db in the folder)")
    grade.add_argument("--timeout", type=int, default=600, metavar="SECONDS",
                       help="time limit per notebook; each cell also has nbgrader's Execute.timeout (default: 600)")
    grade.add_argument("--force", action="store_true", help="regrade submissions that are already graded")
    grade.add_argument("--report", type=Path, metavar="FILE",
                       help="where to write the JSON report, in a folder that exists (default: COURSE/report.json)")
    grade.add_argument("--prefer", action="append", default=[], metavar="FILE",
                       help="grade this input (its name as given, or its base name) for its student and notebook "
                            "whatever its time; repeatable (default: the newest submission wins)")
    grade.add_argument("--roster", type=Path, metavar="CSV",
                       help="student ids and names, in the CSV format of `nbgrader db student import` "
                            "(id,first_name,last_name,email[,lms_user_id]); every student in it joins the gradebook")
    grade.add_argument("--due", action="append", default=[], metavar="NOTEBOOK=ISO8601",
                       help="deadline of a notebook, e.g. 01_basic_tape=2026-10-01T23:59:00+02:00 (no zone: UTC), "
                            "written into the gradebook as its assignment's duedate; repeatable. Late penalties "
                            "follow the course's c.LatePenalty settings; roster columns extension_hours[.NOTEBOOK] "
                            "give a student more time")
    grade.set_defaults(run=_grade)
    feedback = commands.add_parser(
        "feedback", help="regenerate feedback pages and grades.csv from the gradebook (after manual grading)",
        description="Regenerate feedback/<student>/<assignment>/<notebook>.html (hidden tests removed) for every "
                    "submission whose grades, comments or autograded notebook changed, and grades.csv, from the "
                    "gradebook: manual scores and comments given in formgrader included. `tapelab grade` does "
                    "the same at the end of every run.")
    feedback.add_argument("--course", type=Path, default=GRADER / "course",
                          help="the nbgrader course folder (default: grader/course)")
    feedback.add_argument("--force", action="store_true", help="regenerate every page, changed or not")
    feedback.set_defaults(run=_feedback)
    lint = commands.add_parser(
        "lint", help="check .py files and notebooks for GradientTape pitfalls (docs/lint.md)",
        description="Report the guide's GradientTape pitfalls. Exit status: 0 clean, 1 findings, 2 usage error.")
    lint.add_argument("paths", nargs="+", type=Path, metavar="PATH", help=".py files, notebooks or folders")
    lint.add_argument("--format", choices=("text", "json", "github", "sarif"), default="text",
                      help="text (default), json, GitHub workflow annotations, or SARIF 2.1.0")
    lint.add_argument("--config", type=Path, metavar="DIR",
                      help="where to look for pyproject.toml's [tool.tapelab.lint] (default: here and above)")
    lint.add_argument("--jobs", type=int, default=None, help="processes (default: number of CPUs)")
    lint.set_defaults(run=_lint)
    from tapelab.grading.after_cli import add_commands  # insight, export, review

    add_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
