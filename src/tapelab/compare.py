"""Tensor-aware comparison that explains a difference in the student's terms.

`mismatch` returns None when two values agree, else one sentence naming what differs:
None against a value, structure, shape, dtype kind, or the values themselves.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["mismatch", "to_numpy", "fmt", "allclose", "all_close"]


def to_numpy(value: Any) -> np.ndarray:
    """A NumPy array for a tensor, variable, array or Python number."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    return np.asarray(value)


def fmt(value: Any, digits: int = 4) -> str:
    """A short, rounded rendering of a value for a message."""
    if value is None:
        return "None"
    array = to_numpy(value)
    if array.dtype.kind in "fc":
        array = np.round(array.astype(np.float64), digits) + 0.0  # + 0.0 turns -0.0 into 0.0
    text = np.array2string(array, separator=", ", threshold=12) if array.ndim else repr(array.item())
    return text.replace("\n", "")


def allclose(expected: Any, actual: Any, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    """Whether two numeric values agree elementwise, shapes included; False for non-numbers."""
    try:
        a, b = to_numpy(expected).astype(np.float64), to_numpy(actual).astype(np.float64)
    except (TypeError, ValueError):
        return False
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def all_close(expected: Sequence, actual: Sequence, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    """Whether two lists agree pairwise: same length, each pair `allclose`, no None in `actual`."""
    return len(expected) == len(actual) and all(
        a is not None and allclose(e, a, rtol, atol) for e, a in zip(expected, actual))


def _is_nest(value: Any) -> bool:
    return isinstance(value, (list, tuple, dict))


def mismatch(expected: Any, actual: Any, name: str, rtol: float = 1e-4, atol: float = 1e-5) -> str | None:
    """None if `actual` matches `expected`, else a sentence about `name` saying how it differs."""
    if _is_nest(expected):
        return _nest_mismatch(expected, actual, name, rtol, atol)
    if actual is None:
        return f"`{name}` is `None`, but should be {fmt(expected)}."
    if _is_nest(actual):
        return f"`{name}` is a {type(actual).__name__}, but should be a single tensor."
    try:
        got = to_numpy(actual)
    except (TypeError, ValueError):
        return f"`{name}` is a `{type(actual).__name__}`, which is not a number or a tensor."
    want = to_numpy(expected)
    if got.dtype.kind not in "biuf":
        return f"`{name}` has dtype `{got.dtype}`, but should be a number."
    if got.shape != want.shape:
        return f"`{name}` has shape {tuple(got.shape)}, but should have shape {tuple(want.shape)}."
    if not np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol):
        return f"`{name}` is {fmt(got)}, but should be {fmt(want)}."
    return None


def _nest_mismatch(expected, actual, name, rtol, atol) -> str | None:
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"`{name}` should be a dict with keys {sorted(expected)}, not a {type(actual).__name__}."
        if set(actual) != set(expected):
            return f"`{name}` has keys {sorted(actual)}, but should have keys {sorted(expected)}."
        items = [(f"{name}[{k!r}]", expected[k], actual[k]) for k in expected]
    else:
        if not isinstance(actual, (list, tuple)):
            return f"`{name}` should be a list of {len(expected)} items, not a {type(actual).__name__}."
        if len(actual) != len(expected):
            return f"`{name}` has {len(actual)} items, but should have {len(expected)}."
        items = [(f"{name}[{i}]", e, a) for i, (e, a) in enumerate(zip(expected, actual))]
    for item_name, e, a in items:
        problem = mismatch(e, a, item_name, rtol, atol)
        if problem:
            return problem
    return None
