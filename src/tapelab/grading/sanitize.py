"""Coordinator, before execution: read a submission, detect tampering, run nbgrader's sanitizers.

Tampering is judged against the released student notebook: a locked cell whose checksum
changed, a graded or locked cell deleted, or one duplicated. Every such cell is restored (missing
cells from the release, then nbgrader's OverwriteCells puts back the gradebook source with the
hidden tests) and the notebook is graded and flagged.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

import nbformat
from nbformat import NotebookNode

from tapelab.grading.course import Course

__all__ = ["Invalid", "Prepared", "read_notebook", "prepare"]

MAX_NOTEBOOK_BYTES = 64 * 1024**2


class Invalid(ValueError):
    """The file is not a usable notebook; the message says why (for the report)."""


@dataclass
class Prepared:
    """A sanitized submission, ready for a worker, and what was found on the way."""

    nb: NotebookNode
    flags: list[str] = field(default_factory=list)
    tampered: bool = False


def read_notebook(raw: bytes) -> NotebookNode:
    """Parse `raw` as an nbformat 4 notebook or raise Invalid naming the problem."""
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise Invalid(f"the file is {len(raw)} bytes, more than {MAX_NOTEBOOK_BYTES}")
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise Invalid(f"not JSON ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list) or "nbformat" not in data:
        raise Invalid("JSON but not a notebook (no `cells` list or `nbformat`)")
    if data.get("nbformat") != 4:
        raise Invalid(f"nbformat {data.get('nbformat')!r}, expected 4: open and save it in JupyterLab")
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
        nbformat.validate(nb)
    except Exception as error:  # nbformat raises several types for malformed cells
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise Invalid(f"not a valid nbformat 4 notebook ({first})") from None
    return nb


def _grade_id(cell: NotebookNode) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _protected(cell: NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("locked") or meta.get("grade"))


def _check_and_restore(nb: NotebookNode, release: NotebookNode) -> list[str]:
    """Compare with the release, put back deleted nbgrader cells in place; return the findings."""
    from nbgrader.utils import compute_checksum

    flags: list[str] = []
    positions: dict[str, list[int]] = {}
    for index, cell in enumerate(nb.cells):
        if (gid := _grade_id(cell)) is not None:
            positions.setdefault(gid, []).append(index)
    released = [c for c in release.cells if _grade_id(c) is not None]
    for cell in released:
        gid = _grade_id(cell)
        found = positions.get(gid, [])
        if len(found) > 1 and _protected(cell):
            flags.append(f"duplicated cell {gid} ({len(found)} copies; the first is graded)")
        if found and _protected(cell) and cell.metadata.nbgrader.get("locked"):
            submitted = nb.cells[found[0]]
            try:
                changed = compute_checksum(submitted) != cell.metadata.nbgrader.get("checksum")
            except (KeyError, ValueError, TypeError):
                changed = True
            if changed:
                flags.append(f"changed locked cell {gid} (restored)")
    # Re-insert deleted cells after the nearest earlier nbgrader cell that is present.
    present = {g for g in positions}
    for order, cell in enumerate(released):
        gid = _grade_id(cell)
        if gid in present:
            continue
        if _protected(cell):
            flags.append(f"deleted cell {gid} (restored)")
        at = 0
        for earlier in reversed(released[:order]):
            ids = [i for i, c in enumerate(nb.cells) if _grade_id(c) == _grade_id(earlier)]
            if ids:
                at = ids[0] + 1
                break
        nb.cells.insert(at, copy.deepcopy(cell))
        present.add(gid)
    return flags


class _DropOrphanMetadata:
    """DeduplicateIds leaves duplicates with nbgrader metadata but no grade_id, which crashes
    OverwriteCells (nbgrader 0.9.6): make such copies plain cells."""

    def __init__(self, config=None):
        pass

    def __call__(self, nb: NotebookNode, resources: dict):
        for cell in nb.cells:
            if "nbgrader" in cell.metadata and not cell.metadata.nbgrader.get("grade_id"):
                del cell.metadata["nbgrader"]
        return nb, resources


def prepare(course: Course, nb: NotebookNode, student: str, assignment: str, notebook: str) -> Prepared:
    """Restore deleted cells, then run nbgrader's sanitizers with the gradebook (coordinator only).

    Raises Invalid when nbgrader's cell metadata is beyond repair.
    """
    from nbgrader.preprocessors import (CheckCellMetadata, ClearOutput, DeduplicateIds, OverwriteCells,
                                        OverwriteKernelspec)

    flags = _check_and_restore(nb, course.release_notebook(assignment, notebook))
    resources = {"nbgrader": {"student": student, "assignment": assignment, "notebook": notebook,
                              "db_url": course.db_url}, "unique_key": notebook}
    for cls in (ClearOutput, DeduplicateIds, _DropOrphanMetadata, OverwriteKernelspec, OverwriteCells,
                CheckCellMetadata):
        try:
            nb, resources = cls(config=course.config)(nb, resources)
        except Exception as error:  # nbgrader raises ValidationError/RuntimeError/KeyError here
            raise Invalid(f"nbgrader metadata is corrupted ({cls.__name__}: {error})") from None
    return Prepared(nb, flags, tampered=bool(flags))
