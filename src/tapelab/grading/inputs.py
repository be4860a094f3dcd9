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
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tapelab.grading import archive

__all__ = ["Candidate", "InputError", "discover", "split_flat_name"]

_NN = re.compile(r"_(?=\d\d_)")
_SKIP_PARTS = {"__MACOSX", ".ipynb_checkpoints", "__pycache__"}
_BAD_STUDENT = re.compile(r"[\x00-\x1f/\\]|^\.")


class InputError(ValueError):
    """PATH cannot be read at all (missing, not a folder or zip, a broken zip)."""


@dataclass
class Candidate:
    """One input file and who/what it is, or why it cannot be graded (`status`)."""

    source: str  # the name as given: relative path or zip entry
    path: Path | None
    student: str | None = None
    assignment: str | None = None
    notebook: str | None = None
    status: str | None = None  # set when the file is rejected before grading
    reason: str = ""


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


def _classify(rel: PurePosixPath, path: Path | None, known: dict[str, str]) -> Candidate:
    parts = list(rel.parts)
    if len(parts) >= 4 and parts[0] == "submitted":
        parts = parts[1:]
    stem = PurePosixPath(parts[-1]).stem
    cand = Candidate(str(rel), path)
    if stem in known and len(parts) in (2, 3):
        cand.student, cand.notebook = parts[0], stem
        cand.assignment = parts[1] if len(parts) == 3 else known[stem]
        if cand.assignment != known[stem]:
            cand.status = "unknown_notebook"
            cand.reason = (f"notebook `{stem}` belongs to assignment `{known[stem]}`, "
                           f"not `{cand.assignment}`: move it to {parts[0]}/{known[stem]}/")
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
    if cand.status is None and (not cand.student or _BAD_STUDENT.search(cand.student)):
        cand.status, cand.reason = "unknown_notebook", f"`{rel}`: `{cand.student}` is not a usable student id"
    return cand


def _skipped(rel: PurePosixPath) -> bool:
    return any(p in _SKIP_PARTS or p.startswith(".") for p in rel.parts) or rel.suffix != ".ipynb"


def _walk(root: Path, known: dict[str, str]) -> list[Candidate]:
    found = []
    for path in sorted(root.rglob("*")):
        rel = PurePosixPath(path.relative_to(root).as_posix())
        if path.is_file() and not path.is_symlink() and not _skipped(rel):
            found.append(_classify(rel, path, known))
    return found


def discover(source: Path, known: dict[str, str], scratch: Path) -> list[Candidate]:
    """Every notebook file in `source` (a folder or a zip, extracted into `scratch`) as a Candidate.

    Two files for one student and notebook: the first in name order is kept, the others are
    `duplicate`. Raises InputError when `source` itself is unusable.
    """
    if not source.exists():
        raise InputError(f"{source} does not exist: pass a folder of submissions or an LMS zip")
    if source.is_dir():
        found = _walk(source, known)
    elif source.suffix.lower() == ".zip" or source.is_file():
        try:
            rejected = archive.extract(source, scratch)
        except archive.ZipRejected as error:
            raise InputError(f"{error}: extract it yourself and pass the folder") from None
        found = _walk(scratch, known)
        for entry, reason in rejected:
            stem = PurePosixPath(entry.replace("\\", "/")).stem
            found.append(Candidate(entry, None, _guess_student(stem), None, None, "unsafe_path",
                                   f"zip entry `{entry}` not extracted: {reason}"))
    else:
        raise InputError(f"{source} is neither a folder nor a zip file")
    seen: dict[tuple[str, str], str] = {}
    for cand in found:
        if cand.status is None:
            key = (cand.student, cand.notebook)
            if key in seen:
                cand.status, cand.reason = "duplicate", f"`{seen[key]}` is graded for the same student and notebook"
            else:
                seen[key] = cand.source
    return found
