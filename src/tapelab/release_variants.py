"""Per-student variants in a graded course: the course's secret, the salt its notebooks carry, and each check
pinned to the student's variant when the grader runs it.

The course setting `variants` (`c.TapelabCourse.variants` in the course's nbgrader_config.py) is "notebook"
(every student gets the numbers of the text, the default) or "per-student". For the latter:
- the course folder keeps a secret, variants.key (made once, readable by its owner only), so every release of
  the same course gives each student the same variants;
- each student notebook's setup cell calls `course_variants(salt, ex...)` with a salt derived from it, which
  gives the exercises the variants of the student the hub names (tapelab.checker.variants);
- before a submission runs, `pin` rewrites its graded test cells (restored from the gradebook) so that every
  `exN_M.check(...)` of an exercise that varies checks the variant of the student the submission's folder
  belongs to (`seed=`), with the hidden cases' expected values computed here for that variant.
"""
from __future__ import annotations

import ast
import hashlib
import hmac
import importlib
import os
import re
import secrets
from pathlib import Path

from nbformat import NotebookNode

from tapelab.checker.exercise import Exercise
from tapelab.checker.expected import encode, references
from tapelab.checker.variants import seed_for
from tapelab.release_expected import exercise_tests

__all__ = ["KEY_FILE", "NOTEBOOK", "PER_STUDENT", "VARIANTS_CONFIG", "course_salt", "notebook_exercises",
           "parse_variants", "pin", "variants_setup_cell"]

NOTEBOOK, PER_STUDENT = "notebook", "per-student"
KEY_FILE = "variants.key"
VARIANTS_CONFIG = '''\
# Variants: "notebook" (every student gets the numbers of the text) or "per-student" (each student their own,
# derived from the secret in variants.key in this folder: keep that file, and back it up with the gradebook).
c.TapelabCourse.variants = {setting!r}
'''
IMPORT = "from tapelab.checker.variants import course_variants"
_EXERCISE = re.compile(r"^ex(\d+)_(\d+)$")


def parse_variants(setting: object) -> str:
    """The setting, checked: ValueError names the two forms."""
    if setting not in (NOTEBOOK, PER_STUDENT):
        raise ValueError(f"the variants setting {setting!r} is neither {NOTEBOOK!r} nor {PER_STUDENT!r}")
    return str(setting)


def course_salt(course: Path) -> str:
    """The salt of `course`'s variants, from its secret (made now if the course has none yet)."""
    key = course / KEY_FILE
    try:
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32) + "\n")
    fd = os.open(key, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as held:
        secret = held.read().strip()
    try:
        raw = bytes.fromhex(secret)
    except ValueError:
        raw = b""
    if len(raw) < 16:
        raise ValueError(f"{key} does not hold the course's secret (64 hex digits): restore it from your backup; "
                         "a new one would give every student other variants")
    return hmac.new(raw, b"tapelab variants", hashlib.sha256).hexdigest()[:32]


def variants_setup_cell(nb: NotebookNode, salt: str) -> None:
    """Give the setup cell (id `setup`) the call that hands its exercises their student's variants."""
    cell = next((c for c in nb.cells if c.cell_type == "code" and c.get("id") == "setup"), None)
    if cell is None:
        raise ValueError("no setup cell (a code cell with id `setup`) to write the course's variants into")
    lines = cell.source.rstrip("\n").split("\n")
    names = sorted({n for line in lines if line.startswith("from tapelab.exercises")
                    for n in re.findall(r"\bex\d+_\d+\b", line)}, key=lambda n: tuple(map(int, n[2:].split("_"))))
    at = next((i for i, line in enumerate(lines) if line.startswith("from tapelab") and line > IMPORT), len(lines))
    lines.insert(at, IMPORT)
    lines.append(f'course_variants("{salt}", {", ".join(names)})  # your own numbers for each exercise')
    cell.source = "\n".join(lines)


def notebook_exercises(nb: NotebookNode) -> dict:
    """Name ("ex1_2") -> checker, for every exercise the notebook's setup cell imports from `tapelab.exercises`."""
    setup = next((c.source for c in nb.cells if c.cell_type == "code" and c.get("id") == "setup"), "")
    found = {}
    for module, names in re.findall(r"^from (tapelab\.exercises\.\w+) import (.+)$", setup, re.M):
        imported = importlib.import_module(module)
        found.update({n: getattr(imported, n) for n in re.findall(r"\bex\d+_\d+\b", names)})
    return found


def pin(nb: NotebookNode, salt: str, student: str, exercises: dict) -> None:
    """Make each graded test cell check `student`'s variants: `exercises` maps a name ("ex1_2") to its checker;
    a call of one that varies gets `seed=`, and its `expected=` (the hidden cases' values) those of the variant.
    The setup cell's `course_variants` call names the student too, so the feedback shows their own numbers."""
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.get("id") == "setup":
            cell.source = re.sub(r"^(course_variants\(.*?)\)(?=  #|$)", lambda m: f"{m[1]}, student={student!r})",
                                 cell.source, flags=re.M)
    for cell in exercise_tests(nb):
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        edits = []
        for call in ast.walk(tree):
            name = _checked(call)
            if name is None or name not in exercises or not exercises[name].space.varies:
                continue
            exercise = exercises[name]
            seed = seed_for(salt, student, exercise.number)
            edits += _edits(call, seed, exercise)
        cell.source = _apply(cell.source, edits)


def _checked(node: ast.AST) -> str | None:
    """The exercise name of an `exN_M.check(...)` call, else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "check"
            and isinstance(node.func.value, ast.Name) and _EXERCISE.match(node.func.value.id)):
        return node.func.value.id
    return None


def _edits(call: ast.Call, seed: int, exercise) -> list[tuple[int, int, int, int, str]]:
    """(start line, start column, end line, end column, text) replacements for one call, columns in UTF-8 bytes.
    An exercise whose expected values the references compute gets them for the variant, visible cases included
    (a grading kernel has no references to compute them with)."""
    edits, added = [], f"seed={seed}"
    if type(exercise).expectations is not Exercise.expectations:
        cases_given = next((k.value for k in call.keywords if k.arg == "cases"), None)
        cases = list(exercise.visible_cases) if cases_given is None else ast.literal_eval(cases_given)
        values = repr(_expected(exercise, seed, cases))
        given = next((k.value for k in call.keywords if k.arg == "expected"), None)
        if given is None:
            added = f"expected={values}, {added}"
        else:
            edits.append((given.lineno, given.col_offset, given.end_lineno, given.end_col_offset, values))
    last = (call.args + [k.value for k in call.keywords])[-1:]
    if last:
        end = last[0]
        edits.append((end.end_lineno, end.end_col_offset, end.end_lineno, end.end_col_offset, f", {added}"))
    else:
        edits.append((call.end_lineno, call.end_col_offset - 1, call.end_lineno, call.end_col_offset - 1, added))
    return edits


# (exercise, the variant's values, case) -> name -> encoded value: a grading worker computes each once, however many
# students draw the same values (a class of 300 draws at most a handful per exercise; `expectations` reads the
# variant's values and the case, never its seed).
_COMPUTED: dict[tuple[str, str, str], dict] = {}


def _expected(exercise, seed: int, cases: list) -> dict:
    """Case key -> name -> encoded value of `cases` in the variant of `seed`, computed by the references once per
    variant values and case in this process."""
    refs = references()
    if refs is None:
        raise ValueError(f"Exercise {exercise.number} varies per student and its expected values come from the "
                         "answers distribution's references, which the grader needs: `pip install --no-deps -e ./answers` "
                         "where `tapelab grade` runs (never in the students' environment)")
    exercise._pinned = variant = exercise.space.variant(seed)
    values = repr(sorted(variant.values.items()))
    try:
        found = {}
        for case in cases:
            key = (exercise.number, values, repr(case))
            if key not in _COMPUTED:
                _COMPUTED[key] = {name: encode(compute(refs)) for name, compute in exercise.expectations(case).items()}
            found[exercise.case_key(case)] = _COMPUTED[key]
        return found
    finally:
        exercise._pinned = None


def _apply(source: str, edits: list[tuple[int, int, int, int, str]]) -> str:
    """`source` with each edit made, from the last to the first so that earlier positions stay right."""
    lines = [line.encode() for line in source.split("\n")]
    for start_line, start_col, end_line, end_col, text in sorted(edits, reverse=True):
        head, tail = lines[start_line - 1][:start_col], lines[end_line - 1][end_col:]
        lines[start_line - 1:end_line] = [head + text.encode() + tail]
    return "\n".join(line.decode() for line in lines)
