"""Differential diagnosis: which wrong answer did the student give?

Before falling back on "expected X, got Y", a checker lists the values that known wrong answers
would give (`Alternative`: the loss in inference mode, swapped items, a sum instead of a mean...)
and `wrong_value` names the one the student's value matches, with its cause code from
`tapelab.causes`. A cause is named only when the student's value matches that alternative and the
right answer does not, so a coincidence on one input never becomes a diagnosis.

In a checker::

    problem = wrong_value("dy_dx", expected, got, [
        Alternative("one-sided", lambda: (f(x + h) - f(x)) / h, "forward-difference",
                    "That is the one-sided difference. Did you evaluate at `x + h` and `x - h`?"),
        swapped(expected),
    ], otherwise="Is `y` computed from `x` as the task says?")
    if problem:
        raise problem
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from tapelab.causes import cause as _catalogued
from tapelab.checker.compare import ATOL, RTOL, agrees, mismatch, to_numpy
from tapelab.checker.differential import ratio_of, structural
from tapelab.checker.messages import Incorrect

__all__ = ["Alternative", "matching_alternative", "because", "wrong_value", "arrangement", "ratio_of", "swapped",
           "swapped_item"]


@dataclass(frozen=True)
class Alternative:
    """A known wrong answer: what it is (`name`), the value it gives (or a function computing it, called
    only if needed), the catalogued `cause` code, and what to tell the student when it matches (`says`).
    `confirm`, when given, is a second probe: it runs the student's answer on an input where this explanation and
    the others that could match differ (or reads the code fact that produces it), and says whether this one still
    holds; a match it does not confirm is a coincidence of the first input, and is dropped."""

    name: str
    value: Any
    cause: str
    says: str
    confirm: Callable[[], bool] | None = None

    def __post_init__(self) -> None:
        _catalogued(self.cause)  # an unknown code is the checker's bug: fail when the checker is written

    def resolve(self) -> Any:
        return self.value() if callable(self.value) else self.value


def matching_alternative(expected: Any, actual: Any, alternatives: Iterable[Alternative],
                         rtol: float = RTOL, atol: float = ATOL, name: str | None = None) -> Alternative | None:
    """The alternative that `actual` matches and `expected` does not, if exactly one cause matches (two
    wrong answers that give the same value here are not told apart, so neither is named; a constant
    factor yields to a more specific cause); else, when none matches, the structural mistake
    (tapelab.checker.differential) that turns the right value into `actual`, if one does; else None."""
    matches = []
    for alternative in alternatives:
        try:
            value = alternative.resolve()
        except Exception:  # an alternative that cannot be built for this input does not apply
            continue
        if value is not None and agrees(value, actual, rtol, atol) and not agrees(expected, value, rtol, atol):
            matches.append(alternative)
    matches = [m for m in matches if m.cause != "constant-factor"] or matches  # a named cause is more specific
    if len({m.cause for m in matches}) > 1 or any(m.confirm for m in matches):
        matches = [m for m in matches if m.confirm is None or m.confirm()]  # coincidences of this input go
        if not matches:
            return None
    if len({m.cause for m in matches}) == 1:
        return matches[0]
    if matches:
        return None
    found = structural(expected, actual, name, rtol, atol)
    return Alternative(found[0], None, found[0], found[1]) if found else None


def because(expected: Any, actual: Any, alternatives: Iterable[Alternative] = (), otherwise: str = "",
            rtol: float = RTOL, atol: float = ATOL, name: str | None = None) -> tuple[str, str | None]:
    """What to say after "expected X, got Y", and its cause code: the matching alternative's question,
    else `otherwise` (a question that asserts no cause) with no code."""
    found = matching_alternative(expected, actual, alternatives, rtol, atol, name)
    return (found.says, found.cause) if found is not None else (otherwise, None)


def wrong_value(name: str, expected: Any, actual: Any, alternatives: Iterable[Alternative] = (),
                otherwise: str = "", rtol: float = RTOL, atol: float = ATOL) -> Incorrect | None:
    """None if `actual` is right; else the Incorrect to raise: how `name` differs, then `because`. When no
    cause is established, the message says so: where the values first differ (for a small array, whose
    whole values it shows), that no known mistake gives them, then `otherwise`, the exercise's question."""
    problem = mismatch(expected, actual, name, rtol, atol)
    if problem is None:
        return None
    says, code = because(expected, actual, alternatives, otherwise, rtol, atol, name)
    if code is None:
        says = f"{_first_difference(expected, actual, rtol, atol)}No known mistake gives exactly these values. {says}"
    return Incorrect(f"{problem} {says}".strip(), cause=code)


def _first_difference(expected: Any, actual: Any, rtol: float, atol: float) -> str:
    """"They first differ at index [1, 0]. " for two arrays of one shape and 2 to 12 entries, else "" (a nest's
    mismatch already names its first wrong item)."""
    if isinstance(expected, (list, tuple, dict)):
        return ""
    try:
        want, got = to_numpy(expected).astype(np.float64), to_numpy(actual).astype(np.float64)
    except (TypeError, ValueError):
        return ""
    if want.shape != got.shape or not 1 < want.size <= 12:
        return ""
    differ = np.argwhere(~np.isclose(got, want, rtol=rtol, atol=atol))
    return f"They first differ at index {[int(i) for i in differ[0]]}. " if len(differ) else ""


_ARRANGEMENTS = frozenset({"swapped-results", "first-source-only", "wrong-target"})  # nest-level causes


def arrangement(name: str, expected: Sequence, actual: Sequence, rtol: float = RTOL, atol: float = ATOL,
                causes: frozenset[str] = _ARRANGEMENTS) -> Incorrect | None:
    """For a checker that compares a returned list item by item: an Incorrect when the items are the right ones
    arranged wrongly (in another order, the first one for all, all summed into one), which item-by-item
    comparison cannot see;
    else None, and the checker goes on item by item. `causes` narrows the arrangements looked for, where items
    are not alike (a slope and its estimate are not two sources)."""
    found = structural(list(expected), list(actual) if isinstance(actual, (list, tuple)) else actual, name, rtol, atol)
    if found is None or found[0] not in causes:
        return None
    return Incorrect(found[1], cause=found[0])


_SWAPPED = "Those are the right values in the wrong order. Did you swap them?"


def swapped(expected: Any, cause: str = "swapped-results", says: str = "") -> Alternative:
    """The right items of a pair or list in reverse order."""
    return Alternative("the items in reverse order", lambda: list(expected)[::-1], cause, says or _SWAPPED)


def swapped_item(expected: Sequence, actual: Sequence, item: int, cause: str = "swapped-results",
                 says: str = "") -> Alternative:
    """Item `item` of the right items in reverse order, for a checker that compares a list item by item:
    it applies only when all of the student's items are the right ones reversed, so one wrong item that
    happens to equal another item's right value is not called a swap."""
    reverse = list(expected)[::-1]
    return Alternative("the items in reverse order", lambda: reverse[item] if agrees(reverse, list(actual)) else None,
                       cause, says or _SWAPPED)
