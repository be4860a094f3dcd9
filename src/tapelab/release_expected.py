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
from nbformat import NotebookNode

from tapelab.checker.exercise import Exercise
from tapelab.checker.expected import encode, references
from tapelab.paths import REPO, SOLUTIONS

__all__ = ["EXPECTED", "HIDDEN", "derive_expected", "exercise_tests", "hidden_cases", "inline_hidden",
           "write_expected"]

EXPECTED = REPO / "src" / "tapelab" / "exercises" / "expected"  # the visible cases' values, package data
HIDDEN = "expected"  # the folder beside the solution notebooks that holds the hidden cases' values
_EXERCISE = re.compile(r"^ex(\d+)_(\d+)$")


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


def write_expected(name: str, visible: dict, hidden: dict, out: Path = EXPECTED,
                   solutions: Path = SOLUTIONS) -> list[Path]:
    """Write notebook `name`'s visible values into out/ and its hidden ones into solutions/expected/."""
    if not visible:
        return []
    return [_write(out / f"{name}.json", visible, f"the visible checks of solutions/{name}.ipynb"),
            _write(solutions / HIDDEN / f"{name}.json", hidden,
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
