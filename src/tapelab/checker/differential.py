"""The structural wrong answers every checker tells apart, computed from the right value alone.

When an exercise's own alternatives (`tapelab.checker.wrong_answers.Alternative`) do not match, `structural`
holds a wrong value against the mistakes one can make with the right numbers: the opposite sign, a
constant factor (and whether it is the size of an axis), zero everywhere, axes in another order, an axis
of size 1 added or dropped, an axis reduced away, an axis left unreduced (a Jacobian for a gradient), the
full Jacobian for a per-example one; for a list, one item given for every item, the items in another
order, or all of them summed into one. Each (cause, message) it returns states only what the values
establish: the student's value equals that transformation of the right one on every entry, and the
right value does not (the transformation is not the identity here). None when nothing matches.

Two helpers take the exercise's own quantities: `combination` (the student's value is another mix of the
task's named terms: one left out, one without the learning rate, one with the opposite sign) and
`one_sided` (a forward or backward difference where a derivative is asked).
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterator

import numpy as np

from tapelab.checker.compare import ATOL, RTOL, agrees, to_numpy

__all__ = ["structural", "ratio_of", "combination", "one_sided"]

_MAX_PERMUTED_RANK = 4  # 4! orders at most


def _q(name: str | None, start: bool = True) -> str:
    return f"`{name}`" if name else "Your answer" if start else "your answer"


def _array(value: Any) -> np.ndarray | None:
    if value is None or isinstance(value, (list, tuple, dict, str)):
        return None
    try:
        array = to_numpy(value)
    except (TypeError, ValueError):
        return None
    return array.astype(np.float64) if array.dtype.kind in "biuf" else None


def _close(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _informative(want: np.ndarray, atol: float) -> bool:
    """Whether `want` has enough distinct nonzero entries that a transformation matching it is no coincidence."""
    nonzero = np.abs(want) > max(atol, 1e-12)
    return int(nonzero.sum()) >= 2 and len(np.unique(np.round(want[nonzero], 9))) >= 2


def _shape(shape: tuple) -> str:
    return str(tuple(int(d) for d in shape))


def _flat(value: Any) -> np.ndarray | None:
    """All numbers of a tensor or a nest of tensors in one float64 vector; None if not numeric."""
    items = _items(value)
    if items is not None:
        parts = [_flat(v) for v in items]
        return None if any(p is None for p in parts) else np.concatenate(parts) if parts else np.zeros(0)
    array = _array(value)
    return None if array is None else array.ravel()


def _same_structure(expected: Any, actual: Any) -> bool:
    want, got = _items(expected), _items(actual)
    if want is not None or got is not None:
        return want is not None and got is not None and len(want) == len(got) and all(
            _same_structure(e, a) for e, a in zip(want, got))
    want, got = _array(expected), _array(actual)
    return want is not None and got is not None and want.shape == got.shape


def ratio_of(expected: Any, actual: Any, rtol: float = RTOL, atol: float = ATOL) -> float | None:
    """The k with `actual` == k * `expected` everywhere (zeros included), when that is established: the
    same structure and at least two nonzero entries to compare (one number is always a multiple of
    another); None otherwise, and for k = 1 or 0."""
    want, got = _flat(expected), _flat(actual)
    if want is None or got is None or not _same_structure(expected, actual):
        return None
    nonzero = np.abs(want) > max(atol, 1e-12)
    if nonzero.sum() < 2 or not np.all(np.isfinite(got)):
        return None
    ratio = float(np.median(got[nonzero] / want[nonzero]))
    if not np.isfinite(ratio) or abs(ratio - 1) < 1e-3 or abs(ratio) < 1e-6:
        return None
    return ratio if np.allclose(got, ratio * want, rtol=max(rtol, 1e-6), atol=atol) else None


def _factor_note(ratio: float, expected: Any) -> str:
    """What a factor of `ratio` points to, when it is the size of an axis of the answer (a batch, a count)."""
    sizes = set()
    for item in _items(expected) or [expected]:
        array = _array(item)
        sizes |= {int(d) for d in (array.shape if array is not None else ()) if d > 1}
    for size in sorted(sizes):
        if abs(ratio - size) <= 1e-6 * size or abs(ratio - 1 / size) <= 1e-6 / size:
            return (f" {size} is the size of an axis of the answer: a sum where a mean is asked (or the reverse) "
                    "gives that factor.")
    if min(abs(ratio - 2), abs(ratio - 0.5)) < 1e-6:
        return " Look for a dropped or extra `2` (or `0.5`)."
    if abs(ratio) > 1 and abs(ratio - round(ratio)) < 1e-6:  # a whole factor: a count of values is the usual one
        return (f" Look for what multiplies your result by {ratio:g}: a sum where a mean is asked multiplies it by "
                "the number of values summed.")
    return f" Look for what multiplies your result by {ratio:.4g}."


def _scalar_ratio(expected: Any, actual: Any, atol: float) -> float | None:
    """-1 when one nonzero number is exactly the right one negated. Any other multiple of a single number says
    nothing (a wrong item that equals another item's right value is often 2 or 1/2 of it)."""
    want, got = _array(expected), _array(actual)
    if want is None or got is None or want.size != 1 or got.size != 1 or abs(float(want.ravel()[0])) <= atol:
        return None
    return -1.0 if abs(float(got.ravel()[0]) / float(want.ravel()[0]) + 1) < 1e-6 else None


def _scaled(expected, actual, name, rtol, atol):
    ratio = ratio_of(expected, actual, rtol, atol)
    if ratio is None:
        ratio = _scalar_ratio(expected, actual, atol)
    if ratio is None:
        return None
    if abs(ratio + 1) < 1e-6:
        every = ", on every entry" if _flat(expected).size > 1 else ""
        return ("sign-flipped", f"{_q(name)} is the right value with the opposite sign{every}. Check each "
                "minus sign on the way: `y - pred` against `pred - y`, `assign_sub` against `assign_add`, a `-` "
                "left in the formula.")
    whose = f"The values of {_q(name)}" if name else "Your values"
    return ("constant-factor", f"{whose} are all {ratio:.4g} times the right ones.{_factor_note(ratio, expected)}")


def _zero(want, got, name, rtol, atol):
    """`got` is exactly zero everywhere where the right value is not: nothing flows back to the source."""
    if want.shape != got.shape or np.any(got != 0) or not _informative(want, atol):
        return None
    return ("zero-gradient", f"{_q(name)} is exactly zero everywhere, where the right value is not: no change of the "
            "source reaches the target along the recorded path. A `tf.stop_gradient`, a rounding, or a value the "
            "target does not depend on gives exactly zero; look at each operation between source and target.")


def _permuted(want, got, name, rtol, atol):
    if want.ndim < 2 or want.ndim > _MAX_PERMUTED_RANK or got.size != want.size or not _informative(want, atol):
        return None
    for perm in itertools.permutations(range(want.ndim)):
        if perm == tuple(range(want.ndim)):
            continue
        candidate = np.transpose(want, perm)
        if _close(candidate, got, rtol, atol) and not _close(candidate, want, rtol, atol):
            if want.ndim == 2:
                return ("transposed", f"{_q(name)} is the transpose of the right matrix (shape {_shape(got.shape)} "
                        f"instead of {_shape(want.shape)}). Check the order of a matrix product, a `tf.transpose`, "
                        "or which axis holds what.")
            return ("permuted-axes", f"{_q(name)} has the right numbers with the axes in the order {list(perm)} of "
                    f"the right ones (shape {_shape(got.shape)} instead of {_shape(want.shape)}). Check `perm`, "
                    "a transpose, or the order of a matrix product.")
    return None


def _unit_axis(want, got, name, rtol, atol):
    if got.size != want.size or got.shape == want.shape:
        return None
    if [d for d in got.shape if d != 1] != [d for d in want.shape if d != 1]:
        return None
    if not _close(want.reshape(got.shape), got, rtol, atol):
        return None
    change = "added" if got.ndim > want.ndim else "dropped"
    return ("extra-axis", f"{_q(name)} holds the right numbers with an axis of size 1 {change} (shape "
            f"{_shape(got.shape)} instead of {_shape(want.shape)}). Look for a `keepdims=True`, an `[..., None]`, "
            "a `reshape` or a missing `squeeze`.")


def _reduced_away(want, got, name, rtol, atol):
    """`got` is `want` summed or averaged over one of its axes: an axis that should be kept was reduced."""
    if got.ndim >= want.ndim or want.ndim == 0:
        return None
    for axis in range(want.ndim):
        if want.shape[axis] < 2:
            continue
        for how, reduce in (("summed", np.sum), ("averaged", np.mean)):
            candidate = reduce(want, axis=axis)
            if candidate.shape == got.shape and _close(candidate, got, rtol, atol) and _informative(candidate, atol):
                return ("missing-axis", f"{_q(name)} is the right value {how} over its axis {axis} (of size "
                        f"{want.shape[axis]}): shape {_shape(got.shape)} instead of {_shape(want.shape)}. That axis "
                        "should be kept: reduce only over the others (or not at all), or ask for one value per "
                        "entry (`tape.jacobian`, `batch_jacobian`).")
    return None


def _unreduced(want, got, name, rtol, atol):
    """`got` has extra axes, and summing (or averaging) over them gives `want`: a reduction left out."""
    extra = got.ndim - want.ndim
    if extra < 1 or got.shape[extra:] != want.shape and got.shape[:want.ndim] != want.shape:
        return None
    leading = got.shape[extra:] == want.shape
    axes = tuple(range(extra)) if leading else tuple(range(want.ndim, got.ndim))
    for how, reduce in (("sum", np.sum), ("mean", np.mean)):
        candidate = reduce(got, axis=axes)
        if _close(candidate, want, rtol, atol) and _informative(want, atol):
            return ("not-reduced", f"{_q(name)} has shape {_shape(got.shape)} where {_shape(want.shape)} is asked, "
                    f"and the {how} over its axes {list(axes)} is exactly the right value: one value per output (a "
                    f"Jacobian) where their {how} (a gradient) is asked, or a reduction left out. Reduce over "
                    f"those axes, or differentiate the scalar {'sum' if how == 'sum' else 'mean'} with `gradient`.")
    return None


def _full_jacobian(want, got, name, rtol, atol):
    """`want` is a batch Jacobian (B, ..., I...) and `got` the full Jacobian (B, ..., B, I...) with it on its
    diagonal: `jacobian` where `batch_jacobian` is asked."""
    if want.ndim < 2 or got.ndim != want.ndim + 1:
        return None
    batch = want.shape[0]
    for split in range(1, want.ndim):
        if got.shape != want.shape[:split] + (batch,) + want.shape[split:]:
            continue
        diagonal = np.stack([np.take(got[b], b, axis=split - 1) for b in range(batch)])
        if _close(diagonal, want, rtol, atol):
            return ("full-jacobian", f"{_q(name)} has shape {_shape(got.shape)}: the full Jacobian, which pairs every "
                    f"example with every other, where the per-example one of shape {_shape(want.shape)} is asked. "
                    "Its diagonal blocks are the right values: use `tape.batch_jacobian(y, x)`.")
    return None


_ARRAY_CHECKS: tuple[Callable, ...] = (_zero, _permuted, _unit_axis, _full_jacobian, _reduced_away, _unreduced)


def _items(value: Any) -> list | None:
    if isinstance(value, dict):
        return [value[k] for k in sorted(value)]
    return list(value) if isinstance(value, (list, tuple)) else None


def _summed(want: list, actual: Any, name, rtol, atol):
    """`actual` (one tensor, or its items stacked) is the sum of the right items: the gradient of a list of
    targets, which `gradient` sums, where one gradient per target is asked."""
    arrays = [_array(w) for w in want]
    if any(a is None for a in arrays) or len({a.shape for a in arrays}) != 1 or len(arrays) < 2:
        return None
    items = _items(actual)
    parts = [_array(i) for i in items] if items is not None else [_array(actual)]
    if any(part is None for part in parts) or len({part.shape for part in parts}) != 1:
        return None
    got = np.stack(parts) if items is not None else parts[0]
    total = np.sum(arrays, axis=0)
    if got is None or got.shape != total.shape or not _close(total, got, rtol, atol) or not _informative(total, atol):
        return None
    return ("wrong-target", f"{_q(name)} holds the sum of the right items: `gradient` of a list of targets "
            "differentiates their sum. Ask for each target's gradient in its own call (a persistent tape answers "
            "several).")


def _nest(expected, actual, name, rtol, atol):
    want = _items(expected)
    summed = _summed(want, actual, name, rtol, atol) if want is not None else None
    if summed:
        return summed
    got = _items(actual)
    if want is None or got is None or len(want) != len(got) or len(want) < 2:
        return None
    distinct = not any(agrees(a, b, rtol, atol) for a, b in itertools.combinations(want, 2))
    if distinct and all(agrees(want[0], g, rtol, atol) for g in got):
        return ("first-source-only", f"Every item of {_q(name, False)} is the first item's right value: the "
                "first result given for every item. Compute each item on its own (for gradients, one per source "
                "or per target: `tape.gradient(loss, [a, b])` gives one per source), and return them in order.")
    if distinct:
        for order in itertools.permutations(range(len(want))):
            if order != tuple(range(len(want))) and all(agrees(want[i], g, rtol, atol) for i, g in zip(order, got)):
                return ("swapped-results", f"{_q(name)} has the right items in another order ({list(order)} of the "
                        "right order). Return them in the order the task lists them.")
    wrong = [i for i, (w, g) in enumerate(zip(want, got)) if not agrees(w, g, rtol, atol)]
    if len(wrong) >= 1:
        key = sorted(expected)[wrong[0]] if isinstance(expected, dict) else wrong[0]
        found = structural(want[wrong[0]], got[wrong[0]], f"{name or 'your answer'}[{key!r}]", rtol, atol)
        if found is not None:
            return found
    return None


def _checks(expected: Any, actual: Any, name: str, rtol: float, atol: float) -> Iterator[tuple[str, str]]:
    scaled = _scaled(expected, actual, name, rtol, atol)
    if scaled:
        yield scaled
    if _items(expected) is not None:
        found = _nest(expected, actual, name, rtol, atol)
        if found:
            yield found
        return
    want, got = _array(expected), _array(actual)
    if want is None or got is None or not np.all(np.isfinite(want)):
        return
    for check in _ARRAY_CHECKS:
        found = check(want, got, name, rtol, atol)
        if found:
            yield found


def structural(expected: Any, actual: Any, name: str | None = None, rtol: float = RTOL,
               atol: float = ATOL) -> tuple[str, str] | None:
    """(cause code, what to tell the student) for the first structural mistake that turns `expected` into
    `actual` on every entry, or None. `name` is how the message calls the value (None: "your answer")."""
    if agrees(expected, actual, rtol, atol):
        return None
    try:
        return next(_checks(expected, actual, name, rtol, atol), None)
    except (TypeError, ValueError, FloatingPointError):  # a value of a kind no family applies to: no diagnosis
        return None


def _coefficient(k: float) -> str:
    return f"{k:.4g}"


def combination(terms: dict[str, Any], expected: dict[str, float], actual: Any, what: str,
                rtol: float = RTOL, atol: float = ATOL, rate: float | None = None) -> tuple[str, str] | None:
    """(cause, message) when `actual` is exactly sum(k_i * term_i) for coefficients other than `expected`'s: which
    term is left out, which lacks the learning rate, which has the wrong sign. `terms` are the task's own named
    quantities (e.g. `dloss_dx`, `dpenalty_dx`) and `expected` their coefficients in the right answer (e.g. `lr`
    each); `what` names `actual` ("your step"). None when the terms are not independent here or no exact
    combination gives `actual`. With the learning `rate`, a term whose coefficient is its expected one without the
    rate (1 without a rate given) is named as not multiplied by it."""
    names = list(terms)
    basis = np.stack([np.asarray(_array(terms[n]), np.float64).ravel() for n in names], axis=1)
    got = _array(actual)
    if got is None or got.size != basis.shape[0] or np.linalg.matrix_rank(basis) < len(names):
        return None
    got = got.ravel()
    found, *_ = np.linalg.lstsq(basis, got, rcond=None)
    if not np.allclose(basis @ found, got, rtol=rtol, atol=atol):
        return None
    found = [0.0 if abs(k) < 1e-4 else float(k) for k in found]
    want = [expected[n] for n in names]
    if all(abs(k - w) <= 1e-3 * max(1.0, abs(w)) for k, w in zip(found, want)):
        return None
    formula = " + ".join(f"{_coefficient(k)} * `{n}`" for k, n in zip(found, names) if k)
    right = " + ".join(f"{_coefficient(w)} * `{n}`" for w, n in zip(want, names))
    said = f"{what.capitalize()} is {formula or '0'}, where the task's is {right}"
    missing = [n for k, w, n in zip(found, want, names) if k == 0 and w]
    if missing:
        return ("missing-term", f"{said}: it leaves out {', '.join(f'`{n}`' for n in missing)}.")
    flipped = [n for k, w, n in zip(found, want, names) if w and abs(k + w) <= 1e-3 * abs(w)]
    if flipped:
        return ("sign-flipped", f"{said}: {', '.join(f'`{n}`' for n in flipped)} enters with the opposite sign.")
    bare = [1.0 if rate is None else w / rate for w in want]  # each coefficient without the learning rate
    unscaled = [n for k, w, b, n in zip(found, want, bare, names)
                if abs(w - b) > 1e-3 * max(1.0, abs(b)) and abs(k - b) <= 1e-3 * max(1.0, abs(b))]
    if unscaled:
        return ("no-learning-rate", f"{said}: {', '.join(f'`{n}`' for n in unscaled)} is not multiplied by the "
                "learning rate.")
    return None


def one_sided(derivative: Callable[[float], float], x: float, actual: Any, what: str,
              rtol: float = 1e-3) -> tuple[str, str] | None:
    """(cause, message) when `actual` is a one-sided difference of `derivative` at `x` with a step of a power of
    ten (0.1 down to 1e-6): a finite difference where the exact derivative (or a central difference) is asked.
    The tolerance allows for a student's float32 arithmetic; a decade step and one side are specific enough
    that the match is no coincidence."""
    got = _array(actual)
    if got is None or got.size != 1:
        return None
    value = float(got.ravel()[0])
    for k in range(1, 7):
        h = 10.0 ** -k
        for side, estimate in (("forward", (derivative(x + h) - derivative(x)) / h),
                               ("backward", (derivative(x) - derivative(x - h)) / h)):
            if np.isclose(value, estimate, rtol=rtol, atol=1e-9):
                return ("forward-difference", f"{what} is the {side} difference of the first derivative with step "
                        f"h = {h:g}, which is off by about h times the next derivative. Differentiate the first "
                        "derivative with the outer tape instead.")
    return None
