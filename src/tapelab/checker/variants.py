"""An exercise's variants: what may vary, and how one variant is drawn from a seed.

An exercise declares a `Space`: each parameter's value in the notebook's own text (the default variant),
how to draw it from a NumPy generator, the text a value reads as in code and in the task (`wording`), and
a rule (`allowed`) that refuses a draw where the answer and a known mistake would give the same numbers.
A `Variant` holds the values of one draw. Every text of an exercise (its task, hints, solution and last
hint, and each catalogued mistake of the test suite) is a `string.Template` with `$name` fields, filled
from the variant: the default variant fills them to the notebook's own words, so one text serves all.
"""
from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from string import Template
from types import MappingProxyType
from typing import Any

import numpy as np

__all__ = ["Space", "Variant", "fresh_seed"]

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
    the values) and `allowed` (False for values that would let a known mistake pass as the answer)."""

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
        if not self.allowed(self.default):
            raise ValueError("the notebook's own values are not allowed by the space's rule")

    @property
    def varies(self) -> bool:
        return bool(self.draws)

    def variant(self, seed: int | None = None) -> Variant:
        """The variant of `seed`: the same values for the same seed, on any machine; None gives the default."""
        values = dict(self.default)
        if seed is not None and self.varies:
            rng = np.random.default_rng(seed)
            for _ in range(_ATTEMPTS):
                values.update({name: draw(rng) for name, draw in self.draws.items()})
                if self.allowed(values):
                    break
            else:
                raise ValueError(f"no allowed variant in {_ATTEMPTS} draws of seed {seed}: widen the space's draws")
        values.update({name: words(values) for name, words in self.wording.items()})
        return Variant(seed, MappingProxyType(values))


def fresh_seed() -> int:
    """A seed for a new practice variant, short enough to read out to a tutor."""
    return secrets.randbelow(90_000) + 10_000


def term(coefficient: float, symbol: str) -> str:
    """`coefficient * symbol` as code reads it, with a coefficient of 1 left out (`x`, `3 * x`)."""
    return symbol if coefficient == 1 else f"{coefficient:g} * {symbol}"
