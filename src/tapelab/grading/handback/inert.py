"""A submission as an instructor's own pages may show it: every notebook of a graded course made inert.

formgrader renders autograded notebooks into the instructor's page with nbgrader's template: raw HTML of
markdown cells, HTML, SVG and JavaScript outputs, all with the instructor's Jupyter server behind them.
`inert_notebook` rewrites a notebook so that any template shows nothing a student's markup can run, with
the feedback pages' policy (`page.InertNotebook`): outputs of plain kinds only, HTML cleaned, Markdown output
rendered and cleaned into HTML, and each markdown cell replaced by its rendering, cleaned, on one line inside
a `<div>` (a markdown renderer passes such a block through as it is, and no blank line can end it early and
let markdown start a new element).
`inert_folder` does it to every notebook under a folder and removes every other file but the ones nbgrader
keeps beside a submission (formgrader serves the files of a submission's folder to the instructor's page).

Of the metadata only what nbgrader's grading needs survives, as plain values: each cell's nbgrader roles,
tags and editable/deletable flags, the notebook's kernel and language (a template writes metadata into the
page unescaped, and a graded notebook's metadata is only as safe as the grading that rebuilt it).
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_markdown_cell, new_notebook

from tapelab.grading.handback.page import InertNotebook, clean_markdown

__all__ = ["inert_folder", "inert_notebook"]

KEPT_FILES = {"timestamp.txt", "submission_secret.txt"}  # nbgrader's, beside a stored submission
_ROLE_KEYS = {"grade_id", "grade", "solution", "locked", "task", "points", "schema_version", "checksum", "cell_type"}
_PLAIN = re.compile(r"[A-Za-z0-9_.:+-]{0,200}")
_CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # nbformat's cell id
_POLICY = InertNotebook()
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def _plain(value: object) -> bool:
    if isinstance(value, str):
        return bool(_PLAIN.fullmatch(value))
    return value is None or isinstance(value, (bool, int, float))


def _cell_metadata(metadata: object) -> dict:
    """nbgrader's cell roles (known keys only), tags and flags of a cell's metadata, plain values only."""
    metadata = metadata if isinstance(metadata, dict) else {}
    kept = {key: metadata[key] for key in ("editable", "deletable") if isinstance(metadata.get(key), bool)}
    tags = metadata.get("tags")
    if isinstance(tags, list) and tags and all(isinstance(tag, str) and _plain(tag) for tag in tags):
        kept["tags"] = tags
    roles = metadata.get("nbgrader")  # whole or not at all: a template needs a grade cell's points
    if isinstance(roles, dict) and roles and all(key in _ROLE_KEYS and _plain(value) for key, value in roles.items()):
        kept["nbgrader"] = dict(roles)
    return kept


def _markdown(source: str, attachments: object) -> str:
    return "<div>" + clean_markdown(source, attachments).replace("\r", "").replace("\n", "&#10;") + "</div>"


def inert_notebook(nb: dict) -> NotebookNode:
    """`nb` rebuilt with the feedback pages' policy, markdown cells as cleaned one-line HTML; see the module."""
    clean = new_notebook(metadata={"language_info": {"name": "python"}, "kernelspec": dict(KERNELSPEC)})
    cells = nb.get("cells")
    for index, cell in enumerate(cells if isinstance(cells, list) else []):
        rebuilt = _POLICY._cell(cell, f"cell-{index}") if isinstance(cell, dict) else None
        if rebuilt is None:
            continue
        if rebuilt.cell_type == "markdown":
            rebuilt = new_markdown_cell(_markdown(rebuilt.source, rebuilt.get("attachments")), id=rebuilt.id)
        for output in rebuilt.get("outputs", []):  # a template renders markdown output unclean: give it HTML
            if "text/markdown" in output.get("data", {}):
                output.data["text/html"] = clean_markdown(output.data.pop("text/markdown"))
        rebuilt.metadata = nbformat.from_dict(_cell_metadata(cell.get("metadata")))
        if isinstance(cell.get("id"), str) and _CELL_ID.fullmatch(cell["id"]):
            rebuilt.id = cell["id"]
        clean.cells.append(rebuilt)
    return clean


def inert_folder(folder: Path) -> list[str]:
    """Make every notebook under `folder` inert in place and remove every other file (links included) except
    KEPT_FILES; return what was removed, relative to `folder`. Run only on a folder no one else can write."""
    removed = []
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not (path.is_dir() or path.is_file()):
            path.unlink()
        elif path.is_file() and path.suffix == ".ipynb":
            try:
                nb = nbformat.reads(path.read_text(encoding="utf-8", errors="replace"), as_version=nbformat.NO_CONVERT)
            except Exception:  # noqa: BLE001 - any unreadable notebook: shown as empty rather than raw
                nb = new_notebook()
            nbformat.write(inert_notebook(nb), path)
            continue
        elif path.is_dir() or path.name in KEPT_FILES:
            continue
        else:
            path.unlink()
        removed.append(path.relative_to(folder).as_posix())
    return removed
