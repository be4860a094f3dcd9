"""Exercise 4.5 of notebook 04_persistent_tapes: a Hessian-vector product from nested tapes, without the Hessian."""
from __future__ import annotations

import numpy as np

from tapelab.checker.compare import agrees, fmt
from tapelab.checker.exercise import Exercise
from tapelab.checker.explanations import none_feedback
from tapelab.checker.messages import Incorrect
from tapelab.checker.variants import Space
from tapelab.checker.wrong_answers import Alternative, wrong_value
from tapelab.exercises.nested_rule import NESTED_REMEDIES, require_nested_tapes

__all__ = ["ex4_5"]

_A, _B = (1.5, 2, 2.5, 3), (0.5, 1.5, 2, 3)  # drawn coefficients; the text has a = 0.5, b = 4
_TEXT = {"a": 0.5, "b": 4}
_VISIBLE = ((1.0, 0.5, -1.0), (1.0, -2.0, 0.5))  # (x, v) of the visible check


def _gradient(a: float, b: float, x: np.ndarray) -> np.ndarray:
    """∇f for f(x) = a·x0²·x1 + b·sin(x1·x2) + x2⁴, in float64."""
    c = np.cos(x[1] * x[2])
    return np.array([2 * a * x[0] * x[1], a * x[0] ** 2 + b * x[2] * c, b * x[1] * c + 4 * x[2] ** 3])


def _hessian(a: float, b: float, x: np.ndarray) -> np.ndarray:
    """The Hessian of the same f, in float64: the checker may form it, the student may not."""
    s, c = np.sin(x[1] * x[2]), np.cos(x[1] * x[2])
    h12 = b * c - b * x[1] * x[2] * s
    return np.array([[2 * a * x[1], 2 * a * x[0], 0.0],
                     [2 * a * x[0], -b * x[2] ** 2 * s, h12],
                     [0.0, h12, -b * x[1] ** 2 * s + 12 * x[2] ** 2]])


def _distinct(values) -> bool:
    """No known wrong answer (H·1, the gradient) nor the text's own answer gives this variant's visible H·v."""
    x, v = (np.array(c, np.float64) for c in _VISIBLE)
    right = _hessian(values["a"], values["b"], x) @ v
    wrong = (_hessian(values["a"], values["b"], x).sum(axis=1), _gradient(values["a"], values["b"], x),
             _hessian(_TEXT["a"], _TEXT["b"], x) @ v)
    return not any(np.allclose(right, w, rtol=1e-3, atol=1e-3) for w in wrong)


class HessianVector(Exercise):
    number = "4.5"
    replayable = True
    remedies = NESTED_REMEDIES
    answer = "hvp"
    # The coefficients a and b of f(x) = a·x0²·x1 + b·sin(x1·x2) + x2⁴ (0.5 and 4 in the text).
    space = Space(default=_TEXT, draws={"a": lambda rng: _A[int(rng.integers(len(_A)))],
                                                   "b": lambda rng: _B[int(rng.integers(len(_B)))]},
                  allowed=_distinct)
    statement = ("Write `hvp(x, v)` that takes two 1-D float32 NumPy arrays of length 3, a point `x` and a direction "
                 "`v`, and returns H·v, the Hessian of f(x) = ${a}·x₀²·x₁ + ${b}·sin(x₁·x₂) + x₂⁴ at `x` times `v`, a "
                 "tensor of shape (3,). Do not form H: the outer tape must differentiate one scalar, the inner product "
                 "g·v of the inner tape's gradient g with `v`. The rule of Exercise 4.3 holds: two nested tapes, "
                 "one per order of derivative.")
    visible_cases = (_VISIBLE,)
    praise = "the outer tape differentiated one scalar, g·v: H·v for a small multiple of a gradient's cost, and no H."
    hints = (
        "H·v is the gradient of g·v, where g is the gradient: v does not depend on x, so differentiating the "
        "scalar g·v with respect to x gives H·v.",
        "`x = tf.Variable(x)`; nest two tapes around `f_x = $a * x[0] ** 2 * x[1] + $b * tf.sin(x[1] * x[2]) + "
        "x[2] ** 4`; inside the outer block, `grad = inner.gradient(f_x, x)` and "
        "`grad_dot_v = tf.reduce_sum(grad * v)`.",
    )

    def check_case(self, fn, case, facts):
        point, direction = (np.array(c, np.float64) for c in case)
        a, b = self.variant["a"], self.variant["b"]
        shown = f"x={fmt(point)}, v={fmt(direction)}"
        call = self.call(fn, point.astype(np.float32), direction.astype(np.float32), shown=shown)
        got, hessian, gradient = call.value, _hessian(a, b, point), _gradient(a, b, point)
        expected = hessian @ direction
        if got is None:
            raise none_feedback(f"`hvp({shown})` returned `None`.", facts, facts.returned_call(),
                                {"x": "constant", "v": "constant"})
        if isinstance(got, (list, tuple)) and len(got) == 2 and agrees(expected, got[0]) and agrees(gradient, got[1]):
            raise Incorrect(f"`hvp({shown})` returned two tensors: H·v and the gradient g (the derivative of g·v with "
                            "respect to `v`). `v` is a fixed direction, not a source: differentiate with respect to "
                            "`x` only.", cause="wrong-source")
        by_v = any("v" in c.sources for c in facts.gradient_calls)
        problem = wrong_value(f"hvp({shown})", expected, got, [
            Alternative("H·1", hessian.sum(axis=1), "direction-dropped",
                        "That is H·1: the outer tape differentiated the whole gradient `g`, which `gradient` sums "
                        "over its components, so `v` never entered. Differentiate the scalar "
                        "`tf.reduce_sum(g * v)` instead."),
            Alternative("the gradient", gradient, "wrong-source" if by_v else "first-derivative",
                        "That is g, the gradient of f: the derivative of g·v with respect to `v`. `v` is a fixed "
                        "direction: differentiate with respect to `x`." if by_v else
                        "That is g, the gradient of f, not its change along `v`. Differentiate g·v again, with the "
                        "outer tape."),
            Alternative("g times v, elementwise", gradient * direction, "first-derivative",
                        "That is g·v term by term, a first derivative: the outer tape must differentiate their sum "
                        "with respect to `x`."),
            Alternative("g·v", float(gradient @ direction), "first-derivative",
                        "That is the scalar g·v itself, a first derivative: differentiate it with the outer tape.")])
        if problem:
            raise problem
        require_nested_tapes(facts, call.logs)
        formed = [name for name in ("jacobian", "hessians") if facts.calls_to(name)]
        if formed:
            raise Incorrect(f"Your value is right, but you formed the whole Hessian with `{formed[0]}` and multiplied "
                            "it by `v`: for n weights that is an n × n matrix, the cost this exercise avoids. Let the "
                            "outer tape differentiate the scalar `tf.reduce_sum(g * v)` instead.",
                            cause="hessian-formed")


ex4_5 = HessianVector()
