"""Exercises of notebook 01_basic_tape: first gradients, several sources, non-scalar targets,
and a finite-difference check."""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from tapelab.alternatives import Alternative, wrong_value
from tapelab.compare import allclose, fmt, mismatch
from tapelab.exercise import Exercise
from tapelab.feedback import Incorrect
from tapelab.mistakes import none_feedback
from tapelab.oracle import numeric_gradient

__all__ = ["ex1_1", "ex1_2", "ex1_3", "ex1_4"]


def _require_tape(exercise: Exercise, facts) -> None:
    if facts.found and facts.tapes == 0:
        raise Incorrect(
            f"Exercise {exercise.number}: your numbers are right, but this exercise is about the tape. "
            "Compute them with `tf.GradientTape()` rather than by hand.", cause="no-tape-used")


def _cubic(x):
    return 3 * x**3 - 2 * x**2 + x


class CubicSlope(Exercise):
    number = "1.1"
    answer = "cubic_slope"
    visible_cases = (2.0,)
    praise = "the tape recorded the polynomial and gave its slope."
    hints = (
        "Make `x` a `tf.Variable` so that the tape watches it without being asked.",
        "Compute `y = 3 * x**3 - 2 * x**2 + x` inside `with tf.GradientTape() as tape:`.",
        "After the `with` block, `return tape.gradient(y, x)`.",
    )
    solution_code = """
def cubic_slope(x):
    x = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = 3 * x**3 - 2 * x**2 + x
    return tape.gradient(y, x)
"""
    why = ("The tape records every operation on the watched variable `x` while the `with` block runs, "
           "so `tape.gradient(y, x)` can replay them backwards to get dy/dx.")

    def check_case(self, fn, x, facts):
        got = self.call(fn, x, shown=f"x={x}").value
        expected = numeric_gradient(_cubic, x)
        if got is None:
            raise none_feedback(f"`cubic_slope({x})` returned `None`.", facts, facts.returned_call(), {"x": "constant"})
        problem = wrong_value(f"cubic_slope({x})", expected, got, [
            Alternative("the polynomial's value", _cubic(x), "returned-value",
                        "You returned `y` itself, not its gradient: return `tape.gradient(y, x)`.")])
        if problem:
            raise problem
        _require_tape(self, facts)


def _layer_case(spec):
    """(x, w, b) for a case: the notebook's worked example, or (batch, n_in, n_out, seed)."""
    if spec == "worked":
        return np.array([[1.0, 2.0, 3.0]]), np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), np.zeros(2)
    batch, n_in, n_out, seed = spec
    rng = np.random.default_rng(seed)
    return rng.normal(size=(batch, n_in)), rng.normal(size=(n_in, n_out)), rng.normal(size=n_out)


class LossGradients(Exercise):
    number = "1.2"
    answer = "loss_gradients"
    visible_cases = ("worked",)
    praise = "one `gradient` call with a list of sources gave a list of gradients, each shaped like its source."
    hints = (
        "`tape.gradient` accepts a list of sources and returns a list of gradients in the same order.",
        "Inside the tape: `y = x @ w + b` and `loss = tf.reduce_mean(y ** 2)`.",
        "`return tape.gradient(loss, [w, b])`: one call, both gradients, each shaped like its source.",
    )
    solution_code = """
def loss_gradients(x, w, b):
    with tf.GradientTape() as tape:
        y = x @ w + b
        loss = tf.reduce_mean(y**2)
    return tape.gradient(loss, [w, b])
"""
    why = ("A list of sources gives a list of gradients in the same order, each with its source's shape, "
           "from a single backward pass; a second `gradient` call would find the tape already released.")

    def check_case(self, fn, spec, facts):
        x, w, b = _layer_case(spec)
        args = (tf.constant(x, tf.float32), tf.Variable(w, dtype=tf.float32), tf.Variable(b, dtype=tf.float32))
        shown = f"x of shape {x.shape}, w {w.shape}, b {b.shape}"
        got = self.call(fn, *args, shown=shown).value
        dl_dw = numeric_gradient(lambda w_: np.mean((x @ w_ + b) ** 2), w)
        dl_db = numeric_gradient(lambda b_: np.mean((x @ w + b_) ** 2), b)
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            raise Incorrect(mismatch([dl_dw, dl_db], got, "loss_gradients(...)") or
                            "`loss_gradients` should return a list `[dl_dw, dl_db]`.")
        for i, name in enumerate(("dl_dw", "dl_db")):
            if got[i] is None:
                raise none_feedback(f"`{name}` is `None`.", facts, facts.returned_call(i),
                                    {"x": "constant", "w": "variable", "b": "variable"})
        if allclose(dl_db, got[0]) and allclose(dl_dw, got[1]):
            raise Incorrect("Your gradients are right but swapped: return them in the order of the sources, "
                            "`tape.gradient(loss, [w, b])` gives `[dl_dw, dl_db]`.", cause="swapped-results")
        ones = np.ones((x.shape[0], w.shape[1]))  # d sum(y) / dy: the prediction as the target
        of_prediction = (x.T @ ones, ones.sum(axis=0))
        for name, expected, value, wrong in zip(("dl_dw", "dl_db"), (dl_dw, dl_db), got, of_prediction):
            problem = wrong_value(name, expected, value, [Alternative(
                "the prediction's gradient", wrong, "wrong-target",
                "These are the gradients of the prediction `y = x @ w + b`, not of the `loss`. "
                "Did you pass `loss` as the target?")])
            if problem:
                raise problem
        _require_tape(self, facts)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


class SigmoidSlopes(Exercise):
    number = "1.3"
    answer = "sigmoid_slopes"
    visible_cases = ((-1.0, 0.0, 2.0),)
    praise = "a non-scalar target is summed, and each output depends on one input, so you got every slope at once."
    hints = (
        "`x` is a constant: the tape will not follow it unless you ask.",
        "Call `tape.watch(x)` first thing inside the `with` block, then `y = tf.sigmoid(x)`.",
        "`tape.gradient(y, x)` differentiates `sum(y)`; since `y[i]` depends only on `x[i]`, that is each slope.",
    )
    solution_code = """
def sigmoid_slopes(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sigmoid(x)
    return tape.gradient(y, x)
"""
    why = ("Constants are only recorded after `tape.watch`, and a vector target is differentiated as its sum, "
           "which for an elementwise function gives every element's own slope.")

    def check_case(self, fn, values, facts):
        x = tf.constant(values, tf.float32)
        got = self.call(fn, x, shown=f"x={fmt(x)}").value
        s = _sigmoid(np.array(values, np.float64))
        expected = s * (1 - s)
        if got is None:
            raise none_feedback("`sigmoid_slopes` returned `None`.", facts, facts.returned_call(), {"x": "constant"})
        problem = wrong_value("sigmoid_slopes(x)", expected, got, [
            Alternative("the sigmoid's value", s, "returned-value", "You returned the sigmoid itself, not its gradient."),
            Alternative("the slopes of the mean", expected / len(values), "mean-target",
                        "Did you differentiate `tf.reduce_mean(y)`? The tape already sums a non-scalar target: "
                        "pass `y` itself.")])
        if problem:
            raise problem
        _require_tape(self, facts)


_DEFAULT_H = 1e-3  # the default of `central_difference`'s `h` in the notebook
_FUNCTIONS = {"sin": np.sin, "cube": lambda x: x**3, "exp": np.exp, "cubic": _cubic, "tanh": np.tanh}


class CentralDifference(Exercise):
    number = "1.4"
    answer = "central_difference"
    visible_cases = (("cube", -1.5, 1e-2),)  # not the default h: a hard-coded step must fail here
    praise = "a central difference is accurate to O(h^2), good enough to check a tape gradient."
    hints = (
        "Evaluate `f` once on each side of `x`, at `x + h` and at `x - h`.",
        "The two points are `2 * h` apart, so divide their difference by `2 * h`.",
        "`return (f(x + h) - f(x - h)) / (2 * h)`",
    )
    solution_code = """
def central_difference(f, x, h=1e-3):
    return (f(x + h) - f(x - h)) / (2 * h)
"""
    why = "Averaging the slopes on both sides of `x` cancels the error term in h, leaving an O(h^2) error."

    def check_case(self, fn, case, facts):
        name, x, h = case
        f = _FUNCTIONS[name]
        got = self.call(fn, f, x, h, shown=f"f={name}, x={x}, h={h}").value
        expected = (f(x + h) - f(x - h)) / (2 * h)
        if got is None:
            raise Incorrect("`central_difference` returned `None`. Did you forget `return`?",
                            cause="no-return" if facts.found and not facts.returns else None)
        problem = wrong_value(f"central_difference({name}, {x}, {h})", expected, got, [
            Alternative("the forward difference", (f(x + h) - f(x)) / h, "forward-difference",
                        "That is the forward difference `(f(x + h) - f(x)) / h`, accurate only to O(h). "
                        "Step to both sides of `x`."),
            Alternative("the backward difference", (f(x) - f(x - h)) / h, "forward-difference",
                        "That is the backward difference `(f(x) - f(x - h)) / h`, accurate only to O(h). "
                        "Step to both sides of `x`."),
            Alternative("a division by h", 2 * expected, "constant-factor",
                        "You divided by `h`, but `x + h` and `x - h` are `2 * h` apart: divide by `2 * h`."),
            Alternative("a / 2 * h", expected * h * h, "constant-factor",
                        "That is the difference divided by 2 and then multiplied by `h`: `a / 2 * h` means "
                        "`(a / 2) * h`. Write `/ (2 * h)`."),
            Alternative("the default step", (f(x + _DEFAULT_H) - f(x - _DEFAULT_H)) / (2 * _DEFAULT_H), "ignored-step",
                        f"That is the central difference with the default step `h={_DEFAULT_H}`, not the `h={h}` "
                        "you were given. Did you use the `h` you were given, in both evaluations and the division?"),
        ], rtol=1e-6, atol=1e-9)
        if problem:
            raise problem


ex1_1 = CubicSlope()
ex1_2 = LossGradients()
ex1_3 = SigmoidSlopes()
ex1_4 = CentralDifference()
