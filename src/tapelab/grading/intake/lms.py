"""Who sent a file and when, as LMS download names say (`parse`).

A flat name is split at the `_NN_` that starts a released notebook (`split_flat_name`); a copy number
that Canvas adds to a re-uploaded file (`01_basic_tape-1`) or a browser to a second download
(`01_basic_tape (1)`) is not part of the notebook (`notebook_name`). `parse` reads the student part
(before the notebook, or the name of a student's folder) with the first format of `FORMATS` that
matches it whole. A student part that matches none is the student id as it is.

| format | student part (example) | student id | names | time | upload number |
|---|---|---|---|---|---|
| Blackboard | `HW1_jdoe_attempt_2026-10-01-13-45-12` | `jdoe` | - | 2026-10-01 13:45:12 | - |
| Moodle | `Jane Doe_1234567_assignsubmission_file_` | `1234567` | Jane, Doe | - | - |
| Canvas, anonymous grading | `LATE_anon_Xy3Zq_67890` | `anon_Xy3Zq` | - | - | 67890 |
| Canvas | `doejane_LATE_12345_67890` | `doejane_12345` | - | - | 67890 |
| a time at the end | `alice_2026-10-01T13-45-12`, `alice_20261001T134512Z` | `alice` | - | 2026-10-01 13:45:12 | - |

- Blackboard names a file `<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file>`. The username
  is the last `_`-separated word before `_attempt_` (assignment names often hold `_`, usernames rarely).
- Moodle writes `<First Last>_<participant id>_assignsubmission_file_/<file>` (one folder per student,
  its default) or `..._assignsubmission_file_<file>` (flat). The student id is the participant id:
  Moodle's number for that student in that assignment, the same in every download and resubmission and
  never shared, while the full name can change, is shared by namesakes and reads "Participant" under
  blind marking. It is another number in another Moodle assignment, so keep the notebooks of one
  tapelab assignment in one Moodle assignment. Names are read when the full name has two words or more.
- Canvas writes `<lastfirst>[_LATE]_<user id>_<attachment id>_<file>` (`_late` in older versions), and
  `[LATE_]anon_<anonymous id>_<attachment id>_<file>` under anonymous grading. The attachment id is new
  with every upload and `LATE` comes and goes, so neither is part of the student id: every
  resubmission is the same student. The attachment id grows with each upload: it is the upload number
  that orders two files of one student sent at the same time.
- Any other name may end with an ISO-like time (`_YYYY-MM-DDTHH-MM-SS`, colons allowed, or
  `_YYYYMMDDTHHMMSS`, an optional `Z`), which is removed from the student id.

A time in a name carries no time zone: it is taken as UTC. A name whose "time" is not a date (month
13) does not match its format.

Which of a student's files counts is `resubmissions`' rule.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

__all__ = ["FORMATS", "LmsFormat", "LmsName", "guess_student", "notebook_name", "parse", "split_flat_name"]

_NN = re.compile(r"_(?=\d\d_)")
_COPY_NUMBER = re.compile(r"(?:-\d+| ?\(\d+\))$")  # Canvas: `01_basic_tape-1`; browsers: `01_basic_tape (1)`


@dataclass(frozen=True)
class LmsFormat:
    """One download name format: a pattern over the whole student part, and the id it yields.

    Named groups: `time` (a submission time), `full` (the student's "First Last"), `upload` (a number
    the LMS raises with each upload); `student` builds the id from the others (`str.format`).
    """

    name: str
    pattern: re.Pattern[str]
    student: str


@dataclass(frozen=True)
class LmsName:
    """What a student part says: the student id, names and submission time when the format gives them."""

    student: str
    first_name: str | None = None
    last_name: str | None = None
    submitted_at: datetime | None = None  # timezone-aware, UTC
    upload: int | None = None  # orders two uploads of one student (Canvas's attachment id)
    format: str | None = None  # the name of the LmsFormat that matched, None when none did


_LATE = r"(?:LATE_|late_)?"
_ISO_TIME = r"\d{4}-\d\d-\d\dT\d\d[-:]\d\d[-:]\d\d|\d{8}T\d{6}"

FORMATS: tuple[LmsFormat, ...] = (
    LmsFormat("Blackboard", re.compile(r"(?P<assignment>.+)_(?P<user>[^_]+)_attempt_(?P<time>\d{4}(?:-\d\d){5})"),
              "{user}"),
    LmsFormat("Moodle", re.compile(r"(?P<full>.+)_(?P<user>\d+)_assignsubmission_[a-z]+_?"), "{user}"),
    LmsFormat("Canvas, anonymous grading", re.compile(_LATE + r"(?P<user>anon_[A-Za-z0-9]+)_(?P<upload>\d+)"),
              "{user}"),
    LmsFormat("Canvas", re.compile(r"(?P<who>.+?)_" + _LATE + r"(?P<user>\d+)_(?P<upload>\d+)"), "{who}_{user}"),
    LmsFormat("a time at the end", re.compile(r"(?P<who>.+?)_(?P<time>" + _ISO_TIME + r")Z?"), "{who}"),
)


def notebook_name(stem: str, known: dict[str, str]) -> str | None:
    """The released notebook `stem` names, also with a copy number (`01_basic_tape-1`), or None."""
    if stem in known:
        return stem
    base = _COPY_NUMBER.sub("", stem)
    return base if base in known else None


def split_flat_name(stem: str, known: dict[str, str]) -> tuple[str, str] | None:
    """`jo_ann_01_basic_tape` -> (`jo_ann`, `01_basic_tape`) when the suffix is a known notebook."""
    for match in _NN.finditer(stem):
        student, notebook = stem[: match.start()], notebook_name(stem[match.end():], known)
        if student and notebook:
            return student, notebook
    return None


def guess_student(stem: str) -> str | None:
    """The student part of a flat name whose notebook is not released (`zed_99_nothing`: `zed`), or None."""
    match = _NN.search(stem)
    return stem[: match.start()] if match and match.start() > 0 else None


def _time(text: str) -> datetime | None:
    """`2026-10-01-13-45-12`, `2026-10-01T13:45:12` or `20261001T134512` as a UTC time; None if not a date."""
    try:
        return datetime.strptime(re.sub(r"\D", "", text), "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _read(fmt: LmsFormat, student_part: str) -> LmsName | None:
    match = fmt.pattern.fullmatch(student_part)
    if match is None:
        return None
    groups = match.groupdict()
    when = _time(groups["time"]) if groups.get("time") else None
    if groups.get("time") and when is None:
        return None
    first = last = None
    if (full := groups.get("full")) and len(words := full.split(maxsplit=1)) == 2:
        first, last = words
    upload = int(groups["upload"]) if groups.get("upload") else None
    return LmsName(fmt.student.format(**groups), first, last, when, upload, fmt.name)


def parse(student_part: str) -> LmsName:
    """The student, names and time that `student_part` gives in the first format it matches, else itself."""
    for fmt in FORMATS:
        if (name := _read(fmt, student_part)) is not None:
            return name
    return LmsName(student_part)
