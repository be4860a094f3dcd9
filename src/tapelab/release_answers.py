"""The release's two jobs for answers: derive the answers distribution's data, and write the course's lock.

An exercise's solution is its answer cell in solutions/NN_topic.ipynb without the nbgrader
`### BEGIN SOLUTION` / `### END SOLUTION` marker lines: one truth, so the code a student gets back
is the code the notebook grades against and the two cannot drift. `why` and the last hint tier come
from solutions/answers.toml. Each notebook's answers go to
answers/src/tapelab_answers/data/NN_topic.json, committed like notebooks/ so that an install works
without a release.

A locked course (tapelab.checker.answers) gets `lock_answers(...)` in each student notebook's setup cell.
"""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from tapelab.checker.answers import Lock
from tapelab.paths import REPO, SOLUTIONS

__all__ = ["ANSWER_DATA", "ANSWER_TEXTS", "derive_answers", "lock_setup_cell", "write_answers"]

ANSWER_DATA = REPO / "answers" / "src" / "tapelab_answers" / "data"
ANSWER_TEXTS = "answers.toml"  # beside the solution notebooks
LOCK_IMPORT = "from tapelab.checker.answers import lock_answers"
_MARKER = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.M)
_ANSWER_ID = re.compile(r"^ex(\d+)_(\d+)_answer$")


def derive_answers(name: str, solutions: Path = SOLUTIONS) -> dict[str, dict[str, str]]:
    """Exercise number -> solution, why and last hint, for each answer cell of notebook `name`.

    ValueError when an answer cell's grade id is not `exN_M_answer` or solutions/answers.toml lacks
    its texts: a release must not publish an exercise without its reason and last hint."""
    texts = _texts(solutions)
    nb = nbformat.read(solutions / f"{name}.ipynb", as_version=4)
    found = {}
    for cell in nb.cells:
        role = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not role.get("solution"):
            continue
        match = _ANSWER_ID.match(role.get("grade_id", ""))
        if match is None:
            raise ValueError(f"{name}: the answer cell `{role.get('grade_id')}` is not named exN_M_answer")
        number = ".".join(match.groups())
        missing = [key for key in ("why", "last_hint") if not texts.get(number, {}).get(key)]
        if missing:
            raise ValueError(f"{name}: solutions/{ANSWER_TEXTS} has no {' or '.join(missing)} for "
                             f'Exercise {number}: add them under ["{number}"]')
        found[number] = {"solution": _MARKER.sub("", cell.source).strip("\n"), "why": texts[number]["why"],
                         "last_hint": texts[number]["last_hint"]}
        if "solution" in texts[number]:  # an exercise in variants: its solution with the variant's fields
            found[number]["template"] = texts[number]["solution"].strip("\n")
    return found


def _texts(solutions: Path) -> dict[str, dict[str, str]]:
    path = solutions / ANSWER_TEXTS
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"no {path}: it holds each exercise's `why` and `last_hint`") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path} is not valid TOML: {error}") from None


def write_answers(derived: dict[str, dict[str, dict[str, str]]], out: Path = ANSWER_DATA) -> list[Path]:
    """Write out/<name>.json for each notebook's `derive_answers`; return the paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, exercises in derived.items():
        path = out / f"{name}.json"
        data = {"generated": f"by `tapelab release` from solutions/{name}.ipynb and solutions/{ANSWER_TEXTS}",
                "exercises": exercises}
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(path)
    return written


def lock_setup_cell(nb: NotebookNode, lock: Lock | None) -> None:
    """Write the course's lock into the setup cell (the code cell with id `setup`); self-study leaves it as is.

    The import goes before the cell's first `from tapelab` import (sorted order), the call at the end."""
    if lock is None:
        return
    cell = next((c for c in nb.cells if c.cell_type == "code" and c.get("id") == "setup"), None)
    if cell is None:
        raise ValueError("no setup cell (a code cell with id `setup`) to write the answers lock into")
    lines = cell.source.rstrip("\n").split("\n")
    first = next((i for i, line in enumerate(lines) if line.startswith("from tapelab")), len(lines))
    lines.insert(first, LOCK_IMPORT)
    lines.append(f"{lock.call()}  # your instructor's setting: solutions and last hints are locked")
    cell.source = "\n".join(lines)
