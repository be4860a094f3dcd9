"""Which of a student's files of one notebook counts: the rule of resubmissions.

The one given with --prefer, else the newest (`discover` dates each file: nbgrader's timestamp.txt,
else the time in its name, else the file's own time), else, at the same time, the higher LMS upload
number; older files are `superseded`. Files still equal keep the first in name order, the others are
`duplicate`. Across runs, the coordinator never grades a file older than the submission it graded
(`is_older`).
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Protocol, TypeVar

from tapelab.errors import UsageError
from tapelab.grading.intake.archive import name_parts, shown

__all__ = ["Dated", "PreferError", "is_older", "lost", "newest", "resolve"]

_NEVER = datetime.min.replace(tzinfo=timezone.utc)


class PreferError(UsageError, ValueError):
    """A --prefer value names no gradable file, or two files of one student and notebook."""


class Dated(Protocol):
    """What the rule reads and writes of an input file (`inputs.Candidate`)."""

    source: str
    student: str | None
    notebook: str | None
    submitted_at: datetime | None
    time_origin: str
    upload: int | None
    preferred: bool
    status: str | None
    reason: str


_File = TypeVar("_File", bound=Dated)


def _age(file: Dated) -> tuple[datetime, int]:
    return file.submitted_at or _NEVER, -1 if file.upload is None else file.upload


def _when(file: Dated) -> str:
    if file.submitted_at is None:
        return "at an unknown time"
    return f"at {file.submitted_at:%Y-%m-%d %H:%M:%S} UTC ({file.time_origin})"


def newest(files: Sequence[_File]) -> _File:
    """The file graded among `files` of one student and notebook (in name order): see the module docstring."""
    return next((f for f in files if f.preferred), None) or max(files, key=_age)  # max keeps the first of equals


def lost(file: Dated, winner: Dated) -> tuple[str, str]:
    """(status, reason) of `file`, not graded because `winner` of the same student and notebook is."""
    again = f"; to grade this file instead, rerun with --prefer '{file.source}'"
    if winner.preferred:
        return "superseded", f"not the file given with --prefer: `{winner.source}` is graded{again}"
    if file.submitted_at != winner.submitted_at:
        return "superseded", (f"`{winner.source}`, submitted {_when(winner)}, is newer than this file, "
                              f"submitted {_when(file)}, and is graded{again}")
    if _age(file) != _age(winner):
        return "superseded", (f"`{winner.source}` is graded: both are dated {_when(file)}, and the LMS numbered "
                              f"its upload after this one ({winner.upload} > {file.upload}){again}")
    if winner.source == file.source:
        return "duplicate", f"the input holds `{file.source}` more than once, with one time; the first copy is graded"
    return "duplicate", (f"`{winner.source}` is graded for the same student and notebook, submitted at the same "
                         f"time (student ids are compared ignoring case and Unicode normalization: `{winner.student}`)")


def is_older(candidate_time: datetime | None, graded_time: str | None) -> bool:
    """Whether a file submitted at `candidate_time` is older than the submission graded before, whose time
    `graded_time` is stored as an ISO string (naive: UTC). Unknown on either side, or unreadable: False."""
    if candidate_time is None or not graded_time:
        return False
    try:
        graded = datetime.fromisoformat(graded_time)
    except ValueError:
        return False
    utc = [t if t.tzinfo else t.replace(tzinfo=timezone.utc) for t in (candidate_time, graded)]
    return utc[0] < utc[1]


def _preferred(groups: dict[tuple[str, str], list[Dated]], prefer: Sequence[str]) -> None:
    """Mark the files `prefer` names (by `source`, or by base name); raise InputError for a value that
    names no gradable file, or two files of one student and notebook."""
    chosen: dict[tuple[str, str], tuple[str, Dated]] = {}
    for value in prefer:
        hits = [(key, c) for key, cands in groups.items() for c in cands
                if value in (c.source, *name_parts(c.source)[-1:])]
        if not hits:
            raise PreferError(f"--prefer {shown(value)!r} names no gradable file of the input: give a file's name or "
                             "its path inside the input, as the report's `source` shows it")
        for key, cand in hits:
            if key in chosen:
                other = chosen[key][0]
                also = f"and --prefer {shown(other)!r} name" if other != value else "names"
                raise PreferError(f"--prefer {shown(value)!r} {also} two files of {shown(key[0])}'s {key[1]} "
                                 f"(`{chosen[key][1].source}`, `{cand.source}`): give one path per student and "
                                 "notebook, as the report's `source` shows it")
            chosen[key] = value, cand
            cand.preferred = True


def resolve(found: list[Dated], prefer: Sequence[str]) -> None:
    """One id per student (its first spelling in name order, so `Bob` and `bob` never make two folders of
    the course), and one graded file per student and notebook: the --prefer one, else the newest, else
    the first in name order; the others get `superseded` or `duplicate`."""
    spelling: dict[str, str] = {}
    groups: dict[tuple[str, str], list[Dated]] = {}
    for cand in found:
        if cand.status is None:
            cand.student = spelling.setdefault(cand.student.casefold(), cand.student)
            groups.setdefault((cand.student, cand.notebook), []).append(cand)
    _preferred(groups, prefer)
    for cands in groups.values():
        winner = newest(cands)
        for cand in cands:
            if cand is not winner:
                cand.status, cand.reason = lost(cand, winner)
