"""`tapelab grade`: autograde submissions in a sandbox, in parallel, resumably (see GRADE_EPILOG)."""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from tapelab.errors import UsageError
from tapelab.outside import printable
from tapelab.paths import GRADER

__all__ = ["add_arguments", "run"]

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
exit status: 0 every input has a final status, 1 some inputs are infra_error, the grader failed or a
file could not be written (a full disk: report.json keeps the previous run's; free space and rerun),
2 usage error, nothing to grade in PATH, or an unusable course folder, gradebook, roster or report
path (nothing was graded), 130/143 stopped by Ctrl-C/SIGTERM (report.json lists what was graded;
rerun to finish).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Autograde submissions in a sandbox, in parallel, resumably."
    parser.epilog = GRADE_EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("path", type=Path, metavar="PATH", help="folder of submissions or an LMS zip")
    parser.add_argument("--course", type=Path, default=GRADER / "course",
                        help="nbgrader course folder; set up from solutions/ when missing or empty "
                             "(default: grader/course)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="notebooks executed at once on this machine (default: number of CPUs)")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                        help="execute on the workers of this Dask scheduler instead of this machine; "
                             "the gradebook is still written only here")
    parser.add_argument("--db", metavar="URL",
                        help="gradebook of a new course folder: any SQLAlchemy URL, e.g. "
                             "postgresql+psycopg://USER:PASSWORD@HOST/DB (default: gradebook.db in the folder)")
    parser.add_argument("--timeout", type=int, default=600, metavar="SECONDS",
                        help="time limit per notebook; each cell also has nbgrader's Execute.timeout (default: 600)")
    parser.add_argument("--force", action="store_true", help="regrade submissions that are already graded")
    parser.add_argument("--report", type=Path, metavar="FILE",
                        help="where to write the JSON report, in a folder that exists (default: COURSE/report.json)")
    parser.add_argument("--prefer", action="append", default=[], metavar="FILE",
                        help="grade this input (its name as given, or its base name) for its student and notebook "
                             "whatever its time; repeatable (default: the newest submission wins)")
    parser.add_argument("--roster", type=Path, metavar="CSV",
                        help="student ids and names, in the CSV format of `nbgrader db student import` "
                             "(id,first_name,last_name,email[,lms_user_id]); every student in it joins the gradebook")
    parser.add_argument("--due", action="append", default=[], metavar="NOTEBOOK=ISO8601",
                        help="deadline of a notebook, e.g. 01_basic_tape=2026-10-01T23:59:00+02:00 (no zone: UTC), "
                             "written into the gradebook as its assignment's duedate; repeatable. Late penalties "
                             "follow the course's c.LatePenalty settings; roster columns extension_hours[.NOTEBOOK] "
                             "give a student more time")


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
    print(f"tapelab grade: the grader itself failed ({type(error).__name__}: {printable(error)}). Everything graded "
          f"before is kept (gradebook, grading-state.json): rerun the same command. If it fails again, {where}.",
          file=sys.stderr)
    return 1


def _not_saved(report: dict) -> str:
    """One line for a run whose report.json could not be written (a full disk): why, and what was not graded."""
    missed = [e for e in report["submissions"] if e["status"] == "infra_error"]
    who = ", ".join(printable(f"{e['student']}/{e['notebook']}") for e in missed[:12])
    who += " ..." if len(missed) > 12 else ""
    left = f"{len(missed)} input(s) were not graded ({who})" if missed else "every input has its status above"
    return (f"{report['report_unwritten']}. That report is not this run's: {left}; the gradebook and "
            "grading-state.json keep what was graded. Free space and rerun the same command: what was graded is "
            "skipped, the rest is graded")


def run(args: argparse.Namespace) -> int:
    from tapelab.grading import Options, grade
    from tapelab.grading.grades.lateness import parse_due
    from tapelab.grading.records import WriteFailed
    from tapelab.grading.report import summary_table

    if (args.jobs is not None and args.jobs < 1) or args.timeout < 1:
        raise UsageError("--jobs and --timeout must be at least 1")
    if not args.path.exists():
        raise UsageError(f"{args.path} does not exist: pass the folder of submissions or the LMS zip "
                         "(see `tapelab grade --help` for the accepted names)")
    due = dict(map(parse_due, args.due))
    if args.scheduler:
        if args.jobs is not None:
            raise UsageError("--jobs is for grading on this machine; with --scheduler each worker's "
                             "`dask worker --nthreads N` sets how many notebooks it runs at once")
        try:
            import tapelab.grading.execution.cluster  # noqa: F401  (dask.distributed, before anything is graded)
        except ImportError as error:
            raise UsageError(f"--scheduler needs dask.distributed ({error}): install requirements.lock "
                             "(`make venv`) or `pip install 'tapelab[cluster]'`") from None
    options = Options(source=args.path, course=args.course, jobs=args.jobs or os.cpu_count() or 1,
                      timeout=args.timeout, force=args.force, report=args.report, progress_stream=sys.stderr,
                      scheduler=args.scheduler, db_url=args.db, prefer=tuple(args.prefer), roster=args.roster,
                      due=due)
    _stop_on_sigterm()
    try:
        report = grade(options)
    except (UsageError, WriteFailed):
        raise  # nothing was graded, or a file could not be written: `main` says what to do (exit 2, 1)
    except KeyboardInterrupt as stop:  # before grading started
        return _stopped(str(stop) or "SIGINT", None)
    except Exception as error:
        return _crashed(error)
    print(summary_table(report))
    if report.get("report_unwritten"):
        print(f"tapelab grade: {_not_saved(report)}", file=sys.stderr)
        return 1
    if report.get("interrupted"):
        return _stopped(report["interrupted"], args.report or args.course.resolve() / "report.json")
    if report.get("nothing_to_grade"):
        raise UsageError(f"nothing to grade: {args.path} holds no notebook (.ipynb) and no student folder. Pass the "
                         "folder or zip of submissions (see `tapelab grade --help` for the accepted names)")
    if report["counts"].get("infra_error"):
        print(f"tapelab grade: {report['counts']['infra_error']} input(s) are infra_error, not graded: rerun the "
              "same command to grade them", file=sys.stderr)
        return 1
    return 0
