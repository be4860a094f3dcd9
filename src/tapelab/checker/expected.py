"""A check's expected values, read from data instead of computed by reference code the student could read.

Some exercises' reference computations are close to their model answers; they live in the answers
distribution (`tapelab_answers.references`), which a graded course does not install. `tapelab release`
(tapelab.release_expected) runs them for every case of the notebooks' checks and stores the numbers:
- the visible cases' in this package, tapelab/exercises/expected/NN_topic.json (a visible test shows its
  expected values anyway: numbers, not code);
- the hidden cases' beside the solution notebooks, solutions/expected/NN_topic.json, which the course's
  set-up writes into the hidden test itself (`exN_M.check(cases=[...], expected={...})`), so that only the
  grader's copy of the test cell holds them.
An exercise names what it needs of a case (`Exercise.expectations`: name -> a computation from the
references); `Expectations` looks each name up in the hidden test's data, then in this package's, and only
for a case neither covers (a test's own input) computes it, if the references are installed.
"""
from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from functools import cache
from importlib.resources import files
from types import ModuleType
from typing import Any

import numpy as np

from tapelab.checker import replay

__all__ = ["Expectations", "MissingExpectation", "compute_once", "decode", "encode", "references", "stored"]

_PACKAGE = "tapelab.exercises"
_ONCE: dict[tuple[str, str, str], Any] | None = None  # (exercise, case key, name) -> encoded value, once `compute_once()`
_FOLDER = "expected"


class MissingExpectation(LookupError):
    """No data holds this case's expected values, and the references that compute them are not installed."""


def encode(value: Any) -> Any:
    """`value` (arrays, numbers, lists and tuples of them) as JSON: an array is {dtype: values, "shape": ...};
    a float32 value is written in its shortest form that reads back to the same float32."""
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        flat = array.ravel()
        numbers = [float(str(v)) for v in flat] if array.dtype == np.float32 else flat.astype(float).tolist()
        if not np.array_equal(np.asarray(numbers, array.dtype), flat, equal_nan=True):
            numbers = flat.astype(float).tolist()
        return {str(array.dtype): numbers, "shape": list(array.shape)}
    if isinstance(value, (bool, int, float)):
        return value
    raise TypeError(f"cannot store a {type(value).__name__} as an expected value")


def decode(data: Any) -> Any:
    """The value `encode` wrote: arrays of their dtype and shape, lists, numbers."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if isinstance(data, dict):
        (dtype, numbers), = ((k, v) for k, v in data.items() if k != "shape")
        return np.asarray(numbers, dtype).reshape(data["shape"])
    return data


def stored(number: str) -> Mapping[str, Mapping[str, Any]]:
    """Case key -> name -> encoded value, for exercise `number`'s visible cases (this package's data). Parsed
    afresh on each call from text read once: what one check gets, student code cannot change for the next."""
    return json.loads(_text(number.split(".")[0].zfill(2)))["exercises"].get(number, {})


@cache
def _text(prefix: str) -> str:
    """The package's data file of notebook `prefix` ("02"), or an empty one."""
    for path in files(_PACKAGE).joinpath(_FOLDER).iterdir():
        if path.name.startswith(f"{prefix}_") and path.name.endswith(".json"):
            return path.read_text(encoding="utf-8")
    return '{"exercises": {}}'


def references() -> ModuleType | None:
    """The reference computations (`tapelab_answers.references`), or None where they are not installed."""
    try:
        return importlib.import_module("tapelab_answers.references")
    except ImportError:
        return None


class Expectations:
    """The expected values of one case of exercise `number`: `given` (the hidden test's data for this case)
    first, then the package's, then `compute` (name -> a function of the references) if they are installed.
    `variant` is how a message names a variant other than the notebook's (its values are never stored)."""

    def __init__(self, number: str, key: str, compute: Mapping[str, Callable[[ModuleType], Any]],
                 given: Mapping[str, Any] | None = None, variant: str = "") -> None:
        self.number, self.key, self._compute, self.variant = number, key, compute, variant
        self._data = given if given is not None else stored(number).get(key)
        self._cache: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._compute:
            raise KeyError(f"Exercise {self.number} computes no expected value named {name!r}")
        if name not in self._cache:
            self._cache[name] = self._value(name)
        return self._cache[name]

    def later(self, name: str) -> Callable[[], Any]:
        """`self[name]`, looked up (or computed) only when called: for an `Alternative`'s value."""
        return lambda: self[name]

    def _value(self, name: str) -> Any:
        if self._data is not None and name in self._data:
            return decode(self._data[name])
        found = references()
        if found is None and replay.recording():  # a graded check: the judge holds these values, the kernel never
            raise replay.Withheld()
        if found is None and self.variant:
            raise MissingExpectation(
                f"Exercise {self.number}{self.variant} has no expected values here: your numbers are your own, and "
                "the values they need are computed where your course grades, not in your notebook. Your answer is "
                "checked against them when it is graded.")
        if found is None:
            raise MissingExpectation(
                f"Exercise {self.number} has no expected values for the input {self.key} here: this install "
                "holds them only for the notebook's own checks. Check your answer with "
                f"`ex{self.number.replace('.', '_')}.check()`.")
        if _ONCE is None:
            return self._compute[name](found)
        key = (self.number, self.key, name)
        if key not in _ONCE:
            value = self._compute[name](found)
            try:
                _ONCE[key] = encode(value)
            except TypeError:  # not a value `tapelab release` could store either: computed each time
                return value
        return decode(_ONCE[key])


def compute_once() -> None:
    """From now on, this process computes each expected value once per exercise, case and name, and serves it as
    `tapelab release` would have stored it (`decode(encode(value))`, a fresh copy each time): for the grader's
    judge, which checks every student's answer on the same cases. An exercise's `expectations` are functions
    of the variant's values and the case alone (`Exercise.expectations`), and the case key holds both."""
    global _ONCE
    if _ONCE is None:
        _ONCE = {}
