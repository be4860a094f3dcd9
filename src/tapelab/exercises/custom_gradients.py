"""Exercise 5.6 of notebook 05_debugging_none: a log-sigmoid whose value and gradient stay finite, with
`tf.custom_gradient`, checked against float64 values and a float64 numeric gradient (Exercise 1.4's idea)."""
from __future__ import annotations

import ast

import numpy as np
import tensorflow as tf

from tapelab.checker.compare import fmt, to_numpy
from tapelab.checker.departure import function_node
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.checker.oracle import numeric_gradient
from tapelab.checker.variants import Space
from tapelab.checker.wrong_answers import Alternative, wrong_value

__all__ = ["ex5_6"]

_SCALES = (0.5, 1.5, 3, 4)  # drawn scales k of log σ(k·x); the text's is 2, and 1 would hide a dropped k


def _log_sigmoid(z: np.ndarray) -> np.ndarray:
    """log σ(z) in float64, finite for every finite z."""
    return -np.logaddexp(0.0, -z)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """σ(z) in float64 without overflow."""
    return np.exp(_log_sigmoid(z))


def _uses_custom_gradient(fn) -> bool:
    """Whether `fn` is what `tf.custom_gradient` returns, or its source names `custom_gradient` (a decorator, a
    call, a nested function): the exercise is about writing the gradient, not leaving it to autodiff."""
    if hasattr(fn, "__wrapped__") and type(fn).__name__ == "Bind":
        return True
    node = function_node(fn)
    return node is not None and any(isinstance(n, (ast.Name, ast.Attribute)) and
                                    (getattr(n, "id", None) or getattr(n, "attr", None)) == "custom_gradient"
                                    for n in ast.walk(node))


def _epsilon_floors(z: np.ndarray, y, k) -> list[Alternative]:
    """log(σ(z) + ε) and log(max(σ(z), ε)), with ε read off the student's own value at the most negative z: the
    small constant that keeps a log finite also stops it at log ε, where log σ(z) goes on falling like z."""
    try:
        floor = float(to_numpy(y).astype(np.float64).reshape(z.shape)[np.argmin(z)])
    except (TypeError, ValueError):
        return []
    if not (np.isfinite(floor) and floor < -3.0 and _log_sigmoid(z.min()) < floor - 1.0):
        return []
    eps = float(np.exp(floor))
    said = (f"log σ({k}x) with ε = {eps:.1g} kept inside the log: it stays finite, but stops at log ε = {floor:.4g} "
            f"where log σ({k}x) goes on falling like {k}x ({_log_sigmoid(z.min()):.4g} at the smallest x). Compute "
            "log σ exactly instead, as min(z, 0) − log(1 + e^(−|z|)).")
    return [Alternative("log(σ(kx) + ε)", np.log(_sigmoid(z) + eps), "epsilon-in-log", f"That is {said}"),
            Alternative("log(max(σ(kx), ε))", np.log(np.maximum(_sigmoid(z), eps)), "epsilon-in-log",
                        f"That is σ clipped at ε, {said}")]


class StableLogSigmoid(Exercise):
    number = "5.6"
    replayable = True
    answer = "log_sigmoid"
    # The scale k inside log σ(k·x) (2 in the text): the gradient's chain-rule factor, so that a k left out of
    # the backward function shows on every variant.
    space = Space(default={"k": 2}, draws={"k": lambda rng: _SCALES[int(rng.integers(len(_SCALES)))]})
    statement = ("Write `log_sigmoid(x)`, decorated with `@tf.custom_gradient`, that takes a 1-D float32 tensor `x` "
                 "and returns log σ(${k}x) elementwise, together with its backward function. Both must stay finite "
                 "for every x, from −1000 to 1000: the value is about ${k}x for large negative x, not `-inf`, and the "
                 "gradient is never NaN. The test differentiates your function with upstream gradients other than "
                 "1, and compares with a float64 numeric gradient.")
    # (points, upstream gradients): the extremes overflow the naive formula; x = 0 is where autodiff of a
    # formula with `minimum` and `abs` picks one side of a kink.
    visible_cases = (((-200.0, -3.0, 0.0, 2.5, 200.0), (1.0, 2.0, -1.0, 0.5, 3.0)),)
    praise = "finite everywhere, value and gradient, and your backward function passes the upstream gradient on."
    hints = (
        "log σ(z) = −log(1 + e^(−z)) overflows for large negative z. Split by sign: for z < 0 write it as "
        "z − log(1 + e^z), so that the exponential you take is never of a large positive number. Both forms "
        "are min(z, 0) − log(1 + e^(−|z|)): `tf.minimum`, `tf.abs` and `tf.math.log1p` write it without an `if`.",
        "d/dz log σ(z) = 1 − σ(z) = σ(−z), and z = ${k}x adds the chain-rule factor ${k}. Inside, define "
        "`def backward(dy):` that returns `dy * ${k} * tf.sigmoid(-z)`, and return `value, backward`.",
    )

    def check_case(self, fn, case, facts):
        points, upstream = (np.array(c, np.float64) for c in case)
        k = self.variant["k"]
        x, dy = tf.constant(points, tf.float32), tf.constant(upstream, tf.float32)
        shown = f"x={fmt(points)}"

        def forward_and_back():
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = fn(x)
            return y, tape.gradient(y, x, output_gradients=dy) if y is not None else None

        try:
            y, grad = self.run(forward_and_back, f"Calling `log_sigmoid({shown})` and differentiating it").value
        except Incorrect as error:
            if error.cause is None and "unpack" in str(error) and _uses_custom_gradient(fn):
                raise Incorrect(f"{error.observed or error} A function decorated with `@tf.custom_gradient` must "
                                "return two things, the value and its backward function: `return value, backward`, "
                                "with `def backward(dy):` defined inside it.", cause="custom-gradient-return") from None
            raise
        z = k * points
        problem = wrong_value(f"log_sigmoid({shown})", _log_sigmoid(z), y, [
            Alternative("log σ(x) without the scale", _log_sigmoid(points), "missing-term",
                        f"That is log σ(x): the scale {k} inside is missing. Compute `z = {k} * x` first."),
            Alternative("log σ(−kx)", _log_sigmoid(-z), "wrong-target",
                        f"That is log σ(−{k}x) = log(1 − σ({k}x)). Did you flip the sign of `z`?"),
            *_epsilon_floors(z, y, k)],
            otherwise=f"Is it log σ({k}x), elementwise?")
        self._raise_non_finite(problem, y, points, "value")
        if grad is None:
            raise Incorrect(f"The gradient of `log_sigmoid({shown})` with respect to `x` is `None`: nothing recorded "
                            "connects the value to `x`. Did your backward function return `None`, or did the value "
                            "go through NumPy?", cause="not-connected")
        expected = numeric_gradient(lambda p: float(np.sum(upstream * _log_sigmoid(k * p))), points)
        rough = self._autodiff_of_kinks(x, dy)
        problem = wrong_value(f"the gradient of log_sigmoid({shown})", expected, grad, [
            Alternative("the upstream gradient ignored", k * _sigmoid(-z), "upstream-ignored",
                        "That is the local derivative alone: your backward function ignores the upstream gradient it "
                        "is given. The test passes upstream gradients other than 1 (as any loss after your function "
                        f"does); multiply by it: `dy * {k} * tf.sigmoid(-z)`."),
            Alternative("the scale left out", upstream * _sigmoid(-z), "missing-local-derivative",
                        f"That is σ(−z) without the chain-rule factor {k}: z = {k}x, so dz/dx = {k} multiplies "
                        "the derivative."),
            Alternative("σ(z) instead of 1 − σ(z)", upstream * k * _sigmoid(z), "wrong-target",
                        f"That is {k}·σ({k}x), the derivative of log(1 + e^({k}x)) (the section's `log1pexp`), not "
                        "of log σ: d/dz log σ(z) = 1 − σ(z) = σ(−z)."),
            Alternative("autodiff through minimum and abs", rough, "no-custom-gradient",
                        "That is what autodiff gives for `tf.minimum(z, 0.0) - tf.math.log1p(tf.exp(-tf.abs(z)))`: "
                        "at z = 0 it takes one side of each kink (dz from `minimum`, 0 from `abs`), so the slope is "
                        f"{k:g}, not {k / 2:g}. Write the gradient yourself in a backward function returned with "
                        "the value.")],
            otherwise=f"Is it the upstream gradient times d/dx log σ({k}x)?")
        self._raise_non_finite(problem, grad, points, "gradient")
        if not _uses_custom_gradient(fn):
            raise Incorrect("Your values and gradients are right, but the task asks you to write the gradient with "
                            "`@tf.custom_gradient`; yours comes from autodiff of a stable formula. Decorate "
                            "`log_sigmoid` and return the value with its backward function.",
                            cause="no-custom-gradient")

    @staticmethod
    def _raise_non_finite(problem: Incorrect | None, value, points, what: str) -> None:
        """Raise `problem`; when it names no cause and the student's `value` is NaN or infinite where the answer
        is finite, with that named: the overflow the task is about."""
        if problem is None:
            return
        try:
            got = to_numpy(value).astype(np.float64)
        except (TypeError, ValueError):
            raise problem from None
        if problem.cause is not None or got.shape != points.shape or np.isfinite(got).all():
            raise problem
        at = ", ".join(f"x = {p:g}" for p in points[~np.isfinite(got)])
        said = str(problem).replace(" No known mistake gives exactly these values.", "")
        raise Incorrect(f"{said} Your {what} is not finite at {at}. In float32, `tf.sigmoid(z)` is 0 below about −88 "
                        "and e^z overflows above about 88: log(σ(z)), or an exponential of a large positive number, "
                        "gives `-inf` or `inf`, and 0 · inf or inf / inf in a gradient gives NaN. Keep every "
                        "exponential's argument at most 0 (`tf.exp(-tf.abs(z))`).",
                        cause="non-finite-value" if what == "value" else "non-finite-gradient")

    def _autodiff_of_kinks(self, x, dy):
        """The gradient autodiff gives for the min/abs form of log σ(kx): wrong only at x = 0."""
        with tf.GradientTape() as tape:
            tape.watch(x)
            z = self.variant["k"] * x
            y = tf.minimum(z, 0.0) - tf.math.log1p(tf.exp(-tf.abs(z)))
        return tape.gradient(y, x, output_gradients=dy).numpy().astype(np.float64)


ex5_6 = StableLogSigmoid()
