"""Tensor-aware comparison that explains a difference in the student's terms.

`mismatch` returns None when two values agree, else one sentence naming what differs:
None against a value, structure, shape, dtype kind, or the values themselves. Numbers that are
compared are shown with as many decimals as the tolerance needs (`fmt_pair`), so two values that
differ never print alike; arrays too large to read are summarised instead of dumped.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["mismatch", "to_numpy", "fmt", "fmt_pair", "decimals_for", "allclose", "all_close", "agrees"]

RTOL, ATOL = 1e-4, 1e-5
_SHOWN = 12  # arrays with more entries are summarised (shape, first and largest difference)
_MIN_DECIMALS, _MAX_DECIMALS = 4, 12


def to_numpy(value: Any) -> np.ndarray:
    """A NumPy array for a tensor, variable, array or Python number."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    return np.asarray(value)


def fmt(value: Any, digits: int = _MIN_DECIMALS) -> str:
    """A short rendering of a value for a message, rounded to `digits` decimals."""
    if value is None:
        return "None"
    array = to_numpy(value)
    if array.dtype.kind in "fc":
        array = np.round(array.astype(np.float64), digits) + 0.0  # + 0.0 turns -0.0 into 0.0
    text = (np.array2string(array, separator=", ", threshold=_SHOWN, suppress_small=True) if array.ndim
            else repr(array.item()))
    return text.replace("\n", "")


def _decimals(difference: float) -> int:
    """Decimals at which two numbers `difference` apart are at least ten units of the last one apart."""
    if not math.isfinite(difference) or difference <= 0:
        return _MAX_DECIMALS
    return min(max(math.ceil(-math.log10(difference)) + 1, _MIN_DECIMALS), _MAX_DECIMALS)


def decimals_for(expected: Any, rtol: float = RTOL, atol: float = ATOL) -> int:
    """Decimals that resolve the tolerance `atol + rtol * |expected|`: any difference the comparison
    rejects shows in the last decimals."""
    try:
        magnitude = np.abs(to_numpy(expected).astype(np.float64))
    except (TypeError, ValueError):
        return _MIN_DECIMALS
    return _decimals(atol + rtol * (float(magnitude.min()) if magnitude.size else 0.0))


def fmt_pair(actual: Any, expected: Any, rtol: float = RTOL, atol: float = ATOL) -> tuple[str, str]:
    """`actual` and `expected` rendered with enough decimals to show their smallest rejected difference
    (at most what the tolerance needs), and more if they would still print alike: never
    "is 0.0707, but should be 0.0707"."""
    digits = decimals_for(expected, rtol, atol)
    try:
        got, want = to_numpy(actual).astype(np.float64), to_numpy(expected).astype(np.float64)
        rejected = np.abs(got - want)[~np.isclose(got, want, rtol=rtol, atol=atol)]
        if rejected.size:
            digits = min(digits, _decimals(float(rejected[np.isfinite(rejected)].min(initial=np.inf))))
    except (TypeError, ValueError):  # other shapes or not numbers: the tolerance alone decides
        pass
    shown = fmt(actual, digits), fmt(expected, digits)
    while shown[0] == shown[1] and digits < _MAX_DECIMALS:
        digits += 1
        shown = fmt(actual, digits), fmt(expected, digits)
    return shown


def allclose(expected: Any, actual: Any, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Whether two numeric values agree elementwise, shapes included; False for non-numbers."""
    try:
        a, b = to_numpy(expected).astype(np.float64), to_numpy(actual).astype(np.float64)
    except (TypeError, ValueError):
        return False
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def all_close(expected: Sequence, actual: Sequence, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Whether two lists agree pairwise: same length, each pair `allclose`, no None in `actual`."""
    return len(expected) == len(actual) and all(
        a is not None and allclose(e, a, rtol, atol) for e, a in zip(expected, actual))


def agrees(expected: Any, actual: Any, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Whether `actual` matches `expected` as `mismatch` judges it: nests, None, shapes and values."""
    return mismatch(expected, actual, "value", rtol, atol) is None


def _is_nest(value: Any) -> bool:
    return isinstance(value, (list, tuple, dict))


def mismatch(expected: Any, actual: Any, name: str, rtol: float = RTOL, atol: float = ATOL) -> str | None:
    """None if `actual` matches `expected`, else a sentence about `name` saying how it differs."""
    if _is_nest(expected):
        return _nest_mismatch(expected, actual, name, rtol, atol)
    if actual is None:
        return f"`{name}` is `None`, but should be {fmt(expected, decimals_for(expected, rtol, atol))}."
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
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    close = np.isclose(got64, want64, rtol=rtol, atol=atol)
    if close.all():
        return None
    if want.size > _SHOWN:
        return _summary(name, got64, want64, close, rtol, atol)
    shown, should = fmt_pair(got, want, rtol, atol)
    return f"`{name}` is {shown}, but should be {should}."


def _summary(name: str, got: np.ndarray, want: np.ndarray, close: np.ndarray, rtol: float, atol: float) -> str:
    """A large array's difference in one sentence: how many entries, the first, and the largest."""
    first = tuple(int(i) for i in np.argwhere(~close)[0])
    difference = np.abs(got - want)
    difference[~np.isfinite(difference)] = np.inf
    shown, should = fmt_pair(got[first], want[first], rtol, atol)
    largest = float(difference.max())
    return (f"`{name}` (shape {tuple(want.shape)}) differs in {int((~close).sum())} of {want.size} entries: "
            f"the first at index {list(first)}, where it is {shown} but should be {should}; "
            f"the largest difference is {largest:.3g}.")


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
