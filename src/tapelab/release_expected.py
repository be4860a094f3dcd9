"""The release's job for expected values: run the references for every case of every check and store the
numbers, so that no checker needs reference code (tapelab.checker.expected says why and where they go).

For each exercise that names its expectations (`Exercise.expectations`), the cases are its visible ones and
those of every `exN_M.check(cases=[...])` call in the solution notebook's test cells (the hidden tests).
The visible cases' values go into the package (tapelab/exercises/expected/NN_topic.json), the hidden ones'
beside the solutions (solutions/expected/NN_topic.json); both are committed, like notebooks/, and a test
recomputes them. The course's set-up (`inline_hidden`) writes each exercise's hidden values into the
hidden test calls of the course's source notebook, where only the grader reads them.
"""
from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

import nbformat
import numpy as np
from nbformat import NotebookNode

from tapelab.checker.compare import ATOL, RTOL
from tapelab.checker.exercise import Exercise
from tapelab.checker.expected import decode, encode, references
from tapelab.paths import REPO, SOLUTIONS

__all__ = ["EXPECTED", "HIDDEN", "ROUNDING", "derive_expected", "exercise_tests", "hidden_cases", "inline_hidden",
           "same_within_rounding", "write_expected"]

EXPECTED = REPO / "src" / "tapelab" / "exercises" / "expected"  # the visible cases' values, package data
HIDDEN = "expected"  # the folder beside the solution notebooks that holds the hidden cases' values
_EXERCISE = re.compile(r"^ex(\d+)_(\d+)$")
# How far a recomputed value may lie from the stored one and still be the same value (`same_within_rounding`):
# another CPU sums float32 in another order, and a gradient that cancels (2.1's batch-norm cases) moves by some
# ulps of the largest number it was summed from, not of itself. A tenth of what the checks accept
# (tapelab.checker.compare), relative to the value's largest number.
ROUNDING = {"rtol": RTOL / 10, "atol": ATOL / 10}


def _hidden_calls(source: str) -> list[tuple[str, ast.Call]]:
    """(exercise number, call) of each `exN_M.check(..., cases=...)` in a test cell's source."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "check"
                and isinstance(node.func.value, ast.Name) and (match := _EXERCISE.match(node.func.value.id))
                and any(k.arg == "cases" for k in node.keywords)):
            found.append((".".join(match.groups()), node))
    return found


def exercise_tests(nb: NotebookNode) -> list[NotebookNode]:
    """The locked, graded code cells that are not answers: an exercise's tests."""
    def role(cell):
        return cell.metadata.get("nbgrader", {})
    return [c for c in nb.cells if c.cell_type == "code" and role(c).get("grade") and role(c).get("locked")
            and not role(c).get("solution")]


def hidden_cases(name: str, solutions: Path = SOLUTIONS) -> dict[str, list]:
    """Exercise number -> the cases its test cells pass to `check(cases=...)`, as written (literals)."""
    nb = nbformat.read(solutions / f"{name}.ipynb", as_version=4)
    found: dict[str, list] = {}
    for cell in exercise_tests(nb):
        for number, call in _hidden_calls(cell.source):
            cases = next(k.value for k in call.keywords if k.arg == "cases")
            try:
                found.setdefault(number, []).extend(ast.literal_eval(cases))
            except ValueError:
                raise ValueError(f"{name}: the cases of `ex{number.replace('.', '_')}.check` are not literals, "
                                 "so the release cannot compute their expected values") from None
    return found


def _exercises(name: str) -> dict[str, Exercise]:
    """Exercise number -> the exercise object of notebook `name` that names its expectations."""
    module_name = f"tapelab.exercises.{name.split('_', 1)[1]}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        return {}  # a notebook without exercises of its own in the package: nothing is computed for it
    return {value.number: value for value in vars(module).values()
            if isinstance(value, Exercise) and type(value).expectations is not Exercise.expectations}


def _values(exercise, cases, refs) -> dict[str, dict]:
    """Case key -> name -> encoded value, each computed by the references."""
    out = {}
    for case in cases:
        computations = exercise.expectations(case)
        out[exercise.case_key(case)] = {name: encode(compute(refs)) for name, compute in computations.items()}
    return out


def derive_expected(name: str, solutions: Path = SOLUTIONS) -> tuple[dict, dict]:
    """(visible, hidden): exercise number -> case key -> name -> encoded value, for notebook `name` (both
    empty when none of its exercises names expectations). ValueError when the references are not installed."""
    exercises = _exercises(name)
    if not exercises:
        return {}, {}
    refs = references()
    if refs is None:
        raise ValueError(f"{name}: its expected values are computed by the answers distribution's references, which "
                         "are not installed here: `pip install --no-deps -e ./answers`, then release again")
    hidden = hidden_cases(name, solutions)
    visible = {n: _values(e, e.visible_cases, refs) for n, e in sorted(exercises.items())}
    return visible, {n: _values(e, hidden.get(n, ()), refs) for n, e in sorted(exercises.items())}


def _write(path: Path, exercises: dict, what: str) -> Path:
    """JSON with one line per stored value (exercise, case and name above it), so that a diff shows which."""
    def block(mapping: dict, depth: int) -> str:
        pad = " " * (depth + 1)
        items = [f"{pad}{json.dumps(k)}: "
                 + (block(v, depth + 1) if depth < 2 else json.dumps(v, separators=(",", ":")))
                 for k, v in mapping.items()]
        return "{\n" + ",\n".join(items) + f"\n{' ' * depth}}}" if items else "{}"

    path.parent.mkdir(parents=True, exist_ok=True)
    generated = json.dumps(f"by `tapelab release` from the answers distribution's references, for {what}")
    path.write_text(f'{{\n "generated": {generated},\n "exercises": {block(exercises, 1)}\n}}\n', encoding="utf-8")
    return path


def _leaves(value) -> list:
    return [leaf for item in value for leaf in _leaves(item)] if isinstance(value, list) else [value]


def _nesting(value):
    """The lists of `value` without their leaves: `[[k, b]]` and `[k, b]` hold the same leaves, nested otherwise."""
    return [_nesting(item) for item in value] if isinstance(value, list) else None


def same_within_rounding(fresh, stored) -> bool:
    """Are two encoded values (`encode`) the same value: the same structure, types, dtypes and shapes, and every
    number within `ROUNDING` of the stored one, relative to the largest number of the value (a gradient that
    cancels carries the rounding of its largest terms)?"""
    if _nesting(decode(fresh)) != _nesting(decode(stored)):
        return False
    a, b = _leaves(decode(fresh)), _leaves(decode(stored))
    if len(a) != len(b) or any(type(x) is not type(y) or np.shape(x) != np.shape(y)
                               or getattr(x, "dtype", None) != getattr(y, "dtype", None) for x, y in zip(a, b)):
        return False
    numbers = [np.asarray(x, float).ravel() for x in a], [np.asarray(y, float).ravel() for y in b]
    finite = [np.abs(y[np.isfinite(y)]) for y in numbers[1]]
    scale = max((float(y.max()) for y in finite if y.size), default=0.0)
    return all(np.allclose(x, y, rtol=0.0, atol=ROUNDING["atol"] + ROUNDING["rtol"] * scale, equal_nan=True)
               for x, y in zip(*numbers))


def _settled(fresh: dict, stored: dict) -> dict:
    """`fresh` (exercise -> case -> name -> value), where each value the same within rounding as the one
    already stored keeps the stored one: a release on another CPU rewrites only values that changed."""
    if not isinstance(stored, dict):
        return fresh
    return {key: value if key not in stored
            else _settled(value, stored[key]) if isinstance(value, dict) and "shape" not in value
            else stored[key] if same_within_rounding(value, stored[key]) else value
            for key, value in fresh.items()}


def _stored(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))["exercises"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def write_expected(name: str, visible: dict, hidden: dict, out: Path = EXPECTED,
                   solutions: Path = SOLUTIONS) -> list[Path]:
    """Write notebook `name`'s visible values into out/ and its hidden ones into solutions/expected/; a value
    that is the same within rounding as the one these files already hold is written as it was."""
    if not visible:
        return []
    package, beside = out / f"{name}.json", solutions / HIDDEN / f"{name}.json"
    return [_write(package, _settled(visible, _stored(package)), f"the visible checks of solutions/{name}.ipynb"),
            _write(beside, _settled(hidden, _stored(beside)),
                   f"the hidden tests of solutions/{name}.ipynb (the course's set-up writes them into those tests)")]


def inline_hidden(nb: NotebookNode, hidden: Path) -> None:
    """Give each `exN_M.check(cases=...)` of the test cells the stored values of exercise N.M's hidden cases
    (from the file `hidden`, if it exists), as `expected={...}`, in place. Only the course's source notebooks
    get them: nbgrader keeps them in the gradebook and removes the hidden tests from the students' copy."""
    if not hidden.is_file():
        return
    stored = json.loads(hidden.read_text(encoding="utf-8"))["exercises"]
    for cell in exercise_tests(nb):
        calls = [(n, c) for n, c in _hidden_calls(cell.source) if n in stored]
        if any(k.arg == "expected" for _, call in calls for k in call.keywords):
            raise ValueError(f"the test cell {cell.metadata['nbgrader'].get('grade_id')} passes `expected` itself: "
                             "the course's set-up writes it, from solutions/expected/")
        lines = cell.source.split("\n")
        for number, call in sorted(calls, key=lambda nc: (nc[1].end_lineno, nc[1].end_col_offset), reverse=True):
            last = call.keywords[-1].value  # after the last argument: a trailing comma may follow it
            line = lines[last.end_lineno - 1].encode()  # ast counts columns in bytes of UTF-8
            at = last.end_col_offset
            lines[last.end_lineno - 1] = (line[:at] + f", expected={stored[number]!r}".encode() + line[at:]).decode()
        cell.source = "\n".join(lines)
