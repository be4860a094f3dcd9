"""What a student's autograded notebook shows for each exercise: the answer written and what the
visible part of its test cell displayed (tapelab's feedback JSON among it).

Everything here was written by, or reachable from, student code: an answer can print a fake feedback
bundle. It feeds analytics only (class insight, review, the cause column of exports) and is never
used for a score; scores come from the gradebook. A bundle counts only when its outcome is a failure
tapelab displays and its cause code is in the catalogue; the exercise is the test cell's, never the
bundle's.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from tapelab.causes import CAUSES
from tapelab.checker.messages import MIME
from tapelab.grading import hidden

__all__ = ["Attempt", "exercise_label", "read_attempts", "read_submission", "stubs", "hidden_lines", "output_text"]

_FAILURE_KINDS = ("incorrect", "not-attempted")
_EXERCISE_ID = re.compile(r"ex(\d+)_(\d+)_test")
_MESSAGE_LIMIT = 2000


@dataclass(frozen=True)
class Attempt:
    """One student's work on one exercise, as the autograded notebook shows it."""

    grade_id: str  # the locked test cell's grade id, e.g. ex1_2_test
    answer: str  # the source of the exercise's answer cell(s), as the student left it
    attempted: bool  # the answer differs from the released stub
    outcome: str | None  # the last failure bundle of the visible output: "incorrect", "not-attempted" or None
    cause: str | None  # that bundle's cause code when the catalogue has it, else None
    message: str  # that bundle's message (cut to 2,000 characters), "" without one
    error: bool  # the visible part ended in an error output (any exception, tapelab's or not)
    output: str  # every visible output of the test cell as plain text


def exercise_label(grade_id: str) -> str:
    """`ex1_2_test` -> `1.2`, the number a student reads; any other grade id as it is."""
    match = _EXERCISE_ID.fullmatch(grade_id)
    return f"{match[1]}.{match[2]}" if match else grade_id


def _prefix(grade_id: str) -> str:
    return grade_id[: -len("_test")] if grade_id.endswith("_test") else grade_id


def _meta(cell: dict) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def _text(value) -> str:
    """A notebook's multiline string: stored as one string or as a list of lines."""
    return "".join(map(str, value)) if isinstance(value, list) else str(value or "")


def _cells(path: Path) -> list[dict]:
    """The cells of a notebook file, read as JSON: no schema validation, which costs more than the
    reading itself on a class of notebooks and is not needed to read outputs."""
    cells = json.loads(path.read_text(encoding="utf-8", errors="replace")).get("cells", [])
    return [c for c in cells if isinstance(c, dict)] if isinstance(cells, list) else []


def _answers(cells: list[dict]) -> dict[str, str]:
    """Answer source by exercise prefix: every solution cell whose grade id is `<prefix>_...`."""
    out: dict[str, list[str]] = {}
    for cell in cells:
        meta = _meta(cell)
        if meta.get("solution") and not meta.get("grade") and isinstance(meta.get("grade_id"), str):
            out.setdefault(meta["grade_id"].rsplit("_", 1)[0], []).append(_text(cell.get("source")))
    return {prefix: "\n".join(parts) for prefix, parts in out.items()}


def stubs(release: Path) -> dict[str, str]:
    """The released notebook's answer stubs by exercise prefix (what an untouched answer holds)."""
    return _answers(_cells(release))


def hidden_lines(source: Path) -> set[str]:
    """Every non-trivial line of the hidden tests of a course source notebook (to keep them out of exports)."""
    lines = set()
    for cell in _cells(source):
        if _meta(cell).get("grade") and cell.get("cell_type") == "code":
            lines |= {line.strip() for line in hidden.split(_text(cell.get("source")))[1].splitlines()
                      if len(line.strip()) >= 8}
    return lines


def output_text(outputs: list) -> str:
    """The plain text of a cell's outputs: streams, text/plain of displays, `Name: message` of an error."""
    parts = []
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(_text(out.get("text")))
        elif kind in ("display_data", "execute_result") and isinstance(out.get("data"), dict):
            parts.append(_text(out["data"].get("text/plain")))
        elif kind == "error":
            parts.append(f"{out.get('ename', '')}: {out.get('evalue', '')}")
    return "\n".join(p.rstrip("\n") for p in parts if p)


def _bundle(outputs: list) -> dict | None:
    """The last tapelab failure bundle among the outputs, or None."""
    found = None
    for out in outputs:
        data = out.get("data") if out.get("output_type") == "display_data" else None
        data = data.get(MIME) if isinstance(data, dict) else None
        if isinstance(data, dict) and data.get("outcome") in _FAILURE_KINDS:
            found = data
    return found


def _normal(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def read_attempts(autograded: Path, stub: dict[str, str]) -> dict[str, Attempt]:
    """Every graded test cell of an autograded notebook, by grade id. `stub` is `stubs(...)` of its release."""
    cells = _cells(autograded)
    answers = _answers(cells)
    out = {}
    for cell in cells:
        meta = _meta(cell)
        gid = meta.get("grade_id")
        if not (meta.get("grade") and cell.get("cell_type") == "code" and isinstance(gid, str)):
            continue
        outputs = [o for o in cell.get("outputs", []) if isinstance(o, dict)] if isinstance(
            cell.get("outputs"), list) else []
        bundle = _bundle(outputs) or {}
        cause = bundle.get("cause")
        message = bundle.get("message")
        answer = answers.get(_prefix(gid), "")
        out[gid] = Attempt(
            grade_id=gid, answer=answer, attempted=_normal(answer) != _normal(stub.get(_prefix(gid), "")),
            outcome=bundle.get("outcome"), cause=cause if isinstance(cause, str) and cause in CAUSES else None,
            message=message[:_MESSAGE_LIMIT] if isinstance(message, str) else "",
            error=bool(outputs) and outputs[-1].get("output_type") == "error", output=output_text(outputs))
    return out


def read_submission(root: Path, student: str, assignment: str, notebook: str,
                    stub_cache: dict | None = None) -> dict[str, Attempt]:
    """The attempts of `root/autograded/<student>/<assignment>/<notebook>.ipynb`, by grade id; {} when the
    notebook is missing or unreadable. `stub_cache` keeps each release's stubs across students."""
    cache = {} if stub_cache is None else stub_cache
    path = root / "autograded" / student / assignment / f"{notebook}.ipynb"
    try:
        if (assignment, notebook) not in cache:
            release = root / "release" / assignment / f"{notebook}.ipynb"
            cache[(assignment, notebook)] = stubs(release) if release.is_file() else {}
        return read_attempts(path, cache[(assignment, notebook)]) if path.is_file() else {}
    except (OSError, ValueError, AttributeError, TypeError):  # not a notebook tapelab can read
        return {}
