"""An exercise's variants: what may vary, how one variant is drawn from a seed, and whose seed a course uses.

An exercise declares a `Space`: each parameter's value in the notebook's own text (the default variant),
how to draw it from a NumPy generator, the text a value reads as in code and in the task (`wording`), and
a rule (`allowed`) that refuses a draw where the answer and a known mistake would give the same numbers;
a draw of the notebook's own values is refused too (the text's answer would pass it).
A `Variant` holds the values of one draw. Every text of an exercise (its task, hints, solution and last
hint, and each catalogued mistake of the test suite) is a `string.Template` with `$name` fields, filled
from the variant: the default variant fills them to the notebook's own words, so one text serves all.
"""
from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from string import Template
from types import MappingProxyType
from typing import Any

import numpy as np

from tapelab.checker.messages import Message, show

__all__ = ["STUDENT_VARIABLES", "Space", "Variant", "fresh_seed", "course_variants", "seed_for", "student_id",
           "term"]

Draw = Callable[[np.random.Generator], Any]
_ATTEMPTS = 1000  # draws tried before a space is declared too narrow for its `allowed` rule


@dataclass(frozen=True)
class Variant:
    """One variant of an exercise: its seed (None for the notebook's own numbers) and its values by name."""

    seed: int | None
    values: Mapping[str, Any]

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    @property
    def default(self) -> bool:
        """Whether this is the variant the notebook's text states."""
        return self.seed is None

    def fill(self, text: str) -> str:
        """`text` with each `$name` replaced by this variant's value; KeyError for a field it has no value of."""
        return Template(text).substitute(self.values)

    def label(self) -> str:
        """How a message names this variant: empty for the notebook's own, else its seed."""
        return "" if self.seed is None else f" (variant {self.seed})"


class Space:
    """The values an exercise may take: `default` (the notebook's text), `draws` (name -> a draw from a
    generator; a name with no draw keeps its default), `wording` (name -> the text it reads as, a function of
    the values) and `allowed` (False for drawn values that would let a known mistake pass as the answer, or the
    text's own answer pass the visible check: it judges draws, the notebook's values being the reference)."""

    def __init__(self, default: Mapping[str, Any] | None = None, draws: Mapping[str, Draw] | None = None,
                 wording: Mapping[str, Callable[[Mapping[str, Any]], str]] | None = None,
                 allowed: Callable[[Mapping[str, Any]], bool] | None = None) -> None:
        self.default = dict(default or {})
        self.draws = dict(draws or {})
        self.wording = dict(wording or {})
        self.allowed = allowed or (lambda values: True)
        unknown = set(self.draws) - set(self.default)
        if unknown:
            raise ValueError(f"draws for {sorted(unknown)} have no default: give each its notebook value")

    @property
    def varies(self) -> bool:
        return bool(self.draws)

    def _as_text(self, values: Mapping[str, Any]) -> bool:
        """Whether a draw holds the notebook's own values, so that the text's answer would pass it: never drawn."""
        return all(values[name] == self.default[name] for name in self.draws)

    def variant(self, seed: int | None = None) -> Variant:
        """The variant of `seed`: the same values for the same seed, on any machine; None gives the default."""
        values = dict(self.default)
        if seed is not None and self.varies:
            rng = np.random.default_rng(seed)
            for _ in range(_ATTEMPTS):
                values.update({name: draw(rng) for name, draw in self.draws.items()})
                if self.allowed(values) and not self._as_text(values):
                    break
            else:
                raise ValueError(f"no allowed variant in {_ATTEMPTS} draws of seed {seed}: widen the space's draws")
        values.update({name: words(values) for name, words in self.wording.items()})
        return Variant(seed, MappingProxyType(values))


def fresh_seed() -> int:
    """A seed for a new practice variant, short enough to read out to a tutor."""
    return secrets.randbelow(90_000) + 10_000


# Where a kernel learns whose notebook it runs: JupyterHub sets the first for every server it spawns; a course run
# without a hub sets the second in each student's environment (docs/instructor-guide.md).
STUDENT_VARIABLES = ("JUPYTERHUB_USER", "TAPELAB_STUDENT")


def seed_for(salt: str, student: str, number: str) -> int:
    """The seed of `student`'s variant of exercise `number` in the course of `salt`: the same in every release of
    that course, unrelated between students, exercises and courses."""
    digest = hashlib.sha256("\0".join((salt, student, number)).encode()).digest()
    return int.from_bytes(digest[:4], "big")


def student_id() -> str | None:
    """The student this kernel runs for, as the hub (or the course's environment) names them; None if unknown."""
    return next((os.environ[name] for name in STUDENT_VARIABLES if os.environ.get(name)), None)


def term(coefficient: float, symbol: str) -> str:
    """`coefficient * symbol` as code reads it, with a coefficient of 1 left out (`x`, `3 * x`)."""
    return symbol if coefficient == 1 else f"{coefficient:g} * {symbol}"


def course_variants(salt: str, *exercises: Any, student: str | None = None) -> None:
    """Give each of `exercises` the variant of this student (`student_id()` unless named) in the course of `salt`;
    what the setup cell of a course with per-student variants calls, and shows: the tasks with their numbers."""
    student = student or student_id()
    if student is None:
        names = " or ".join(f"`{name}`" for name in STUDENT_VARIABLES)
        show(Message("task", f"This course gives each student their own numbers, but this kernel does not know who "
                               f"you are ({names} is not set), so the exercises use the numbers of the text. Ask "
                               "your instructor how to set your student id, and run this cell again."))
        return
    for exercise in exercises:
        exercise._own = exercise.space.variant(seed_for(salt, student, exercise.number)) if exercise.space.varies else None
    own = [e for e in exercises if e._own is not None]
    tasks = "\n".join(f"- Exercise {e.number}: {e._own.fill(e.statement)}" for e in own)
    show(Message("task", f"Your own numbers, {student}: these exercises differ from the text in the numbers below, "
                           f"and each check tests yours.\n{tasks}" if own else f"{student}: no exercise here varies."))
