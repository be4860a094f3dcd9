"""`tapelab release`: student notebooks generated from solutions/ by nbgrader, and the answers data.

It writes into the repository it is run in (found from the current folder upward, or `--repo`), which
must be the checkout this tapelab is installed from: the notebooks are made by that checkout's code from
that checkout's solutions/, so a release run in another clone (its venv pointing elsewhere) is refused
rather than writing into the other one.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from tapelab.errors import UsageError
from tapelab.paths import NOTEBOOKS, REPO, repository_of

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", help="notebooks to release, e.g. 01_basic_tape (default: all)")
    parser.add_argument("--repo", type=Path, help="the tapelab checkout to release into (default: the one holding "
                                                  "the current folder); must be the one tapelab is installed from")
    parser.add_argument("--out", type=Path, help="folder for student notebooks (default: REPO/notebooks)")
    parser.add_argument("--answers", metavar="SETTING",
                        help='what students may see of the answers: "self-study" (solution() and every hint), '
                             '"locked-until:YYYY-MM-DD" or "locked" (solution() and the last hint say so); default: '
                             "c.TapelabCourse.answers in grader/nbgrader_config.py, else self-study. The answers "
                             "distribution's data (answers/) is written either way")


def _repository(given: Path | None) -> Path:
    """The checkout to release into: `given`, else the one holding the current folder; refused unless it is
    the checkout tapelab runs from."""
    start = given if given is not None else Path.cwd()
    found = repository_of(start)
    where = f"--repo {start}" if given is not None else f"the current folder {start.resolve()}"
    if found is None:
        raise UsageError(f"{where} is not inside a tapelab checkout (no pyproject.toml of tapelab with solutions/ "
                         f"beside it): cd into the checkout to release, or pass --repo {REPO}")
    if found != REPO:
        raise UsageError(f"{where} is in the checkout {found}, but this tapelab is installed from {REPO}: nothing "
                         f"was written. Run that checkout's own `{found / '.venv' / 'bin' / 'tapelab'} release` "
                         f"(or `make release` there), or cd into {REPO} to release that one")
    return found


def run(args: argparse.Namespace) -> int:
    from tapelab.release import release  # first: without the course extra, that is what to say
    from tapelab.release_answers import ANSWER_DATA
    from tapelab.release_expected import EXPECTED

    _repository(args.repo)

    for path in release(args.names or None, out=args.out or NOTEBOOKS, answers=args.answers,
                        answer_data=ANSWER_DATA, expected_data=EXPECTED):
        print(f"released {path}")
    return 0
