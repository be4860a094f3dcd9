"""The table of `tapelab` verbs and the one place their errors become an exit status.

Faults end in one paragraph on stderr naming what happened and what to do, never a Python traceback:
a `tapelab.errors.UsageError` (an argument, a course folder, a gradebook, a roster, an output path that
cannot be written) exits 2, an `InfraError` 1 (rerun; a write that failed part way, as on a full disk, is
one), and `tapelab grade` adds its own statuses (see its --help). The message is printed in its printable
form (`tapelab.outside`), so no argument echoed in it reaches the terminal raw. A verb whose packages
are not installed (the base install is the linter alone) exits 2 naming the package and `tapelab[course]`.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from tapelab.errors import TapelabError, UsageError
from tapelab.outside import printable

__all__ = ["VERBS", "build_parser", "main"]

# verb -> (module in tapelab.cli, one-line help). Only the chosen verb's module is imported.
VERBS = {
    "release": ("release", "generate student notebooks from solutions/ (nbgrader) and the answers distribution's data"),
    "grade": ("grade", "autograde student submissions (nbgrader gradebook, feedback, grades.csv)"),
    "feedback": ("feedback", "regenerate feedback pages and grades.csv from the gradebook (after manual grading)"),
    "lint": ("lint", "check .py files and notebooks for GradientTape pitfalls (docs/lint.md)"),
    "insight": ("insight", "class report: scores, completion, named mistakes per exercise (HTML, CSV, JSON)"),
    "export": ("export", "grades for an LMS: Canvas import CSV, Gradescope results.json, long CSV"),
    "review": ("review", "every student's answer to one exercise, grouped by cause code"),
    "copies": ("copies", "answers that match another student's: their variant, or the same wrong code (facts)"),
}


def _chosen(argv: list[str]) -> str | None:
    """The verb `argv` names: its first argument that is not an option (the top level takes no values)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    """The parser for `argv`: every verb listed with its help, the arguments only of the verb it chooses."""
    parser = argparse.ArgumentParser(prog="tapelab", description="Instructor tools for the tapelab course.")
    commands = parser.add_subparsers(dest="command", required=True)
    chosen = _chosen(argv)
    for verb, (module, help_text) in VERBS.items():
        sub = commands.add_parser(verb, help=help_text)
        if verb == chosen:
            command = importlib.import_module(f"tapelab.cli.{module}")
            command.add_arguments(sub)
            sub.set_defaults(run=command.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser(argv).parse_args(argv)
        return args.run(args)
    except ModuleNotFoundError as missing:  # the base install is `tapelab lint` alone
        if missing.name is None or missing.name.partition(".")[0] == "tapelab":
            raise  # a module of tapelab's own: a bug, not an install
        error: TapelabError = UsageError(
            f"needs the package `{missing.name}`, which is not installed: install the course's dependencies with "
            "`pip install 'tapelab[course]'` (or `make venv` in a clone); `tapelab lint` alone needs none")
    except TapelabError as caught:
        error = caught
    print(f"tapelab {_chosen(argv)}: {printable(error)}", file=sys.stderr)  # one line, whatever the input held
    return error.exit_code
