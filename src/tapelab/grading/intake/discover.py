"""Find the submissions in PATH: nbgrader's submitted/ layout, a flat folder, per-student folders, a zip.

Accepted names (relative to PATH, or inside the zip):

    submitted/<student>/<assignment>/<notebook>.ipynb   nbgrader's layout (PATH may be submitted/ itself)
    <student>/<assignment>/<notebook>.ipynb
    <student>/<notebook>.ipynb                          one folder per student
    <student>_<notebook>.ipynb                          flat, as LMS downloads are; at any depth

Notebook names start with two digits (`01_basic_tape`), with or without the copy number an LMS adds
to a re-uploaded file (`01_basic_tape-1`). A student id may contain underscores: a flat name is split
at the `_NN_` that starts a known notebook name (`jo_ann_01_basic_tape.ipynb` is student `jo_ann`).
The student part of a flat name or of a student folder is read by `lms.parse` (Blackboard, Canvas,
Moodle, a time at the end): `doejane_12345_67890` is Canvas's student `doejane_12345`. nbgrader's
layouts take the student id as it is. Hidden files, `__MACOSX/`, `.ipynb_checkpoints/` and
non-notebook files are ignored.

Each file's submission time (`Candidate.submitted_at`, UTC) is nbgrader's `timestamp.txt` in its
folder, else the time in its LMS name, else the file's time (a folder file's mtime, a zip entry's
time, see `archive`). The newest file of a student's notebook is graded, the older ones are
`superseded`, unless `--prefer` names one (the rule: `resubmissions`).

Names are data, never paths: a zip entry is judged from its name string and copied, with a bound,
to a path chosen here (`scratch/<entry number>/`); a folder is walked without following links.
Every notebook file, link or special file ends as a Candidate, with a status when it cannot be
graded (`bad_name`, `unsafe_path`, `too_large`, `unreadable`, `unknown_notebook`, `superseded`,
`duplicate`), and a student folder without any notebook as a `missing_notebook` Candidate. Student
ids are NFC normalised, and compared ignoring case, so two files for one student and notebook never
both count.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from tapelab.errors import UsageError
from tapelab.outside import normal
from tapelab.grading.intake import lms
from tapelab.grading.intake.archive import (MAX_ENTRY_BYTES, MAX_PART_BYTES, Archive, Entry, EntryError, ZipRejected,
                                     from_unix, mode_kind, name_parts, name_problem, read_regular, shown)
from tapelab.grading.intake.lms import guess_student, notebook_name, split_flat_name
from tapelab.grading.intake.resubmissions import PreferError, is_older, resolve

__all__ = ["Candidate", "InputError", "discover", "is_older", "shown", "split_flat_name", "student_problem"]

_STAMP = "timestamp.txt"
_SKIP_PARTS = {"__MACOSX", ".ipynb_checkpoints", "__pycache__"}
_SUFFIX = ".ipynb"
_MAX_STUDENT_CHARS = 128  # nbgrader's Student.id column
_MAX_TIMESTAMP_BYTES = 1024


class InputError(UsageError, ValueError):
    """PATH cannot be read at all (missing, not a folder or zip, a broken zip), or --prefer names no input."""


@dataclass
class Candidate:
    """One input file and who/what it is, or why it cannot be graded (`status`)."""

    source: str  # the name as given (relative path or zip entry), escaped by `shown`
    path: Path | None
    student: str | None = None
    assignment: str | None = None
    notebook: str | None = None
    status: str | None = None  # set when the file is rejected before grading
    reason: str = ""
    submitted_at: datetime | None = None  # when it was submitted (aware, UTC); see the module docstring
    time_origin: str = ""  # "timestamp.txt", "file name" or "file time"; "" when no time is known
    first_name: str | None = None  # when the LMS name format gives names (Moodle)
    last_name: str | None = None
    upload: int | None = None  # the LMS's upload number (Canvas's attachment id): orders files of one time
    preferred: bool = False  # named by --prefer: graded for its student and notebook whatever its time


def _who(cand: Candidate, part: str) -> None:
    """The student id, names, time and upload number that `lms.parse` reads in `part` (NFC)."""
    name = lms.parse(normal(part))
    cand.student, cand.upload = name.student, name.upload
    cand.first_name, cand.last_name = name.first_name, name.last_name
    if name.submitted_at is not None:
        cand.submitted_at, cand.time_origin = name.submitted_at, "file name"


def _layout(parts: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """(prefix, parts) without nbgrader's leading `submitted/`."""
    return ("submitted/", parts[1:]) if parts[:1] == ("submitted",) else ("", parts)


def _skipped(parts: tuple[str, ...]) -> bool:
    """Hidden files and folders, and those tools leave behind (`..` is not hidden: it is unsafe)."""
    return any(p in _SKIP_PARTS or (p.startswith(".") and p != "..") for p in parts)


def student_problem(student: str) -> str | None:
    """Why `student` (NFC) cannot be an nbgrader student id and a folder of the course, or None.

    Inputs and the roster (`roster.read_roster`) are checked with it: an id is never a path.
    """
    if name_parts(student) != (student,) or student.startswith("."):
        return "the student id is empty, holds `/` or `\\`, or starts with a dot"
    if len(student) > _MAX_STUDENT_CHARS or len(student.encode()) > MAX_PART_BYTES:
        return f"the student id is longer than {_MAX_STUDENT_CHARS} characters or {MAX_PART_BYTES} bytes"
    return name_problem(student, "the student id")


def _unsafe(entry: Entry, parts: tuple[str, ...], files: set[tuple[str, ...]]) -> str | None:
    """Why `entry` must not be read as a submission (what it is, or where its name points), or None."""
    if entry.kind == "link":
        return "it is a symbolic link, which is never followed: submit the file itself"
    if entry.kind == "special":
        return "it is not a regular file (a device, fifo or socket)"
    if entry.name.startswith(("/", "\\")) or entry.name[1:2] == ":":
        return "absolute path"
    if ".." in parts:
        return "`..` in the path"
    clash = next((parts[:k] for k in range(1, len(parts)) if parts[:k] in files), None)
    if clash:
        return f"`{shown('/'.join(clash))}` is both a file and a folder in the archive: ask for a clean download"
    return None


def _classify(rel: str, parts: tuple[str, ...], known: dict[str, str]) -> Candidate:
    """Who and which notebook `parts` names, judged from the name alone (status set if it names none)."""
    if len(parts) >= 4:
        parts = _layout(parts)[1]
    stem = parts[-1][: -len(_SUFFIX)] if parts[-1].lower().endswith(_SUFFIX) else parts[-1]
    cand = Candidate(rel, None)
    notebook = notebook_name(stem, known)
    if notebook and len(parts) in (2, 3):
        cand.notebook, cand.assignment = notebook, parts[1] if len(parts) == 3 else known[notebook]
        if len(parts) == 2:
            _who(cand, parts[0])
        else:
            cand.student = parts[0]
        if cand.assignment != known[notebook]:
            cand.status = "unknown_notebook"
            cand.reason = (f"notebook `{notebook}` belongs to assignment `{known[notebook]}`, "
                           f"not `{shown(cand.assignment)}`: move it to {shown(parts[0])}/{known[notebook]}/")
    elif (split := split_flat_name(stem, known)) is not None:
        _who(cand, split[0])
        cand.notebook, cand.assignment = split[1], known[split[1]]
    else:
        if guess := parts[0] if len(parts) >= 2 else guess_student(stem):
            _who(cand, guess)
        cand.status = "unknown_notebook"
        names = ", ".join(sorted(known)) or "none released"
        cand.reason = (f"`{rel}` does not name a released notebook ({names}); expected "
                       "<student>_<notebook>.ipynb, <student>/<notebook>.ipynb or "
                       "submitted/<student>/<assignment>/<notebook>.ipynb")
        if notebook:
            cand.reason = f"`{rel}` names notebook `{stem}` but no student: put it in a folder named after the student"
    if cand.student:
        cand.student = normal(cand.student)
    return cand


def _problem(entry: Entry, cand: Candidate, parts: tuple[str, ...],
             files: set[tuple[str, ...]]) -> tuple[str, str] | None:
    """(status, why) of the first reason not to grade `entry`, or None (also when `cand` has a status)."""
    if why := _unsafe(entry, parts, files):
        return "unsafe_path", why
    if why := name_problem(entry.name):
        return "bad_name", why
    if cand.status:
        return None
    if why := student_problem(cand.student):
        return "bad_name", why
    if entry.size > MAX_ENTRY_BYTES:
        return "too_large", f"it is {entry.size} bytes, more than the bound of {MAX_ENTRY_BYTES} for one notebook"
    return None


def _judge(entry: Entry, known: dict[str, str], files: set[tuple[str, ...]]) -> Candidate:
    """The Candidate for one notebook-named, link or special entry, from its name and kind only."""
    parts = name_parts(entry.name) or ("",)
    cand = _classify(shown(entry.name), parts, known)
    cand.path = entry.path
    if problem := _problem(entry, cand, parts, files):
        cand.status, cand.reason = problem[0], f"`{cand.source}` not read: {problem[1]}"
    if cand.status:
        cand.student = shown(cand.student) if cand.student else None
    return cand


def _unreadable(source: str, error: OSError, student: str | None = None) -> Candidate:
    return Candidate(source, None, student, status="unreadable",
                     reason=f"`{source}` could not be read ({error.strerror}): make it readable and rerun")


def _relative(path: str, root: Path) -> str:
    return os.path.relpath(path, root).replace(os.sep, "/")


def _walk(root: Path) -> tuple[list[Entry], list[Candidate]]:
    """Every entry under `root` (links not followed, skipped folders not entered), and what could not be read."""
    entries: list[Entry] = []
    errors: list[Candidate] = []

    def unlisted(error: OSError) -> None:  # a folder that cannot be listed: its student is known, its files not
        parts = _layout(name_parts(_relative(error.filename, root)))[1]
        errors.append(_unreadable(shown(_relative(error.filename, root)) + "/", error,
                                  shown(parts[0]) if parts else None))

    for folder, dirs, files in os.walk(root, onerror=unlisted):
        dirs[:] = sorted(d for d in dirs if not _skipped((d,)))
        for name in dirs + sorted(files):
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
            except OSError as error:  # gone since its folder was listed
                errors.append(_unreadable(shown(_relative(path, root)), error))
                continue
            entries.append(Entry(len(entries), _relative(path, root), mode_kind(info.st_mode), info.st_size, Path(path),
                                 from_unix(info.st_mtime)))
    return entries, errors


def _missing(prefix: str, folder: tuple[str, ...], files: list[str], known: dict[str, str]) -> list[Candidate]:
    """The rows for a student folder (or its assignment folder) without a notebook."""
    source = shown(prefix + "/".join(folder)) + "/"
    assignment = folder[1] if len(folder) == 2 else None
    notebooks = [n for n, a in sorted(known.items()) if a == assignment] or [None]
    what = f"only {', '.join(shown(f) for f in files[:3])}" if files else "nothing"
    rows = []
    for notebook in notebooks:
        row = Candidate(source, None, None, assignment, notebook)
        if prefix or assignment:  # nbgrader's layouts: the folder is the id
            row.student = normal(folder[0])
        else:
            _who(row, folder[0])
        if problem := name_problem(folder[0]) or student_problem(row.student):
            row.student, row.status = shown(row.student), "bad_name"
            row.reason = f"folder `{source}` holds no notebook, and {problem}"
        else:
            asked = f"`{notebook}.ipynb`" if notebook else "the notebooks"
            row.status = "missing_notebook"
            row.reason = f"folder `{source}` holds {what} and no notebook: ask {row.student} for {asked}"
        rows.append(row)
    return rows


def _empty_folders(entries: list[Entry], known: dict[str, str]) -> list[Candidate]:
    """Student folders, and their assignment folders, that hold no notebook (the most specific one each)."""
    assignments = set(known.values())
    held: dict[tuple[str, tuple[str, ...]], list[str]] = {}  # (prefix, folder) -> the files in it
    with_notebook: set[tuple[str, tuple[str, ...]]] = set()
    for entry in entries:
        prefix, parts = _layout(name_parts(entry.name))
        hidden = next((i for i, part in enumerate(parts) if _skipped((part,))), None)
        is_dir = entry.kind == "dir" or hidden is not None  # a skipped file still shows that its folder exists
        parts = parts[:hidden]
        inner = parts if is_dir else parts[:-1]
        if not inner:
            continue
        folders = [(prefix, inner[:1])] + ([(prefix, inner[:2])] if len(inner) >= 2 and inner[1] in assignments else [])
        for folder in folders:
            held.setdefault(folder, []).extend(() if is_dir else parts[-1:])
        if not is_dir and parts[-1].lower().endswith(_SUFFIX):
            with_notebook.update(folders)
    done = with_notebook | {(prefix, folder[:1]) for prefix, folder in held if len(folder) == 2}
    return [row for (prefix, folder), files in sorted(held.items())
            if (prefix, folder) not in done for row in _missing(prefix, folder, files, known)]


def _stamp_time(raw: bytes | None) -> datetime | None:
    """The time in nbgrader's timestamp.txt, parsed as nbgrader parses it; None when absent or not a time."""
    if not raw:
        return None
    from nbgrader.utils import parse_utc  # nbgrader takes seconds to import: only when there is a file

    try:
        return parse_utc(raw.decode().strip()).replace(tzinfo=timezone.utc)
    except (ValueError, OverflowError):  # not UTF-8 or not a time: the next source of a time is used
        return None


def _dated(cand: Candidate, entry: Entry, stamp: bytes | None) -> None:
    """Give `cand` its submission time: timestamp.txt, else the time in its name (set by `_who`), else the file's."""
    if (when := _stamp_time(stamp)) is not None:
        cand.submitted_at, cand.time_origin = when, _STAMP
    elif cand.submitted_at is None and entry.modified is not None:
        cand.submitted_at, cand.time_origin = entry.modified, "file time"


def _stamps(entries: list[Entry]) -> dict[tuple[str, ...], Entry]:
    """The timestamp.txt file of each folder, by the folder's parts."""
    return {name_parts(e.name)[:-1]: e for e in entries if e.kind == "file" and name_parts(e.name)[-1:] == (_STAMP,)}


def _copy_out(archive: Archive, cand: Candidate, entry: Entry, scratch: Path) -> None:
    """Copy a gradable zip entry to scratch/<i>/submission.ipynb (or give it the status why not)."""
    folder = scratch / str(entry.index)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        archive.copy(entry.index, folder / "submission.ipynb")
    except EntryError as error:
        cand.status, cand.reason = error.status, f"`{cand.source}` not read: {error}"
        return
    cand.path = folder / "submission.ipynb"


def _judge_all(entries: list[Entry], known: dict[str, str]) -> list[tuple[Candidate, Entry]]:
    """A Candidate for every notebook-named file, link and special file outside skipped folders."""
    files = {name_parts(e.name) for e in entries if e.kind != "dir"}
    chosen = [e for e in entries if not _skipped(name_parts(e.name)) and (
        e.kind in ("link", "special") or (e.kind == "file" and e.name.lower().endswith(_SUFFIX)))]
    return [(_judge(e, known, files), e) for e in chosen]


def _read_folder(source: Path, known: dict[str, str]) -> tuple[list[Entry], list[Candidate]]:
    entries, found = _walk(source)
    stamps = _stamps(entries)
    for cand, entry in _judge_all(entries, known):
        stamp = stamps.get(name_parts(entry.name)[:-1])
        _dated(cand, entry, read_regular(stamp.path, _MAX_TIMESTAMP_BYTES) if stamp else None)
        found.append(cand)
    return entries, found


def _read_zip(source: Path, known: dict[str, str], scratch: Path) -> tuple[list[Entry], list[Candidate]]:
    try:
        archive = Archive(source)
    except ZipRejected as error:
        raise InputError(f"{error}: extract it yourself and pass the folder") from None
    found = []
    with archive:
        stamps = _stamps(archive.entries)
        for cand, entry in _judge_all(archive.entries, known):
            raw = None
            if cand.status is None:
                _copy_out(archive, cand, entry, scratch)
                stamp = stamps.get(name_parts(entry.name)[:-1])
                try:
                    raw = archive.read_bytes(stamp.index, _MAX_TIMESTAMP_BYTES) if stamp else None
                except EntryError:
                    pass  # the next source of a time is used, as nbgrader goes on without timestamp.txt
            _dated(cand, entry, raw)
            found.append(cand)
    return archive.entries, found


def discover(source: Path, known: dict[str, str], scratch: Path, prefer: Sequence[str] = (),
             identify: Callable[[str], str] | None = None) -> list[Candidate]:
    """Every submission in `source` (a folder, or a zip copied entry by entry into `scratch`) as a Candidate.

    `identify` maps the student id a name gives to the id it is graded under (`Roster.identify`), before
    files are compared. Files of one student and notebook: the one `prefer` names (a `source` or a base
    name, from --prefer), else the newest is kept; older ones are `superseded`, ones of the same time
    `duplicate`. Raises InputError when `source` itself is unusable, or a `prefer` value names no
    gradable file or two files of one student and notebook.
    """
    if not source.exists():
        raise InputError(f"{source} does not exist: pass a folder of submissions or an LMS zip")
    if source.is_dir():
        entries, found = _read_folder(source, known)
    elif source.is_file():
        entries, found = _read_zip(source, known, scratch)
    else:
        raise InputError(f"{source} is neither a folder nor a zip file")
    found.sort(key=lambda c: c.source)
    empty = _empty_folders(entries, known)
    for cand in found + empty if identify is not None else []:
        cand.student = identify(cand.student) if cand.student and cand.status != "bad_name" else cand.student
    try:
        resolve(found, prefer)
    except PreferError as error:
        raise InputError(str(error)) from None
    claimed = {(c.student.casefold(), c.notebook) for c in found if c.student}
    for cand in empty:
        student = cand.student.casefold()
        taken = (student, cand.notebook) in claimed if cand.notebook else any(s == student for s, _ in claimed)
        if cand.status != "missing_notebook" or not taken:
            claimed.add((student, cand.notebook))
            found.append(cand)
    return found
