"""Exercises of notebook 04_persistent_tapes: several gradients from one tape, releasing it,
second derivatives from nested tapes, and Hessians from `jacobian`."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import tensorflow as tf

from tapelab.checker.differential import combination, one_sided
from tapelab.checker.wrong_answers import Alternative, arrangement, swapped_item, wrong_value
from tapelab.checker.compare import agrees, fmt, mismatch
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.checker.explanations import none_feedback
from tapelab.checker.oracle import numeric_gradient
from tapelab.checker.variants import Space
from tapelab.exercises.hessian_vector import ex4_5
from tapelab.exercises.nested_rule import INSIDE_WITH_LOG, NESTED_REMEDIES, require_nested_tapes

__all__ = ["ex4_1", "ex4_2", "ex4_3", "ex4_4", "ex4_5"]


class _TapeExercise(Exercise):
    """An exercise of this notebook: one rule, `gradient` is called after its own tape's `with` block."""

    def _reject_gradient_inside_with(self, facts, logs: list[str]) -> None:
        # TensorFlow logs its warning once per process, so the source is the better witness.
        inside = facts.inside_own_block()
        if inside or any(INSIDE_WITH_LOG in line for line in logs):
            call = f"`{inside[0].text()}`" if inside else "`gradient`"
            raise Incorrect(
                f"Your values are right, but you called {call} inside the `with` block of its own tape. "
                "The rule in this notebook: call `gradient` after the block, unless you want the tape to record the "
                "gradient computation itself (a higher derivative); inside, a persistent tape records every "
                "gradient op too, which TensorFlow warns is significantly less efficient. Did you move the "
                "`gradient` calls after the `with` block?", cause="gradient-inside-block")


# ---------------------------------------------------------------- 4.1 several gradients


# name of the outer function z = f(y) -> its derivative f' with NumPy
_SLOPES = {"sin": np.cos, "cos": lambda y: -np.sin(y)}
# (n, f): y = x^n and z = f(y); the notebook's text has (3, "sin")
_FORMS = ((2, "sin"), (4, "sin"), (2, "cos"), (3, "cos"), (4, "cos"))
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


class SeveralGradients(_TapeExercise):
    number = "4.1"
    answer = "several_gradients"
    # The power n of y = x^n and the function f of z = f(y), drawn as a pair so that no variant is the
    # notebook's own (3, sin).
    space = Space(default={"form": (3, "sin")}, draws={"form": lambda rng: _FORMS[int(rng.integers(len(_FORMS)))]},
                  wording={"n": lambda v: v["form"][0], "z_code": lambda v: f"tf.{v['form'][1]}(y)",
                           "y_text": lambda v: f"y = x{str(v['form'][0]).translate(_SUPERSCRIPT)}",
                           "z_text": lambda v: f"z = {v['form'][1]}(y)"})
    statement = ("Write `several_gradients(x)` that takes a 1-D float constant `x`, records ${y_text} and ${z_text} in "
                 "**one** forward pass, and returns the list `[dy_dx, dz_dx]` (both with respect to `x`).")
    visible_cases = ((1.0, -0.5),)
    praise = "two gradients from a single forward pass, and no tape left holding its record."
    hints = (
        "A tape normally answers one `gradient` call. Which argument of `tf.GradientTape` lets it answer more?",
        "Open `tf.GradientTape(persistent=True)`, call `tape.watch(x)` (x is a constant), then compute "
        "`y = x**$n` and `z = $z_code` inside the block.",
    )

    def check_case(self, fn, values, facts):
        x = tf.constant(values, tf.float32)
        call = self.call(fn, x, shown=f"x={fmt(x)}")
        got = call.value
        xs = np.array(values, np.float64)
        n, outer = self.variant["form"]
        slope = _SLOPES[outer]
        dy_dx = n * xs ** (n - 1)
        dz_dx = slope(xs**n) * dy_dx
        problem = arrangement("several_gradients(x)", [dy_dx, dz_dx], got) if got is not None else None
        if problem:
            raise problem
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            raise Incorrect(mismatch([dy_dx, dz_dx], got, "several_gradients(x)")
                            or "`several_gradients` should return a list `[dy_dx, dz_dx]`.")
        for i, (name, value) in enumerate((("dy_dx", got[0]), ("dz_dx", got[1]))):
            if value is None:
                raise none_feedback(f"`{name}` is `None`.", facts, facts.returned_call(i), {"x": "constant"})
        swapped = "Your gradients are swapped: return `[dy_dx, dz_dx]`."
        wrt_y = Alternative("dz/dy", slope(xs**n), "wrong-source",
                            "That is dz/dy, the gradient with respect to `y`. Did you pass `y` as the source? "
                            "Pass `x`: the tape chains through `y` by itself.")
        for i, (name, expected, others) in enumerate((("dy_dx", dy_dx, []), ("dz_dx", dz_dx, [wrt_y]))):
            problem = wrong_value(name, expected, got[i], [swapped_item([dy_dx, dz_dx], got, i, says=swapped), *others])
            self._raise_departed(problem, fn, (x,), lambda v: tf.sin(v**3))
        self._reject_gradient_inside_with(facts, call.logs)
        kept = [t.name for t in facts.tape_blocks if t.persistent and t.name not in facts.deleted]
        if kept:
            others = sorted(facts.deleted)
            also = f" (it deletes {', '.join(f'`{n}`' for n in others)}, which frees nothing the tape holds)" if others \
                else ""
            raise Incorrect(f"Your values are right, but the rule of Exercises 4.1 and 4.2 is to `del {kept[0]}` once "
                            f"you have every gradient, and your code never deletes `{kept[0]}`{also}. A persistent "
                            "tape keeps its whole record until the tape object itself goes.",
                            cause="tape-not-released")


# ---------------------------------------------------------------- 4.2 release the tape


class _Tracked:
    """The test's `f`: loss and penalty of `x`, with weak references to every intermediate it makes.

    Only the checker holds these references, so an intermediate is alive exactly while some tape
    keeps it; `held_at_next_call` is how many were alive when `f` was called again.
    """

    def __init__(self, target: float, weight: float) -> None:
        self.target, self.weight = target, weight
        self.refs: list[weakref.ref] = []
        self.calls = 0
        self.held_at_next_call = 0

    def __call__(self, x):
        if self.calls:
            self.held_at_next_call = max(self.held_at_next_call, self.live())
        self.calls += 1
        h = tf.exp(0.5 * x)
        gap = h - self.target
        squares = x * x
        self.refs += [weakref.ref(t) for t in (h, gap, squares)]
        loss = tf.reduce_sum(gap * gap)
        penalty = self.weight * tf.reduce_sum(squares)
        return loss, penalty

    def live(self) -> int:
        return sum(ref() is not None for ref in self.refs)

    def numpy_loss(self, x):
        return float(np.sum((np.exp(0.5 * x) - self.target) ** 2))

    def numpy_penalty(self, x):
        return float(self.weight * np.sum(x * x))


def _times(mu: float) -> str:
    """`mu * ` as code writes it before a term, nothing for 1."""
    return "" if mu == 1 else f"{mu:g} * "


class TwoGradientsAndRelease(_TapeExercise):
    number = "4.2"
    answer = "two_gradients_and_release"
    # The weight mu of the penalty's gradient in the step, lr * (dloss_dx + mu * dpenalty_dx) (1 in the text).
    space = Space(default={"mu": 1}, draws={"mu": lambda rng: float(rng.choice([0.25, 0.5, 1.5, 2, 3]))},
                  wording={"mu_times": lambda v: _times(v["mu"])})
    statement = ("Write `two_gradients_and_release(f, x, lr)`. `x` is a `tf.Variable` and `f(x)` returns two scalars, "
                 "`(loss, penalty)`. Your function must: 1. record `loss, penalty = f(x)` on one persistent tape and, "
                 "after its `with` block, get `dloss_dx` and `dpenalty_dx`; 2. release the tape with `del tape`; "
                 "3. take one step: `x.assign_sub(lr * (dloss_dx + ${mu_times}dpenalty_dx))`; 4. call `f(x)` again "
                 "and return `[dloss_dx, dpenalty_dx, new_loss]`, where `new_loss` is the loss after the step.")
    visible_cases = (((0.5, -1.0, 2.0), 0.1, 1.5, 0.2),)
    praise = "two gradients from one recording, and the tape let go of its intermediates before the next forward pass."
    hints = (
        "Record `loss, penalty = f(x)` once on a persistent tape and ask it for two gradients; "
        "then free it before you call `f` again.",
        "After the `with` block: the two `gradient` calls, then `del tape`, then "
        "`x.assign_sub(lr * (dloss_dx + ${mu_times}dpenalty_dx))`.",
    )

    def check_case(self, fn, case, facts):
        values, lr, target, weight = case
        x0 = np.array(values, np.float64)
        x = tf.Variable(x0, dtype=tf.float32, name="x")
        f = _Tracked(target, weight)
        call = self.call(fn, f, x, lr, shown=f"f, x=tf.Variable({fmt(x0)}), lr={lr}")
        got = call.value
        gc.collect()
        alive_after_return = f.live()

        dloss = numeric_gradient(f.numpy_loss, x0)
        dpenalty = numeric_gradient(f.numpy_penalty, x0)
        mu = self.variant["mu"]
        x1 = x0 - lr * (dloss + mu * dpenalty)
        if not isinstance(got, (list, tuple)) or len(got) != 3:
            raise Incorrect(mismatch([dloss, dpenalty, 0.0], got, "two_gradients_and_release(...)")
                            or "`two_gradients_and_release` should return `[dloss_dx, dpenalty_dx, new_loss]`.")
        for i, (name, value) in enumerate((("dloss_dx", got[0]), ("dpenalty_dx", got[1]))):
            if value is None:
                raise none_feedback(f"`{name}` is `None`.", facts, facts.returned_call(i), {"x": "variable"})
        swapped = "Your gradients are swapped: return `[dloss_dx, dpenalty_dx, new_loss]`."
        rights = [dloss, dpenalty]
        for i, (name, expected) in enumerate((("dloss_dx", dloss), ("dpenalty_dx", dpenalty))):
            target, other = ("loss", "penalty") if i == 0 else ("penalty", "loss")
            # the other item's right value here, while that item is right too: one target differentiated twice
            twice = (lambda i=i: rights[1 - i] if agrees(rights[1 - i], got[1 - i]) else None)
            problem = wrong_value(name, expected, got[i], [
                swapped_item(rights, got[:2], i, says=swapped),
                Alternative("the other gradient again", twice, "wrong-target",
                            f"That is the gradient of `{other}` again (your other item): `{name}` differentiates "
                            f"the wrong target. Differentiate `{target}`.")])
            if problem:
                raise problem
        step = (1e-4, 1e-4)  # rtol, atol: `x` and the loss after a float32 step
        problem = wrong_value("x", x1, x.numpy(), [
            Alternative("x before the step", x0, "no-update", "`x` did not move. Did you call `x.assign_sub(...)`?"),
            Alternative("a step uphill", x0 + lr * (dloss + mu * dpenalty), "uphill-step",
                        "You stepped uphill. Did you use `assign_add` instead of `assign_sub`?"),
        ], otherwise=self.variant.fill("Did you step by `lr * (dloss_dx + ${mu_times}dpenalty_dx)`?"),
            rtol=step[0], atol=step[1])
        moved = combination({"dloss_dx": dloss, "dpenalty_dx": dpenalty}, {"dloss_dx": lr, "dpenalty_dx": lr * mu},
                            x0 - x.numpy(), "your step (`x` before minus `x` after)", *step, rate=lr) \
            if problem and problem.cause is None else None
        if moved is not None:
            raise Incorrect(f"{mismatch(x1, x.numpy(), 'x', *step)} {moved[1]}", cause=moved[0])
        if problem:
            raise problem
        problem = wrong_value("new_loss", f.numpy_loss(x1), got[2], [Alternative(
            "the loss before the step", f.numpy_loss(x0), "stale-value",
            "That is the loss before the step. Did you call `f(x)` again after `x.assign_sub(...)`?")],
            rtol=step[0], atol=step[1])
        if problem:
            raise problem
        self._reject_gradient_inside_with(facts, call.logs)
        if f.held_at_next_call:
            raise Incorrect(
                f"Your values are right, but when you called `f` the second time your persistent tape was still "
                f"alive and held {f.held_at_next_call} intermediates of the first call. Did you `del tape` "
                "right after the `gradient` calls?", cause="tape-not-released")
        if alive_after_return:
            raise Incorrect(
                f"Your values are right, but your persistent tape is still alive after your function returned "
                f"(it holds {alive_after_return} intermediates). Did you return the tape or store it outside "
                "the function? `del tape` once you have the gradients.", cause="tape-not-released")


# ---------------------------------------------------------------- 4.3 second derivative

# name -> (f written with TensorFlow ops, f', f'' with NumPy)
_SCALAR_FUNCTIONS = {
    "x**4": (lambda x: x**4, lambda x: 4 * x**3, lambda x: 12 * x**2),
    "sin": (tf.sin, np.cos, lambda x: -np.sin(x)),
    "exp(-x**2)": (lambda x: tf.exp(-x * x), lambda x: -2 * x * np.exp(-x * x),
                   lambda x: (4 * x * x - 2) * np.exp(-x * x)),
    "tanh": (tf.tanh, lambda x: 1 - np.tanh(x) ** 2, lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    "x**3 - 2x": (lambda x: x**3 - 2 * x, lambda x: 3 * x**2 - 2, lambda x: 6 * x),
    "log(1 + x**2)": (lambda x: tf.math.log(1 + x * x), lambda x: 2 * x / (1 + x * x),
                      lambda x: (2 - 2 * x * x) / (1 + x * x) ** 2),
}


class SecondDerivative(_TapeExercise):
    number = "4.3"
    remedies = NESTED_REMEDIES
    answer = "second_derivative"
    fixed_because = ("`second_derivative` is a procedure for any `f` and `x` it is given: two nested tapes hold no "
                     "numbers of their own, so only the test's functions and points could change, not what you write.")
    visible_cases = (("x**4", 1.0), ("sin", 0.5))
    praise = "the outer tape recorded the inner `gradient` call, so it could differentiate the derivative."
    hints = (
        "A second derivative is the derivative of the first one, so the first `gradient` call must itself be "
        "recorded by a second tape.",
        "Make `x = tf.Variable(x)`, open `with tf.GradientTape() as outer:`, and inside it "
        "`with tf.GradientTape() as inner:` around `y = f(x)`.",
    )

    def check_case(self, fn, case, facts):
        name, x = case
        f, d1, d2 = _SCALAR_FUNCTIONS[name]
        call = self.call(fn, f, x, shown=f"f={name}, x={x}")
        got, expected = call.value, d2(x)
        if got is None:
            raise none_feedback(f"`second_derivative(f={name}, x={x})` returned `None`.", facts, facts.returned_call(),
                                {"x": "constant"})
        problem = wrong_value(f"second_derivative(f={name}, x={x})", expected, got, [Alternative(
            "the first derivative", d1(x), "first-derivative",
            "That is the first derivative. Did you return `inner.gradient(...)` instead of "
            "differentiating it again with the outer tape?")])
        differenced = one_sided(d1, x, got, "Your value") if problem and problem.cause is None else None
        if differenced:
            raise Incorrect(f"{problem} {differenced[1]}", cause=differenced[0])
        if problem:
            raise problem
        require_nested_tapes(facts, call.logs)


# ---------------------------------------------------------------- 4.4 Hessian

# name -> (f on a 1-D tensor with TensorFlow ops, its gradient with NumPy)
_VECTOR_FUNCTIONS = {
    "x0**2*x1 + x1**3": (lambda v: v[0] ** 2 * v[1] + v[1] ** 3,
                         lambda v: np.array([2 * v[0] * v[1], v[0] ** 2 + 3 * v[1] ** 2])),
    "sum(x**4)": (lambda v: tf.reduce_sum(v**4), lambda v: 4 * v**3),
    "x0*x1*x2 + sum(x**2)": (lambda v: v[0] * v[1] * v[2] + tf.reduce_sum(v * v),
                             lambda v: np.array([v[1] * v[2], v[0] * v[2], v[0] * v[1]]) + 2 * v),
    "exp(x0*x1) + x2**3": (lambda v: tf.exp(v[0] * v[1]) + v[2] ** 3,
                           lambda v: np.array([v[1] * np.exp(v[0] * v[1]), v[0] * np.exp(v[0] * v[1]),
                                               3 * v[2] ** 2])),
    "sin(x0)*cos(x1)": (lambda v: tf.sin(v[0]) * tf.cos(v[1]),
                        lambda v: np.array([np.cos(v[0]) * np.cos(v[1]), -np.sin(v[0]) * np.sin(v[1])])),
}


def _hessian(grad, point: np.ndarray) -> np.ndarray:
    """The Hessian as the Jacobian of the analytic gradient, by float64 central differences."""
    return np.stack([numeric_gradient(lambda v, i=i: grad(v)[i], point) for i in range(point.size)])


class Hessian(_TapeExercise):
    number = "4.4"
    remedies = NESTED_REMEDIES
    answer = "hessian"
    fixed_because = ("`hessian` is a procedure for any `f` and `x` it is given: two nested tapes and a `jacobian` "
                     "hold no numbers of their own, so only the test's functions and points could change, not what "
                     "you write.")
    visible_cases = (("x0**2*x1 + x1**3", (1.0, 2.0)),)
    praise = "`jacobian` of the gradient gave one row per component: the full Hessian."
    hints = (
        "Nest two tapes as for the second derivative; the outer one must differentiate a whole gradient "
        "vector, not a scalar.",
        "`outer.gradient(g, x)` would sum the components of `g` first; `outer.jacobian(g, x)` keeps one row "
        "per component.",
    )

    def check_case(self, fn, case, facts):
        name, point = case
        f, grad = _VECTOR_FUNCTIONS[name]
        p = np.array(point, np.float64)
        shown = f"f={name}, x={fmt(p)}"
        call = self.call(fn, f, np.array(point, np.float32), shown=shown)
        got, expected = call.value, _hessian(grad, p)
        if got is None:
            raise none_feedback(f"`hessian({shown})` returned `None`.", facts, facts.returned_call(), {"x": "constant"})
        problem = wrong_value(f"hessian({shown})", expected, got, [
            Alternative("the gradient of the summed gradient", expected.sum(axis=0), "gradient-not-jacobian",
                        "That is the gradient of the sum of the gradient's components. Did you call "
                        "`outer.gradient`? Use `outer.jacobian(g, x)` to keep one row per component."),
            Alternative("the gradient", grad(p), "first-derivative", "That is the gradient of `f`, not its Hessian.")])
        if problem:
            raise problem
        require_nested_tapes(facts, call.logs)


ex4_1 = SeveralGradients()
ex4_2 = TwoGradientsAndRelease()
ex4_3 = SecondDerivative()
ex4_4 = Hessian()
