"""Find the submissions in PATH: nbgrader's submitted/ layout, a flat folder, per-student folders, a zip.

Accepted names (relative to PATH, or inside the zip):

    submitted/<student>/<assignment>/<notebook>.ipynb   nbgrader's layout (PATH may be submitted/ itself)
    <student>/<assignment>/<notebook>.ipynb
    <student>/<notebook>.ipynb                          one folder per student
    <student>_<notebook>.ipynb                          flat, as LMS downloads are; at any depth

Notebook names start with two digits (`01_basic_tape`). A student id may contain underscores: a
flat name is split at the `_NN_` that starts a known notebook name (`jo_ann_01_basic_tape.ipynb`
is student `jo_ann`). Hidden files, `__MACOSX/`, `.ipynb_checkpoints/` and non-notebook files are
ignored.

Names are data, never paths: a zip entry is judged from its name string and copied, with a bound,
to a path chosen here (`scratch/<entry number>/`); a folder is walked without following links.
Every notebook file, link or special file ends as a Candidate, with a status when it cannot be
graded (`bad_name`, `unsafe_path`, `too_large`, `unreadable`, `unknown_notebook`, `duplicate`), and
a student folder without any notebook as a `missing_notebook` Candidate. Student ids are NFC
normalised, and compared ignoring case, so two files for one student and notebook never both count.
"""
from __future__ import annotations

import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from tapelab.grading.archive import MAX_ENTRY_BYTES, Archive, Entry, EntryError, ZipRejected

__all__ = ["Candidate", "InputError", "discover", "shown", "split_flat_name"]

_NN = re.compile(r"_(?=\d\d_)")
_SEPARATORS = re.compile(r"[/\\]")
_SKIP_PARTS = {"__MACOSX", ".ipynb_checkpoints", "__pycache__"}
_SUFFIX = ".ipynb"
_MAX_STUDENT_CHARS = 128  # nbgrader's Student.id column
_MAX_PART_BYTES, _MAX_NAME_BYTES = 255, 4095  # what Linux, macOS and Windows file systems store
_MAX_TIMESTAMP_BYTES = 1024


class InputError(ValueError):
    """PATH cannot be read at all (missing, not a folder or zip, a broken zip)."""


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


def _escaped(char: str) -> str:
    if "\udc80" <= char <= "\udcff":  # a byte that was not UTF-8, kept by surrogateescape
        return char.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
    return char.encode("unicode_escape").decode("ascii")


def shown(text: str, limit: int = 500) -> str:
    """`text` fit to print or store: undecodable bytes as `\\xNN`, invisible characters as escapes."""
    out = "".join(c if c.isprintable() or c == " " else _escaped(c) for c in text[:limit])
    return out if len(text) <= limit else f"{out}... ({len(text)} characters)"


def split_flat_name(stem: str, known: dict[str, str]) -> tuple[str, str] | None:
    """`jo_ann_01_basic_tape` -> (`jo_ann`, `01_basic_tape`) when the suffix is a known notebook."""
    for match in _NN.finditer(stem):
        student, notebook = stem[: match.start()], stem[match.end():]
        if student and notebook in known:
            return student, notebook
    return None


def _guess_student(stem: str) -> str | None:
    match = _NN.search(stem)
    return stem[: match.start()] if match and match.start() > 0 else None


def _parts(name: str) -> tuple[str, ...]:
    return tuple(p for p in _SEPARATORS.split(name) if p not in ("", "."))


def _layout(parts: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """(prefix, parts) without nbgrader's leading `submitted/`."""
    return ("submitted/", parts[1:]) if parts[:1] == ("submitted",) else ("", parts)


def _skipped(parts: tuple[str, ...]) -> bool:
    """Hidden files and folders, and those tools leave behind (`..` is not hidden: it is unsafe)."""
    return any(p in _SKIP_PARTS or (p.startswith(".") and p != "..") for p in parts)


def _name_problem(name: str) -> str | None:
    """Why `name` cannot stand for a submission on every file system and screen, or None."""
    if any("\udc80" <= c <= "\udcff" for c in name):
        return "its name holds bytes that are not UTF-8 (shown as \\xNN)"
    hidden = next((c for c in name if not (c.isprintable() or c == " ")), None)
    if hidden is not None:
        return f"its name holds the control or invisible character U+{ord(hidden):04X}"
    if len(name.encode()) > _MAX_NAME_BYTES or any(len(p.encode()) > _MAX_PART_BYTES for p in _parts(name)):
        return (f"its name is longer than file systems allow ({_MAX_PART_BYTES} bytes a folder or file, "
                f"{_MAX_NAME_BYTES} in all)")
    return None


def _student_problem(student: str) -> str | None:
    """Why `student` (NFC) cannot be an nbgrader student id and a folder name, or None.

    Separators and a leading dot never reach here: `_parts` splits on them and `_skipped` drops hidden names.
    """
    if len(student) > _MAX_STUDENT_CHARS or len(student.encode()) > _MAX_PART_BYTES:
        return f"the student id is longer than {_MAX_STUDENT_CHARS} characters or {_MAX_PART_BYTES} bytes"
    return None


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
    if stem in known and len(parts) in (2, 3):
        cand.student, cand.notebook = parts[0], stem
        cand.assignment = parts[1] if len(parts) == 3 else known[stem]
        if cand.assignment != known[stem]:
            cand.status = "unknown_notebook"
            cand.reason = (f"notebook `{stem}` belongs to assignment `{known[stem]}`, "
                           f"not `{shown(cand.assignment)}`: move it to {shown(parts[0])}/{known[stem]}/")
    elif (split := split_flat_name(stem, known)) is not None:
        cand.student, cand.notebook = split
        cand.assignment = known[cand.notebook]
    else:
        cand.student = parts[0] if len(parts) >= 2 else _guess_student(stem)
        cand.status = "unknown_notebook"
        names = ", ".join(sorted(known)) or "none released"
        cand.reason = (f"`{rel}` does not name a released notebook ({names}); expected "
                       "<student>_<notebook>.ipynb, <student>/<notebook>.ipynb or "
                       "submitted/<student>/<assignment>/<notebook>.ipynb")
        if stem in known:
            cand.reason = f"`{rel}` names notebook `{stem}` but no student: put it in a folder named after the student"
    if cand.student:
        cand.student = unicodedata.normalize("NFC", cand.student)
    return cand


def _problem(entry: Entry, cand: Candidate, parts: tuple[str, ...],
             files: set[tuple[str, ...]]) -> tuple[str, str] | None:
    """(status, why) of the first reason not to grade `entry`, or None (also when `cand` has a status)."""
    if why := _unsafe(entry, parts, files):
        return "unsafe_path", why
    if why := _name_problem(entry.name):
        return "bad_name", why
    if cand.status:
        return None
    if why := _student_problem(cand.student):
        return "bad_name", why
    if entry.size > MAX_ENTRY_BYTES:
        return "too_large", f"it is {entry.size} bytes, more than the bound of {MAX_ENTRY_BYTES} for one notebook"
    return None


def _judge(entry: Entry, known: dict[str, str], files: set[tuple[str, ...]]) -> Candidate:
    """The Candidate for one notebook-named, link or special entry, from its name and kind only."""
    parts = _parts(entry.name) or ("",)
    cand = _classify(shown(entry.name), parts, known)
    cand.path = entry.path
    if problem := _problem(entry, cand, parts, files):
        cand.status, cand.reason = problem[0], f"`{cand.source}` not read: {problem[1]}"
    if cand.status:
        cand.student = shown(cand.student) if cand.student else None
    return cand


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "special"


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
        parts = _layout(_parts(_relative(error.filename, root)))[1]
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
            entries.append(Entry(len(entries), _relative(path, root), _kind(info.st_mode), info.st_size, Path(path)))
    return entries, errors


def _missing(prefix: str, folder: tuple[str, ...], files: list[str], known: dict[str, str]) -> list[Candidate]:
    """The rows for a student folder (or its assignment folder) without a notebook."""
    source = shown(prefix + "/".join(folder)) + "/"
    student = unicodedata.normalize("NFC", folder[0])
    assignment = folder[1] if len(folder) == 2 else None
    notebooks = [n for n, a in sorted(known.items()) if a == assignment] or [None]
    problem = _name_problem(folder[0]) or _student_problem(student)
    what = f"only {', '.join(shown(f) for f in files[:3])}" if files else "nothing"
    rows = []
    for notebook in notebooks:
        if problem:
            rows.append(Candidate(source, None, shown(student), assignment, notebook, "bad_name",
                                  f"folder `{source}` holds no notebook, and {problem}"))
        else:
            asked = f"`{notebook}.ipynb`" if notebook else "the notebooks"
            rows.append(Candidate(source, None, student, assignment, notebook, "missing_notebook",
                                  f"folder `{source}` holds {what} and no notebook: ask {student} for {asked}"))
    return rows


def _empty_folders(entries: list[Entry], known: dict[str, str]) -> list[Candidate]:
    """Student folders, and their assignment folders, that hold no notebook (the most specific one each)."""
    assignments = set(known.values())
    held: dict[tuple[str, tuple[str, ...]], list[str]] = {}  # (prefix, folder) -> the files in it
    with_notebook: set[tuple[str, tuple[str, ...]]] = set()
    for entry in entries:
        prefix, parts = _layout(_parts(entry.name))
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


def _copy_out(archive: Archive, cand: Candidate, entry: Entry, scratch: Path, stamps: dict[str, int]) -> None:
    """Copy a gradable zip entry to scratch/<i>/ (and the timestamp.txt beside it, which nbgrader reads)."""
    folder = scratch / str(entry.index)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        archive.copy(entry.index, folder / "submission.ipynb")
    except EntryError as error:
        cand.status, cand.reason = error.status, f"`{cand.source}` not read: {error}"
        return
    cand.path = folder / "submission.ipynb"
    stamp = stamps.get(entry.name[: entry.name.rfind("/") + 1] + "timestamp.txt")
    if stamp is not None:
        try:
            archive.copy(stamp, folder / "timestamp.txt", limit=_MAX_TIMESTAMP_BYTES)
        except EntryError:
            pass  # graded without a submission time, as nbgrader does when timestamp.txt is missing


def _judge_all(entries: list[Entry], known: dict[str, str]) -> list[tuple[Candidate, Entry]]:
    """A Candidate for every notebook-named file, link and special file outside skipped folders."""
    files = {_parts(e.name) for e in entries if e.kind != "dir"}
    chosen = [e for e in entries if not _skipped(_parts(e.name)) and (
        e.kind in ("link", "special") or (e.kind == "file" and e.name.lower().endswith(_SUFFIX)))]
    return [(_judge(e, known, files), e) for e in chosen]


def _deduplicate(found: list[Candidate]) -> None:
    """One id per student (its first spelling in name order, so `Bob` and `bob` never make two folders of
    the course), and the first gradable file per student and notebook; the others are `duplicate`."""
    spelling: dict[str, str] = {}
    seen: dict[tuple[str, str], Candidate] = {}
    for cand in found:
        if cand.status is None:
            cand.student = spelling.setdefault(cand.student.casefold(), cand.student)
            first = seen.setdefault((cand.student, cand.notebook), cand)
            if first is cand:
                continue
            cand.status = "duplicate"
            cand.reason = (f"the input holds `{cand.source}` more than once; the first copy is graded"
                           if first.source == cand.source else
                           f"`{first.source}` is graded for the same student and notebook (student ids are "
                           f"compared ignoring case and Unicode normalization: `{first.student}`)")


def _read_zip(source: Path, known: dict[str, str], scratch: Path) -> tuple[list[Entry], list[Candidate]]:
    try:
        archive = Archive(source)
    except ZipRejected as error:
        raise InputError(f"{error}: extract it yourself and pass the folder") from None
    found = []
    with archive:
        stamps = {e.name: e.index for e in archive.entries if e.kind == "file" and e.name.endswith("timestamp.txt")}
        for cand, entry in _judge_all(archive.entries, known):
            if cand.status is None:
                _copy_out(archive, cand, entry, scratch, stamps)
            found.append(cand)
    return archive.entries, found


def discover(source: Path, known: dict[str, str], scratch: Path) -> list[Candidate]:
    """Every submission in `source` (a folder, or a zip copied entry by entry into `scratch`) as a Candidate.

    Two files for one student and notebook: the first in name order is kept, the others are
    `duplicate`. Raises InputError when `source` itself is unusable.
    """
    if not source.exists():
        raise InputError(f"{source} does not exist: pass a folder of submissions or an LMS zip")
    if source.is_dir():
        entries, found = _walk(source)
        found += [cand for cand, _ in _judge_all(entries, known)]
    elif source.is_file():
        entries, found = _read_zip(source, known, scratch)
    else:
        raise InputError(f"{source} is neither a folder nor a zip file")
    found.sort(key=lambda c: c.source)
    _deduplicate(found)
    claimed = {(c.student.casefold(), c.notebook) for c in found if c.student}
    for cand in _empty_folders(entries, known):
        student = cand.student.casefold()
        taken = (student, cand.notebook) in claimed if cand.notebook else any(s == student for s, _ in claimed)
        if cand.status != "missing_notebook" or not taken:
            claimed.add((student, cand.notebook))
            found.append(cand)
    return found
