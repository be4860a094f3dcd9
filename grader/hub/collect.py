"""The hub's collect: the submissions in the exchange's inbound/, read as root, trusting nothing a student wrote.

nbgrader's collect believes the exchange: the student named in a folder's name, the time in it and in
timestamp.txt, every link it finds; one odd folder stops it for the whole class. Here:
- A submission belongs to the Unix user who owns its folder, whatever its name says (a name that claims
  another student is noted). Folders of anyone but the course's students are left alone.
- Nothing is followed: the folder must be a real folder; the notebook and submission_secret.txt are read
  only as regular files owned by that student (`read_regular`, checked on the file opened). Nothing else in
  the folder is ever opened: a 2 GB file, a fifo, a device or a link to one costs a `lstat`, and the walk that
  measures the folder is bounded.
- Its time is the newest status-change time (ctime) of the folder and of everything in it, which no user can
  set back: a forged name or timestamp.txt changes nothing, and an edit after submitting dates the submission.
- Each folder gets its own status in the returned rows; the newest usable folder of each student is
  collected (so a resubmission after a grading round replaces the one graded before), the rest superseded.
- A submission whose secret is missing or shared with another student's is collected with `feedback_held`:
  its feedback would go to a file name another student can fetch.
"""
from __future__ import annotations

import os
import shutil
import stat
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from tapelab.grading.intake.archive import MAX_NOTEBOOK_BYTES, read_regular
from tapelab.outside import printable

SECRET = "submission_secret.txt"
MAX_ENTRIES = 2000  # what one submission folder may hold, walked; more and it is refused unread
MAX_SECRET_BYTES = 1024
STATUSES = {
    "collected": "copied for grading",
    "superseded": "an older submission of the same student: the newest usable one was collected",
    "not_a_folder": "a link, file or special file in inbound/, not a folder: not followed",
    "not_a_student": "the folder belongs to no student of the course: left alone",
    "bad_name": "the name is not <student>+<assignment>+<time>...: not read",
    "no_notebook": "the notebook is missing, or is a link, special file, another user's file or too large",
    "too_many_files": f"more than {MAX_ENTRIES} entries: not read",
}


@dataclass
class Row:
    """One folder of inbound/ and what became of it."""

    folder: str  # its name, printable
    status: str
    student: str | None = None  # the owner, when a student
    submitted_at: str | None = None  # ISO UTC, from ctimes
    size: int = 0  # bytes of its regular files, links not followed
    flags: list[str] = field(default_factory=list)
    notebooks: dict = field(default_factory=dict, repr=False)  # name -> bytes, for `collected` only
    secret: bytes | None = field(default=None, repr=False)

    def public(self) -> dict:
        row = asdict(self)
        del row["notebooks"], row["secret"]
        return row


def _walk(folder: Path, uid: int) -> tuple[float, int, list[str]] | None:
    """(newest ctime, bytes of regular files, notes) of `folder` and everything under it, by lstat only;
    None when it holds more than MAX_ENTRIES."""
    newest, size, notes, seen = os.lstat(folder).st_ctime, 0, set(), 0
    pending = [folder]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            notes.add("a folder in it could not be read")
            continue
        seen += len(entries)
        if seen > MAX_ENTRIES:
            return None
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            newest = max(newest, info.st_ctime)
            if stat.S_ISDIR(info.st_mode):
                pending.append(Path(entry.path))
            elif stat.S_ISREG(info.st_mode):
                size += info.st_size
            else:
                notes.add("links and special files in it were ignored, not followed")
            if info.st_uid != uid:
                notes.add("it holds files of another user: they were not read")
    return newest, size, sorted(notes)


def examine(path: Path, assignment: str, students: dict[int, str], notebooks: list[str]) -> Row | None:
    """The row of one inbound/ entry; None for a well-named folder of another assignment."""
    name = printable(path.name)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        return Row(name, "not_a_folder")
    owner = students.get(info.st_uid)
    if owner is None:
        return Row(name, "not_a_student")
    parts = path.name.split("+")
    if len(parts) < 3 or not all(parts[:3]) or not parts[1].isprintable():
        return Row(name, "bad_name", owner)
    if parts[1] != assignment:
        return None
    walked = _walk(path, info.st_uid)
    if walked is None:
        return Row(name, "too_many_files", owner)
    newest, size, notes = walked
    row = Row(name, "collected", owner, datetime.fromtimestamp(newest, timezone.utc).isoformat(), size, notes)
    if parts[0] != owner:
        row.flags.append(f"named for {printable(parts[0])!r}: collected as its owner's")
    for notebook in notebooks:
        data = read_regular(path / f"{notebook}.ipynb", MAX_NOTEBOOK_BYTES, owner=info.st_uid)
        if data is None:
            return Row(name, "no_notebook", owner, row.submitted_at, size, row.flags)
        row.notebooks[notebook] = data
    row.secret = read_regular(path / SECRET, MAX_SECRET_BYTES, owner=info.st_uid)
    return row


def collect(inbound: Path, assignment: str, students: dict[int, str], notebooks: list[str],
            submitted: Path) -> list[dict]:
    """Examine every entry of `inbound`, copy each student's newest usable submission into
    `submitted`/<student>/<assignment>/ (a folder only root can write), return every row (`Row.public`)."""
    rows = []
    for entry in sorted(os.listdir(inbound)):
        try:
            row = examine(inbound / entry, assignment, students, notebooks)
        except OSError as error:  # gone or changed while read: that folder's problem only
            row = Row(printable(entry), "no_notebook", flags=[f"could not be read: {error.strerror}"])
        if row is not None:
            rows.append(row)
    newest: dict[str, Row] = {}
    for row in rows:
        if row.status == "collected":
            kept = newest.get(row.student)
            if kept is not None and kept.submitted_at >= row.submitted_at:
                row.status = "superseded"
            else:
                if kept is not None:
                    kept.status = "superseded"
                newest[row.student] = row
    secrets = [row.secret for row in newest.values() if row.secret]
    for row in newest.values():
        if not row.secret or not row.secret.strip() or secrets.count(row.secret) > 1:
            row.flags.append("feedback_held: its submission_secret.txt is missing, unreadable or another's")
        _store(row, submitted / row.student / assignment)
    return [row.public() for row in rows]


def _store(row: Row, target: Path) -> None:
    """Write the collected notebook(s), the secret and nbgrader's timestamp.txt (the ctime-based time)."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for notebook, data in row.notebooks.items():
        (target / f"{notebook}.ipynb").write_bytes(data)
    if row.secret:
        (target / SECRET).write_bytes(row.secret)
    when = datetime.fromisoformat(row.submitted_at)
    (target / "timestamp.txt").write_text(when.strftime("%Y-%m-%d %H:%M:%S.%f %Z"))


def held(rows: list[dict]) -> set[str]:
    """The students whose collected submission must not get feedback."""
    return {row["student"] for row in rows
            if row["status"] == "collected" and any(flag.startswith("feedback_held") for flag in row["flags"])}
