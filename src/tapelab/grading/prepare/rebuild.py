"""Rebuild a submission on its released notebook: the student's nbgrader metadata is never trusted.

The release decides which cells nbgrader grades, their type, points, flags and metadata. From the
submission only sources are taken: the answer (solution) cells' and the student's own cells', in
the student's order. A submitted cell stands for a released nbgrader cell when it carries that
cell's grade id (the last copy only) or, failing that, its cell id (a cell whose nbgrader metadata
was removed or renamed). Released graded or locked cells that no submitted cell stands for come
back from the release after the nearest earlier released cell present. Every other submitted cell
is an ordinary cell: its nbgrader metadata and all its other metadata are dropped.

What each cell keeps: a released cell keeps the release's metadata (`nbgrader`, `deletable`,
`editable`, `tags`); an ordinary cell keeps none (its `tags` would only reach nbclient's
`skip-execution` and nbconvert's tag CSS classes, its `raw_mimetype` would let a raw cell write
HTML into the feedback). Attachments of markdown and raw cells are the student's content and are
kept when the caller allows it. Every difference that could change a grade is a flag.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_notebook
from nbformat.v4.nbbase import random_cell_id

__all__ = ["Rebuilt", "rebuild"]

_EMPTY = {"code": {"execution_count": None, "outputs": []}, "markdown": {}, "raw": {}}  # a new cell's other fields
_CELL_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_FLAGS = ("grade", "solution", "locked", "task")


@dataclass
class Rebuilt:
    """The rebuilt notebook and what differed from the release."""

    nb: NotebookNode
    flags: list[str] = field(default_factory=list)
    tampered: bool = False
    originals: list[tuple[str, str]] = field(default_factory=list)  # (grade id, the student's source) replaced

    def flag(self, message: str, tampered: bool = True) -> None:
        self.flags.append(message)
        self.tampered = self.tampered or tampered


def _nbgrader(cell: NotebookNode) -> dict:
    meta = cell.get("metadata")
    found = meta.get("nbgrader") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def _grade_id(cell: NotebookNode) -> str | None:
    """The grade id a cell claims, if it is a string."""
    gid = _nbgrader(cell).get("grade_id")
    return gid if isinstance(gid, str) else None


class _Absent:
    def __repr__(self) -> str:
        return "unset"


_ABSENT = _Absent()


def _short(value: object, limit: int = 40) -> str:
    """A bounded repr for flags (a student's value can be huge)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "...'"


def _is_answer(released: NotebookNode) -> bool:
    """A plain answer cell (solution, not graded): it carries no points, so a missing one is not put back."""
    meta = _nbgrader(released)
    return bool(meta.get("solution")) and not meta.get("grade")


def _match(cells: list, released: dict[str, NotebookNode]) -> tuple[list[str | None], dict[str, int]]:
    """For each submitted cell, the grade id of the released cell it stands for (or None), and how
    many cells claim each released grade id. Of several copies the last stands for it, as in
    nbgrader's DeduplicateIds."""
    claims: dict[str, int] = {}
    last: dict[str, int] = {}
    for index, cell in enumerate(cells):
        if (gid := _grade_id(cell)) in released:
            claims[gid] = claims.get(gid, 0) + 1
            last[gid] = index
    matched: list[str | None] = [None] * len(cells)
    for gid, index in last.items():
        matched[index] = gid
    by_id = {cell.get("id"): gid for gid, cell in released.items() if cell.get("id")}
    for index, cell in enumerate(cells):
        gid = by_id.get(cell.get("id"))
        if matched[index] is None and gid is not None and gid not in claims:
            matched[index] = gid
            claims[gid] = 1
    return matched, claims


def _differences(submitted: NotebookNode, released: NotebookNode, gid: str, out: Rebuilt) -> None:
    """Flag each change of the cell's type and nbgrader metadata, and of a locked cell's tags and source."""
    if submitted.get("cell_type") != released.cell_type:
        out.flag(f"cell {gid}: cell_type was {released.cell_type!r}, the submission has "
                 f"{_short(submitted.get('cell_type'))} (restored)")
    mine, theirs = _nbgrader(submitted), _nbgrader(released)
    if not mine:
        out.flag(f"cell {gid}: nbgrader metadata removed (restored)")
    else:
        for key in sorted(set(mine) | set(theirs), key=str):
            if mine.get(key, _ABSENT) != theirs.get(key, _ABSENT):
                out.flag(f"cell {gid}: nbgrader {_short(key)} was {_short(theirs.get(key, _ABSENT))}, the "
                         f"submission has {_short(mine.get(key, _ABSENT))} (restored)")
    if _nbgrader(released).get("solution"):
        return  # the student's source and tags of an answer cell cannot earn points
    meta = submitted.get("metadata")
    tags = meta.get("tags", []) if isinstance(meta, dict) else []
    if tags != released.metadata.get("tags", []):
        out.flag(f"cell {gid}: tags {_short(tags)} differ from the release (restored)")
    if submitted.get("source") != released.source:
        out.flag(f"changed locked cell {gid} (restored)")
        source = submitted.get("source")
        out.originals.append((gid, source if isinstance(source, str) else ""))


def _new_cell(kind: str, source: str, cell_id: str | None, metadata: dict, attachments=None) -> NotebookNode:
    """A cell as nbformat's `new_*_cell` makes it, without their schema check of each cell (a third of preparing a
    submission): its parts come from notebooks already checked (the submission by `sanitize.read_notebook`, and
    the release), and the notebook is checked whole on its way to the worker and back."""
    cell = {"cell_type": kind, "metadata": copy.deepcopy(metadata), "source": source, **_EMPTY[kind]}
    if cell_id:
        cell["id"] = cell_id
    if attachments and kind != "code":
        cell["attachments"] = copy.deepcopy(attachments)
    return nbformat.from_dict(cell)


def _from_release(submitted: NotebookNode | None, released: NotebookNode, keep_attachments: bool) -> NotebookNode:
    """The released cell; an answer cell takes the student's source (and attachments)."""
    answer = submitted is not None and bool(_nbgrader(released).get("solution"))
    source = submitted.get("source", "") if answer else released.source
    attachments = (submitted.get("attachments") if keep_attachments else None) if answer else \
        released.get("attachments")
    return _new_cell(released.cell_type, source if isinstance(source, str) else "", released.get("id"),
                     released.metadata, attachments)


def _insert(cells: list[tuple[int | None, NotebookNode]], origin: int, cell: NotebookNode) -> None:
    """Insert after the entry of the nearest earlier released cell, else before the nearest later one."""
    earlier = [i for i, (o, _) in enumerate(cells) if o is not None and o < origin]
    later = [i for i, (o, _) in enumerate(cells) if o is not None and o > origin]
    at = max(earlier, key=lambda i: cells[i][0]) + 1 if earlier else \
        min(later, key=lambda i: cells[i][0]) if later else len(cells)
    cells.insert(at, (origin, cell))


def rebuild(submitted: NotebookNode, release: NotebookNode, *, keep_attachments: bool) -> Rebuilt:
    """The submission rebuilt on `release` (see the module docstring), with a flag per change;
    `keep_attachments=False` drops the student's attachments."""
    released = {gid: cell for cell in release.cells if (gid := _grade_id(cell)) is not None}
    order = {gid: index for index, cell in enumerate(release.cells) if (gid := _grade_id(cell)) is not None}
    position = {cell.get("id"): index for index, cell in enumerate(release.cells) if cell.get("id")}
    with_ids = release.nbformat_minor >= 5
    used = {c.get("id") for c in released.values()}
    out = Rebuilt(new_notebook(metadata=copy.deepcopy(release.metadata), nbformat_minor=release.nbformat_minor))
    cells: list[tuple[int | None, NotebookNode]] = []
    matched, claims = _match(submitted.cells, released)
    for cell, gid in zip(submitted.cells, matched):
        if gid is not None:
            _differences(cell, released[gid], gid, out)
            cells.append((order[gid], _from_release(cell, released[gid], keep_attachments)))
            continue
        claimed = _grade_id(cell)
        if claimed not in released and any(_nbgrader(cell).get(key) for key in _FLAGS):
            out.flag(f"nbgrader metadata of a cell the release does not have (grade id {_short(claimed)}) "
                     "removed; the cell ran as an ordinary cell")
        if cell.get("cell_type") not in _EMPTY:
            continue  # an unknown cell type: nothing runs or renders it
        cell_id = cell.get("id")
        keep = with_ids and isinstance(cell_id, str) and _CELL_ID.match(cell_id) and cell_id not in used
        cell_id = cell_id if keep else (random_cell_id() if with_ids else None)
        used.add(cell_id)
        source = cell.get("source", "")
        cells.append((position.get(cell_id) if keep else None,
                      _new_cell(cell.cell_type, source if isinstance(source, str) else "", cell_id, {},
                                cell.get("attachments") if keep_attachments else None)))
    for gid, count in claims.items():
        if count > 1 and not _is_answer(released[gid]):
            out.flag(f"duplicated cell {gid} ({count} copies; the last is graded, the others ran as ordinary cells)")
    for gid, cell in released.items():
        if gid in claims:
            continue
        if _is_answer(cell):
            out.flag(f"answer cell {gid} not found (deleted, or its nbgrader metadata removed): the "
                     "student's cells ran as submitted", tampered=False)
            continue
        out.flag(f"deleted cell {gid} (restored)")
        _insert(cells, order[gid], _from_release(None, cell, keep_attachments))
    out.nb.cells = [cell for _, cell in cells]
    return out
