"""The `tapelab` command: instructor tasks as subcommands. Usage errors exit with status 2."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tapelab.paths import GRADER, NOTEBOOKS

__all__ = ["main"]


def _release(args: argparse.Namespace) -> int:
    from tapelab.release import ReleaseError, release

    try:
        for path in release(args.names or None, out=args.out):
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
Notebook names start with two digits (01_basic_tape). A student id may contain underscores:
jo_ann_01_basic_tape.ipynb is student jo_ann. Zip entries with absolute paths or `..` are refused.

outputs, in the course folder: the gradebook, autograded/, feedback/<student>/<assignment>/*.html,
grades.csv, report.json (every input file with its status), grading.log.jsonl, grading-state.json.
A second run regrades only new or changed files; --force regrades everything.

several machines: start `dask scheduler` on one, `dask worker tcp://HOST:8786` on each grading
machine (same checkout and `make venv`, as root), then pass --scheduler tcp://HOST:8786 here.
several graders at once: each uses a course folder of their own and the same --db server URL.

statuses: graded, tampered, timed_out, kernel_died, output_limit, invalid_notebook,
unknown_notebook, missing_notebook, duplicate, unsafe_path, infra_error (see docs/instructor-guide.md).
exit status: 0 done, 1 some submissions hit infrastructure errors (rerun), 2 usage error.
"""


def _usage(message: str) -> int:
    print(f"tapelab grade: {message}", file=sys.stderr)
    return 2


def _grade(args: argparse.Namespace) -> int:
    from tapelab.grading import CourseError, GradebookError, InputError, Options, grade
    from tapelab.grading.report import summary_table

    if (args.jobs is not None and args.jobs < 1) or args.timeout < 1:
        return _usage("--jobs and --timeout must be at least 1")
    if not args.path.exists():
        return _usage(f"{args.path} does not exist: pass the folder of submissions or the LMS zip "
                      "(see `tapelab grade --help` for the accepted names)")
    errors: tuple[type[Exception], ...] = (InputError, CourseError, GradebookError)
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
                      scheduler=args.scheduler, db_url=args.db)
    try:
        report = grade(options)
    except errors as error:
        print(f"tapelab grade: {error}", file=sys.stderr)
        return 2
    print(summary_table(report))
    return 1 if report["counts"].get("infra_error") else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tapelab", description="Instructor tools for the tapelab course.")
    commands = parser.add_subparsers(dest="command", required=True)
    release = commands.add_parser("release", help="generate student notebooks from solutions/ (nbgrader)")
    release.add_argument("names", nargs="*", help="notebooks to release, e.g. 01_basic_tape (default: all)")
    release.add_argument("--out", type=Path, default=NOTEBOOKS, help="folder for student notebooks")
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
                       help="where to write the JSON report (default: COURSE/report.json)")
    grade.set_defaults(run=_grade)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
