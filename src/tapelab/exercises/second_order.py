"""Exercises 4.3 and 4.4 of notebook 04_persistent_tapes: nested tapes on cases the demos do not show, a mixed
partial derivative (the outer tape differentiates with respect to another input than the inner one) and the
Hessian of a model's loss with respect to its weights."""
from __future__ import annotations

import numpy as np

from tapelab.checker.compare import fmt, mismatch
from tapelab.checker.differential import one_sided
from tapelab.checker.exercise import Exercise
from tapelab.checker.explanations import none_feedback
from tapelab.checker.messages import Incorrect
from tapelab.checker.variants import Space
from tapelab.checker.wrong_answers import Alternative, wrong_value
from tapelab.exercises.nested_rule import NESTED_REMEDIES, require_nested_tapes

__all__ = ["ex4_3", "ex4_4"]

# ---------------------------------------------------------------- 4.3 mixed partial derivative

_C, _K = (1, 1.5, 2.5, 3), (1.5, 2, 4, 5)  # drawn coefficients; the text has c = 2, k = 3
_TEXT = {"c": 2, "k": 3}
_VISIBLE = (1.2, 0.8)  # (x, a) of the visible check


def _partials(c: float, k: float, x: float, a: float) -> dict[str, float]:
    """The first and second partial derivatives of f(x, a) = c·a²·x³ + k·sin(a·x), in float64."""
    s, co = np.sin(a * x), np.cos(a * x)
    return {"x": 3 * c * a**2 * x**2 + k * a * co, "a": 2 * c * a * x**3 + k * x * co,
            "xa": 6 * c * a * x**2 + k * co - k * a * x * s, "xx": 6 * c * a**2 * x - k * a**2 * s,
            "aa": 2 * c * x**3 - k * x**2 * s}


def _distinct(values) -> bool:
    """No known wrong answer, nor the text's own answer, gives this variant's visible ∂²f/∂a∂x."""
    d = _partials(values["c"], values["k"], *_VISIBLE)
    wrong = (d["x"], d["a"], d["xx"], d["aa"], _partials(_TEXT["c"], _TEXT["k"], *_VISIBLE)["xa"])
    return not any(np.isclose(d["xa"], w, rtol=1e-3, atol=1e-3) for w in wrong)


class MixedPartial(Exercise):
    number = "4.3"
    replayable = True
    remedies = NESTED_REMEDIES
    answer = "mixed_partial"
    # The coefficients c and k of f(x, a) = c·a²·x³ + k·sin(a·x) (2 and 3 in the text).
    space = Space(default=_TEXT, draws={"c": lambda rng: _C[int(rng.integers(len(_C)))],
                                        "k": lambda rng: _K[int(rng.integers(len(_K)))]},
                  allowed=_distinct)
    statement = ("Write `mixed_partial(x, a)` that takes two Python floats and returns ∂²f/∂a∂x at (x, a) for "
                 "f(x, a) = ${c}·a²·x³ + ${k}·sin(a·x): the derivative with respect to a of the slope ∂f/∂x, that "
                 "is, how the slope of the curve at x changes when the parameter a changes.")
    visible_cases = (_VISIBLE,)
    praise = ("the inner tape gave the slope ∂f/∂x, and the outer tape, which recorded that call, differentiated it "
              "with respect to `a`.")
    hints = (
        "∂²f/∂a∂x is the derivative with respect to `a` of ∂f/∂x: the inner tape gives ∂f/∂x, and the outer tape "
        "differentiates that slope with respect to `a`. Each tape must watch the input it differentiates by.",
        "`x = tf.Variable(x)` and `a = tf.Variable(a)`; nest two tapes around `f = $c * a**2 * x**3 + $k * "
        "tf.sin(a * x)`; inside the outer block, after the inner one, `df_dx = inner.gradient(f, x)`.",
    )

    def check_case(self, fn, case, facts):
        x, a = case
        d = _partials(self.variant["c"], self.variant["k"], x, a)
        shown = f"x={x}, a={a}"
        call = self.call(fn, x, a, shown=shown)
        got = call.value
        if got is None:
            raise none_feedback(f"`mixed_partial({shown})` returned `None`.", facts, facts.returned_call(),
                                {"x": "constant", "a": "constant"})
        problem = wrong_value(f"mixed_partial({shown})", d["xa"], got, [
            Alternative("∂f/∂x", d["x"], "first-derivative",
                        "That is ∂f/∂x, the slope itself, a first derivative: differentiate it again, with respect "
                        "to `a`, with the outer tape."),
            Alternative("∂f/∂a", d["a"], "first-derivative",
                        "That is ∂f/∂a, a first derivative: the slope ∂f/∂x differentiated with respect to `a` is "
                        "asked for, a second derivative from the outer tape."),
            Alternative("∂²f/∂x²", d["xx"], "wrong-source",
                        "That is ∂²f/∂x²: the slope ∂f/∂x differentiated again with respect to `x`. Its change with "
                        "the parameter is its derivative with respect to `a`."),
            Alternative("∂²f/∂a²", d["aa"], "wrong-source",
                        "That is ∂²f/∂a²: ∂f/∂a differentiated again with respect to `a`. The slope is ∂f/∂x, the "
                        "derivative with respect to `x`; differentiate that one with respect to `a`.")])
        slope_in_a = lambda at: _partials(self.variant["c"], self.variant["k"], x, at)["x"]
        differenced = one_sided(slope_in_a, a, got, "Your value") if problem and problem.cause is None else None
        if differenced:
            raise Incorrect(f"{mismatch(d['xa'], got, f'mixed_partial({shown})')} {differenced[1]}",
                            cause=differenced[0])
        if problem:
            raise problem
        if facts.found and not facts.nested() and not any(t.persistent for t in facts.tape_blocks):
            # no second tape to differentiate with: a right value within tolerance is a finite difference
            differenced = one_sided(slope_in_a, a, got, "Your value", rtol=1e-4)
            if differenced:
                raise Incorrect(f"Your value is within the tolerance, but your code nests no tapes. "
                                f"{differenced[1]}", cause=differenced[0])
        require_nested_tapes(facts, call.logs)


# ---------------------------------------------------------------- 4.4 Hessian of a loss

_LAMS = (0.05, 0.2, 0.5, 1.0)  # drawn penalty weights; the text has 0.1
_VISIBLE_DATA = ((0.5, -1.0, 0.25), ((1.0, 2.0, -1.0), (0.5, -1.5, 2.0), (-1.0, 0.5, 1.0), (2.0, 1.0, 0.5)),
                 (0.5, -0.2, 0.8, 0.1))  # (w, X, y) of the visible check


def _loss_parts(lam: float, w, X, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For mean((tanh(Xw) − y)²) + lam·‖w‖², in float64: the gradient, the data term's Hessian, the penalty's."""
    w, X, y = (np.array(t, np.float64) for t in (w, X, y))
    t = np.tanh(X @ w)
    r, slope = t - y, 1 - t * t  # residuals, and tanh' at the scores
    grad = X.T @ (2 * r * slope) / len(y) + 2 * lam * w
    curvature = 2 * slope**2 - 4 * r * t * slope  # d²(tanh(z) − y)²/dz²
    return grad, X.T @ (X * curvature[:, None]) / len(y), 2 * lam * np.eye(w.size)


class LossHessian(Exercise):
    number = "4.4"
    replayable = True
    remedies = NESTED_REMEDIES
    answer = "loss_hessian"
    # The weight of the penalty lam·‖w‖² (0.1 in the text); its Hessian 2·lam·I is what a dropped term leaves out.
    space = Space(default={"lam": 0.1}, draws={"lam": lambda rng: _LAMS[int(rng.integers(len(_LAMS)))]})
    statement = ("Write `loss_hessian(w, X, y)` for a one-unit tanh model: `w` is a 1-D float32 NumPy array of n "
                 "weights, `X` an m × n float32 array of inputs, `y` m float32 targets. Return the n × n Hessian, "
                 "with respect to `w`, of the loss mean((tanh(X·w) − y)²) + ${lam}·‖w‖², where X·w is the vector of "
                 "the m scores (`tf.linalg.matvec(X, w)`) and ‖w‖² is the sum of the squared weights.")
    visible_cases = (_VISIBLE_DATA,)
    praise = "`jacobian` of the loss's gradient with respect to the weights gave one row per weight: the Hessian."
    hints = (
        "The weights play the part of section 7's `x`: nest two tapes around the loss computed from "
        "`w = tf.Variable(w)`; the inner one gives the gradient, a vector of n.",
        "Inside the outer block: `g = inner.gradient(loss, w)`; after it, `outer.jacobian(g, w)` differentiates "
        "each component of `g` separately (`outer.gradient` would sum them).",
    )

    def check_case(self, fn, case, facts):
        w, X, y = case
        lam = self.variant["lam"]
        grad, data_h, penalty_h = _loss_parts(lam, w, X, y)
        expected = data_h + penalty_h
        shown = f"w={fmt(np.array(w))}, X of shape {np.shape(X)}, y={fmt(np.array(y))}"
        call = self.call(fn, *(np.array(t, np.float32) for t in (w, X, y)), shown=shown)
        got = call.value
        if got is None:
            raise none_feedback(f"`loss_hessian({shown})` returned `None`.", facts, facts.returned_call(),
                                {"w": "constant", "X": "constant", "y": "constant"})
        problem = wrong_value(f"loss_hessian({shown})", expected, got, [
            Alternative("the Hessian's column sums", expected.sum(axis=0), "gradient-not-jacobian",
                        "That is the gradient of the sum of the gradient's components, one column sum of the "
                        "Hessian per weight: `gradient` sums its target first. Use `outer.jacobian(g, w)` to keep "
                        "one row per component."),
            Alternative("the gradient", grad, "first-derivative", "That is the gradient of the loss, not its Hessian."),
            Alternative("the Hessian without the penalty", data_h, "missing-term",
                        f"That is the Hessian of the mean squared error alone: the penalty {lam}·‖w‖² adds "
                        f"{2 * lam:g} to each diagonal entry."),
            Alternative("the Hessian of the summed loss", len(y) * data_h + penalty_h, "sum-not-mean",
                        f"That is the Hessian with the squared errors summed over the {len(y)} examples; the loss "
                        "averages them (`tf.reduce_mean`).")])
        if problem:
            raise problem
        require_nested_tapes(facts, call.logs)


ex4_3 = MixedPartial()
ex4_4 = LossHessian()
