"""The "predict, then run" questions of 05_debugging_none (tapelab.checker.predictions), one for each teaching
section without an exercise; section 11's is asked before its widget, the None-gradient map, is opened. Each
misconception tests the consequence of its belief on the guess itself: a None where TensorFlow gives a number, a
number where it gives None, the option the belief picks, the value it computes."""
from __future__ import annotations

import math

from tapelab.checker.predictions import Misconception, Question

__all__ = ["q5_1", "q5_2", "q5_3", "q5_5", "q5_6", "q5_9", "q5_11"]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _entries(guess, truth) -> list:
    """The guess as a list as long as the truth's (a ValueError otherwise: not this belief's form)."""
    if not isinstance(guess, (list, tuple)) or len(guess) != len(truth):
        raise ValueError("another form")
    return list(guess)


# 1. The checklist: loss = sum(cast(w > 0.5, float32) * w) at w = [0.3, 0.9]; the truth is the mask, [0, 1].
q5_1 = Question("5.1", misconceptions=[
    Misconception("non-differentiable", lambda guess, truth: guess is None,
                  "You predicted `None`, as if the comparison and the cast cut every path from `w`. They cut only "
                  "their own path: `* w` is a second, differentiable path, on which the mask is a constant factor."),
    Misconception("zero-gradient",
                  lambda guess, truth: all((g is None) == (t == 0) for g, t in zip(_entries(guess, truth), truth)),
                  "You predicted `None` for the element the mask zeroes. `None` is for a whole source with no path; "
                  "`w` has one, so its gradient is a tensor, and an element with slope zero gets 0."),
])

# 2. Is the source watched? [dp, dq, dr]: p trainable=False, q.assign(q * 2.0), r = r * 2.0; the truth is
# [None, 18, None].
# What a watched `p` or `r` would get: the product of the other two factors, each 3.0 or, after its doubling, 6.0.
_OTHER_TWO = (9.0, 18.0, 36.0)


def _other_two(value) -> bool:
    return _is_number(value) and any(math.isclose(value, v, rel_tol=1e-3) for v in _OTHER_TWO)


q5_2 = Question("5.2", misconceptions=[
    Misconception("not-trainable", lambda guess, truth: truth[0] is None and _other_two(_entries(guess, truth)[0]),
                  "You gave `p` a gradient. A variable created with `trainable=False` is not watched, so its "
                  "gradient is `None`, even though the loss reads it."),
    Misconception("replaced-by-tensor",
                  lambda guess, truth: truth[1] is not None and _entries(guess, truth)[1] is None,
                  "You gave `q` no gradient, as if `q.assign(...)` replaced it like `r = r * 2.0` does. `assign` "
                  "changes the variable in place, so `q` is still the watched variable."),
    Misconception("replaced-by-tensor",
                  lambda guess, truth: truth[2] is None and _other_two(_entries(guess, truth)[2]),
                  "You gave `r` a gradient. `r = r * 2.0` binds `r` to a new tensor, which the tape does not "
                  "watch; the variable it came from is no longer named `r`."),
])

# 3. Is the loss recorded, and connected? Which loss line gives None: A reads a target computed before the
# tape, B forgets `out`, C multiplies `mean(out)` by the variable `seen` that `assign_add` updated. The truth is "B".
q5_3 = Question("5.3", kind="choice", choices=("A", "B", "C"), misconceptions=[
    Misconception("outside-tape", lambda guess, truth: guess == "A" != truth,
                  "You picked A, whose `target` is computed before the tape. Only the path from `w` to the loss must be "
                  "recorded; `target` comes from constants alone, so computing it outside changes nothing."),
    Misconception("state-change", lambda guess, truth: guess == "C" != truth,
                  "You picked C, which reads the variable `seen`. The path through its `assign_add` is cut, but C also "
                  "reads `out`, and that path from `w` is intact: the gradient exists."),
])

# 5. What the optimizer does with None: [w, b, c] after one SGD step where only c's gradient is None.
START_5 = (1.0, 0.0, 4.0)  # w, b, c before the step, as the notebook creates them
q5_5 = Question("5.5", misconceptions=[
    Misconception("no-gradients",
                  lambda guess, truth: all(math.isclose(g, s, abs_tol=1e-6)
                                           for g, s in zip(_entries(guess, truth), START_5)),
                  "You kept every value as it was, as if one `None` stopped the whole step. The optimizer refuses "
                  "a step only when every gradient is `None`; here it warns, skips `c` and updates `w` and `b`."),
])

# 6. Three probes: the first op enable_check_numerics names for sum(log(root)) at root = [0, 4]; the truth is
# "Log", the forward op (log 0 = -inf), not the backward "Reciprocal" that section 6's sqrt suggests.
q5_6 = Question("5.6", kind="choice", choices=("Log", "Reciprocal", "Sum"), misconceptions=[
    Misconception("non-finite-value", lambda guess, truth: guess == "Reciprocal" != truth,
                  "You expected the first Inf in the backward pass, as with `sqrt`. But `sqrt(0)` is 0, while "
                  "`log(0)` is already `-inf` in the forward pass, so the check stops at `Log` first."),
])

# 9. A custom gradient with a typo (1 / e for 1 / (1 + e)) at x = 0: the tape returns what grad returns, 0.
X_9 = 0.0
q5_9 = Question("5.9", misconceptions=[
    Misconception("wrong-custom-gradient",
                  lambda guess, truth: _is_number(guess) and math.isclose(guess, 1.0 / (1.0 + math.exp(-X_9)),
                                                                          rel_tol=1e-3),
                  "You predicted the true slope of log(1 + eˣ). The tape does not differentiate the forward pass "
                  "of a `tf.custom_gradient` function or check your `grad`: it returns what `grad` returns."),
])


# 11. The None-gradient map, asked before it is opened: with `tf.stop_gradient` around the hidden activations of
# the map's two-layer network, which variables' gradients are None? The stop cuts the path back into the first
# layer only: w1 and b1.
_MAP_CHOICES = ("none", "w1, b1", "w2, b2", "w1, b1, w2, b2")
q5_11 = Question("5.11", kind="choice", choices=_MAP_CHOICES, misconceptions=[
    Misconception("stop-gradient", lambda guess, truth: guess == "w1, b1, w2, b2" and truth == "w1, b1",
                  "You predicted that the stop silences the whole network. It blocks only what flows back through "
                  "it: the output layer's `w2` and `b2` are used after the stop and still get their gradients."),
    Misconception("stop-gradient", lambda guess, truth: guess == "w2, b2" and truth == "w1, b1",
                  "You predicted that the layer after the stop loses its gradients. The backward walk runs from the "
                  "loss towards the inputs: it reaches `w2` and `b2` first and stops at the hidden activations, so "
                  "the layer before them, `w1` and `b1`, gets `None`."),
])
