"""Read a class roster: the CSV that `nbgrader db student import` reads, for ids and names in formgrader.

A header row names the columns: `id` (required), `first_name`, `last_name`, `email`, `lms_user_id`
(optional, in any order; other columns are ignored and spaces around names and values are dropped,
as nbgrader drops them around column names). UTF-8, with or without the byte order mark a spreadsheet
writes. Empty values are unknown (nbgrader stores them as NULL). A line whose cells are all empty is
skipped. Every id must be usable as an nbgrader student id and a folder name (`inputs.student_problem`),
and no id or LMS user id may appear twice (compared ignoring case and Unicode normalization).

Optional `extension_hours` (every assignment) and `extension_hours.<assignment>` columns give a
student more time: a number of hours >= 0, stored as the submission's extension in the gradebook
(`lateness.set_extensions`), where nbgrader adds it to the deadline.

`Roster.match` finds the person behind a submission's student id: by id, else by an `lms_user_id`
equal to one of the id's `_`-separated parts, as a Canvas download's `doejane_12345` carries the
Canvas user id 12345. When the match is through `lms_user_id`, the coordinator grades the file under
the roster's `id`, so every resubmission, whatever its file name, lands on the same student.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from tapelab.errors import UsageError
from tapelab.outside import normal
from tapelab.grading.intake.discover import student_problem

__all__ = ["COLUMNS", "Person", "Roster", "RosterError", "read_roster"]

COLUMNS = ("id", "first_name", "last_name", "email", "lms_user_id")  # nbgrader's Student columns
EXTENSION = "extension_hours"  # extension_hours, or extension_hours.<assignment>
_MAX_HOURS = 24 * 366  # a year: more is a typo
_FIX = "fix the roster and rerun (columns: " + ",".join(COLUMNS) + "; only id is required)"


class RosterError(UsageError, ValueError):
    """The roster cannot be used; the message names the file, the line and the fix."""


def _key(text: str) -> str:
    return normal(text).casefold()


@dataclass(frozen=True)
class Person:
    """One roster row: a student id and what nbgrader's gradebook stores about the student."""

    id: str
    first_name: str | None = None
    last_name: str | None = None
    email: str | None = None
    lms_user_id: str | None = None
    extensions: tuple[tuple[str, float], ...] = ()  # (assignment, or "" for every one; hours)

    def names(self) -> dict[str, str | None]:
        """The gradebook's fields of this student other than the id (for `update_or_create_student`)."""
        return {"first_name": self.first_name, "last_name": self.last_name, "email": self.email,
                "lms_user_id": self.lms_user_id}


@dataclass
class Roster:
    """The people of a roster file, found by id or LMS user id."""

    path: Path
    people: list[Person]
    _by_id: dict[str, Person] = field(init=False, repr=False)
    _by_lms: dict[str, Person] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {_key(p.id): p for p in self.people}
        self._by_lms = {_key(p.lms_user_id): p for p in self.people if p.lms_user_id}

    def match(self, student_id: str) -> Person | None:
        """The person whose id is `student_id`, else the one whose lms_user_id is one `_`-separated part
        of it (when exactly one is), else None."""
        if (person := self._by_id.get(_key(student_id))) is not None:
            return person
        hits = {self._by_lms[key] for part in student_id.split("_") if (key := _key(part)) in self._by_lms}
        return hits.pop() if len(hits) == 1 else None

    def extensions(self) -> dict[str, dict[str, float]]:
        """{student id: {assignment or "": hours}} of every student the roster gives more time."""
        return {p.id: dict(p.extensions) for p in self.people if p.extensions}

    def identify(self, student_id: str) -> str:
        """The id to grade `student_id`'s files under: the matched person's id, else `student_id` itself
        (pass it to `inputs.discover`, so files are compared once every name is resolved to a person)."""
        person = self.match(student_id)
        return student_id if person is None else person.id


def _text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise RosterError(f"roster {path} cannot be read ({error.strerror}): pass the path of a CSV file "
                          "with --roster") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise RosterError(f"roster {path}, line {line}: not UTF-8 (byte 0x{raw[error.start]:02x}): save it as "
                          "CSV UTF-8 from the spreadsheet, and rerun") from None


def _row(path: Path, line: int, row: dict) -> Person | None:
    """The Person of one CSV row (None for an empty row), or RosterError."""
    values = {key: (value or "").strip() if isinstance(value, str) else "" for key, value in row.items()}
    if not any(values.values()):
        return None
    fields = {column: values.get(column) or None for column in COLUMNS}
    if fields["id"] is None:
        raise RosterError(f"roster {path}, line {line}: the id is empty: give this student an id, or delete the line")
    fields["id"] = normal(fields["id"])
    if why := student_problem(fields["id"]):
        raise RosterError(f"roster {path}, line {line}: {why}: {_FIX}")
    return Person(**fields, extensions=_extensions(path, line, values))


def _extensions(path: Path, line: int, values: dict[str, str]) -> tuple[tuple[str, float], ...]:
    """The (assignment, hours) of the `extension_hours[.ASSIGNMENT]` cells that are filled in."""
    out = []
    for column, value in values.items():
        base, _, assignment = (column or "").partition(".")
        if base != EXTENSION or not value:
            continue
        try:
            hours = float(value)
        except ValueError:
            hours = -1.0
        if not 0 <= hours <= _MAX_HOURS:
            raise RosterError(f"roster {path}, line {line}: {column} `{value}` is not a number of hours from 0 to "
                              f"{_MAX_HOURS}: "
                              "write the extra hours (36, 1.5) or leave the cell empty")
        out.append((assignment, hours))
    return tuple(sorted(out))


def read_roster(path: Path) -> Roster:
    """The roster in `path` (see the module docstring), or RosterError naming the file, the line and the fix."""
    reader = csv.DictReader(io.StringIO(_text(path), newline=""))
    try:
        reader.fieldnames = [name.strip() for name in reader.fieldnames or []]
        if "id" not in reader.fieldnames:
            header = ",".join(reader.fieldnames) or "nothing"
            raise RosterError(f"roster {path}, line 1: no `id` column (the first line holds {header}): the first "
                              f"line must name the columns, as for `nbgrader db student import`; {_FIX}")
        people: list[Person] = []
        seen: dict[tuple[str, str], int] = {}  # (column, casefolded value) -> its line
        for row in reader:
            if (person := _row(path, reader.line_num, row)) is None:
                continue
            for column in ("id", "lms_user_id"):
                if (value := getattr(person, column)) is None:
                    continue
                if (first := seen.setdefault((column, _key(value)), reader.line_num)) != reader.line_num:
                    raise RosterError(f"roster {path}, line {reader.line_num}: {column} `{value}` is already on line "
                                      f"{first} (compared ignoring case): keep one line per student")
            people.append(person)
    except csv.Error as error:
        raise RosterError(f"roster {path}, line {reader.line_num + 1}: not a CSV file ({error}): {_FIX}") from None
    return Roster(path, people)
