"""Student answers for tests: the reference from solutions/, and catalogued mistakes.

An answer is the source of an answer cell. `define` executes it so that `inspect.getsource`
works on the functions it defines, as it does for code typed into a notebook cell.
"""
from __future__ import annotations

import importlib
import linecache
import pkgutil
import re
from dataclasses import dataclass, replace
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
_SOLUTION_REGION = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*(\n|$)", re.M)


@dataclass(frozen=True)
class Mistake:
    """A realistic wrong answer for one exercise, and words its feedback must contain."""

    name: str
    code: str
    says: str


@dataclass(frozen=True)
class Fresh:
    """A mistake of the second catalogue (tests/fresh_mistakes/), written from the exercise text before the
    diagnosis engine was built, to measure it: `cause` is the code (or codes) in `tapelab.causes` that names
    what went wrong, and `tutor` what a good tutor would say. The feedback names it when it carries that code."""

    name: str
    code: str
    cause: str | tuple[str, ...]
    tutor: str

    @property
    def causes(self) -> tuple[str, ...]:
        return (self.cause,) if isinstance(self.cause, str) else tuple(self.cause)


@dataclass(frozen=True)
class Reported:
    """A mistake of the third catalogue (tests/third_mistakes/): a wrong answer seen in a public bug report or
    forum thread, transplanted into an exercise. `tutor` says what is wrong as a tutor would, `source` is the
    address of the report. No cause code: a blind reader judges the message against `tutor`."""

    name: str
    code: str
    tutor: str
    source: str


def reference_answers(notebook: str) -> dict[str, str]:
    """grade_id of each answer cell -> its solution source, markers removed."""
    nb = nbformat.read(REPO / "solutions" / f"{notebook}.ipynb", as_version=4)
    return {
        cell.metadata["nbgrader"]["grade_id"]: _SOLUTION_REGION.sub("", cell.source)
        for cell in nb.cells
        if cell.metadata.get("nbgrader", {}).get("solution")
    }


def stub_answers(notebook: str) -> dict[str, str]:
    """grade_id of each answer cell -> its source in the student notebook (notebooks/): the untouched stub."""
    nb = nbformat.read(REPO / "notebooks" / f"{notebook}.ipynb", as_version=4)
    return {cell.metadata["nbgrader"]["grade_id"]: cell.source for cell in nb.cells
            if cell.metadata.get("nbgrader", {}).get("solution")}


def variant_reference(notebook: str, grade_id: str, seed: int | None) -> str:
    """The reference answer of one answer cell written for the variant of `seed` (None: the notebook's own)."""
    if seed is None:
        return reference_answers(notebook)[grade_id]
    from tapelab_answers import answer

    checker = exercise_named(grade_id.removesuffix("_answer"))
    return checker.space.variant(seed).fill(answer(checker.number).template)


def own_answers(notebook: str, salt: str, student: str) -> dict[str, str]:
    """The reference answers of `notebook`, each varying exercise's written for the variant the course of secret
    `salt` gives `student` (tapelab.checker.variants.seed_for): what a student who solved their own numbers
    hands in."""
    from tapelab_answers import answer

    from tapelab.checker.variants import seed_for

    answers = reference_answers(notebook)
    for grade_id in answers:
        checker = exercise_named(grade_id.removesuffix("_answer"))
        if checker.space.varies:
            variant = checker.space.variant(seed_for(salt, student, checker.number))
            answers[grade_id] = variant.fill(answer(checker.number).template)
    return answers


def mistakes(notebook: str, seed: int | None = None) -> dict[str, list[Mistake]]:
    """grade_id of each answer cell -> its catalogued mistakes (tests/mistakes/<topic>.py), written for the
    variant of `seed` (None: the notebook's own numbers)."""
    return _for_variant(notebook, "mistakes", seed, "code", "says")


def fresh_mistakes(notebook: str, seed: int | None = None) -> dict[str, list[Fresh]]:
    """grade_id of each answer cell -> its mistakes of the second catalogue (tests/fresh_mistakes/<topic>.py),
    written for the variant of `seed`."""
    return _for_variant(notebook, "fresh_mistakes", seed, "code", "tutor")


def _for_variant(notebook: str, catalogue: str, seed: int | None, *fields: str) -> dict[str, list]:
    """A catalogue's mistakes with their `$name` fields filled from their exercise's variant of `seed`: a
    mistake is a transformation that applies to any variant (tapelab.checker.variants)."""
    found = importlib.import_module(f"{catalogue}.{notebook.split('_', 1)[1]}").MISTAKES
    filled = {}
    for grade_id, listed in found.items():
        variant = exercise_named(grade_id.removesuffix("_answer")).space.variant(seed)
        filled[grade_id] = [replace(m, **{f: variant.fill(getattr(m, f)) for f in fields}) for m in listed]
    return filled


def reported_mistakes(notebook: str) -> dict[str, list[Reported]]:
    """grade_id of each answer cell -> its mistakes of the third catalogue (tests/third_mistakes/<topic>.py)."""
    module = importlib.import_module(f"third_mistakes.{notebook.split('_', 1)[1]}")
    return module.MISTAKES


def variant_seeds(count: int) -> list[int]:
    """The seeds of the first `count` variants that the variant tests and the sweeping tools grade."""
    return [1000 + 7919 * i for i in range(count)]


def chosen_notebooks(parser, names: list[str]) -> list[str]:
    """A tool's notebook arguments, all six when there are none; an unknown name is the parser's error,
    naming the known ones."""
    from tapelab.paths import assignment_names

    known = assignment_names()
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown notebook(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return list(names) or known


def exercise_named(name: str):
    """The checker bound to `name` ("ex1_2") in whichever module of `tapelab.exercises` binds it."""
    import tapelab.exercises

    for module in pkgutil.iter_modules(tapelab.exercises.__path__):
        found = getattr(importlib.import_module(f"tapelab.exercises.{module.name}"), name, None)
        if found is not None:
            return found
    raise LookupError(f"no module of tapelab.exercises binds {name}")


def define(code: str, label: str, namespace: dict) -> dict:
    """Execute answer `code` in `namespace` with its source registered for `inspect`."""
    filename = f"<answer {label}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    exec(compile(code, filename, "exec"), namespace)
    return namespace
