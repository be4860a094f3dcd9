"""Exercises of notebook 05_debugging_none: fix the line that makes a gradient None, then fix broken steps."""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from tapelab.checker.compare import to_numpy
from tapelab.checker.wrong_answers import Alternative, arrangement, wrong_value
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.checker.explanations import explain_none
from tapelab.checker.variants import Space
from tapelab.exercises.custom_gradients import ex5_6
from tapelab.exercises.blocked_path import none_feedback as _none_feedback
from tapelab.exercises.fix_the_snippet import ex5_1
from tapelab.exercises.refuse_none import ex5_5

__all__ = ["ex5_1", "ex5_2", "ex5_3", "ex5_4", "ex5_5", "ex5_6"]


def _rebinds(facts, name: str) -> bool:
    """Whether the code rebinds `name` to an expression of itself (`w = w - lr * grad`)."""
    return any(name in a.reads and a.made_by != "variable" for a in facts.assignments_of(name))


_VALUES = {"w": "variable", "b": "variable", "x": "constant", "y": "constant"}  # what every checker passes


def _regression(spec, n_in=None):
    """(x, w, b, y) for a linear regression case: the notebook's worked example, or (n, d, seed)."""
    if spec == "worked":
        x = np.array([[1.0, 2.0], [2.0, 0.5], [3.0, -1.0], [4.0, 1.5]])
        w = np.array([[0.5], [-0.5]])
        return x, w, np.array([0.1]), x @ np.array([[2.0], [1.0]]) + 1.0
    n, d, seed = spec
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    return x, rng.normal(size=(d, 1)), rng.normal(size=1), rng.normal(size=(n, 1))


_POWERS = {2: ("²", "squared"), 3: ("³", "third"), 4: ("⁴", "fourth"), 5: ("⁵", "fifth"), 6: ("⁶", "sixth")}


def _error_words(p: int) -> dict:
    """How the error raised to the power `p` reads: in code (`(pred - y) ** 2`, `tf.abs(pred - y) ** 3`: an odd
    power of a signed error is no loss), in the task (`(x @ w + b - y)²`, `|x @ w + b - y|³`) and in words."""
    even = p % 2 == 0
    sup, ordinal = _POWERS[p]
    return {"err": "(pred - y)" if even else "tf.abs(pred - y)",
            "err_full": "(x @ w + b - y)" if even else "tf.abs(x @ w + b - y)",
            "np_err": "np.square(pred - y)" if p == 2 else f"np.abs(pred - y) ** {p}",
            "np_fn": "np.square" if p == 2 else "np.abs",
            "err_text": f"(x @ w + b - y){sup}" if even else f"|x @ w + b - y|{sup}",
            "loss_name": "the mean squared error" if p == 2 else f"the mean {ordinal} power of the absolute error"}


class FixTheStep(Exercise):
    number = "5.2"
    answer = "fixed_gradients"
    # The power p of the error in the loss, mean(|x @ w + b - y|^p) (2 in the notebook's text).
    space = Space(default={"p": 2}, draws={"p": lambda rng: int(rng.choice([3, 4, 5, 6]))},
                  wording={"err": lambda v: _error_words(v["p"])["err"],
                           "err_text": lambda v: _error_words(v["p"])["err_text"],
                           **{name: (lambda v, name=name: _error_words(v["p"])[name])
                              for name in ("err_full", "np_err", "np_fn", "loss_name")}})
    statement = """This function should return the gradients of ${loss_name} of a linear model, but both come back `None`:

```python
def broken_gradients(w, b, x, y):
    with tf.GradientTape() as tape:
        pred = tf.stop_gradient(x @ w) + b
    loss = tf.reduce_mean(${err} ** ${p})
    return tape.gradient(loss, [w, b])
```

Write `fixed_gradients(w, b, x, y)` that returns `[dl_dw, dl_db]` for `loss = mean(${err_text})`. `w` and `b` are
variables, `x` and `y` constant tensors. The test compares your gradients with finite differences."""
    visible_cases = ("worked",)
    praise = "both gradients flow again: the loss is recorded and nothing blocks the path."
    hints = (
        "Two things are wrong in `broken_gradients`: one is where a line sits, the other is a call that should go.",
        "Move the loss inside the `with` block, and drop `tf.stop_gradient` from the prediction.",
    )

    def check_case(self, fn, spec, facts):
        x, w, b, y = _regression(spec)
        args = (tf.Variable(w, dtype=tf.float32), tf.Variable(b, dtype=tf.float32),
                tf.constant(x, tf.float32), tf.constant(y, tf.float32))
        got = self.call(fn, *args, shown=f"x of shape {x.shape}").value
        residual = x @ w + b - y
        p = self.variant["p"]
        slope = p * np.abs(residual) ** (p - 1) * np.sign(residual)  # d|r|^p/dr; p * r for p = 2
        expected = [x.T @ slope / len(x), slope.mean(axis=0)]
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            raise Incorrect("`fixed_gradients` should return the list `[dl_dw, dl_db]` from "
                            "`tape.gradient(loss, [w, b])`.")
        for i, (name, source) in enumerate((("dl_dw", "w"), ("dl_db", "b"))):
            if got[i] is None:
                raise _none_feedback(fn, facts, name, i, source, _VALUES)
        problem = arrangement("fixed_gradients(...)", expected, got)
        if problem:
            raise problem
        for name, want, have in zip(("dl_dw", "dl_db"), expected, got):
            problem = wrong_value(name, want, have,
                                  otherwise=f"Is the loss {self.variant['loss_name']} of `x @ w + b` against `y`?")
            self._raise_departed(problem, fn, args, self._loss)

    def _loss(self, w_, b_, x_, y_):
        """The task's loss of the variant, as the answer computes it (for the departure trace)."""
        p, error = self.variant["p"], x_ @ w_ + b_ - y_
        return tf.reduce_mean((tf.abs(error) if p % 2 else error) ** p)


def _steps(w, x, y, lr, c=0, n=2):
    grads = []
    for _ in range(n):
        grad = 2 * np.mean((w * x + c - y) * x)
        grads.append(grad)
        w = w - lr * grad
    return grads, w


_REPLACED = ("After the first step `w` was no longer a variable: did you write `w = w - lr * grad`? "
             "That binds `w` to a tensor the tape does not watch; `w.assign_sub(lr * grad)` changes the "
             "variable in place.")


def _plus(c: float) -> str:
    """` + c` as code writes it after `w * x`; nothing for c = 0."""
    if c == 0:
        return ""
    return f" + {c:g}" if c > 0 else f" - {-c:g}"


class TwoSteps(Exercise):
    number = "5.3"
    remedies = {"persistent": (
        'Each step needs the loss recorded after the previous update: open a new `tf.GradientTape()` inside'
        " the loop, around that step's loss."),
        "watch-a-constant": "Keep `w` the variable you were given and update it in place, `w.assign_sub(lr * grad)`: "
                            "the caller's variable must move."}
    answer = "two_steps"
    # The model's fixed intercept c, pred = w * x + c (0 in the notebook's text): each gradient moves with it.
    space = Space(default={"c": 0}, draws={"c": lambda rng: float(rng.choice([-1.5, -1, -0.5, 0.5, 1, 1.5]))},
                  wording={"plus_c": lambda v: _plus(v["c"])})
    statement = """This function should take two steps of gradient descent on `w` and return the two gradients, but it fails
on the second step with a `TypeError` about `NoneType`: the second gradient is `None`.

```python
def broken_two_steps(w, x, y, lr):
    grads = []
    for _ in range(2):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x${plus_c} - y) ** 2)
        grad = tape.gradient(loss, w)
        grads.append(grad)
        w = w - lr * grad
    return grads
```

Write `two_steps(w, x, y, lr)` that returns both gradients and leaves the variable `w` updated after the
two steps."""
    visible_cases = ((0.5, (1.0, 2.0, 3.0), (2.0, 4.0, 6.0), 0.05),)
    praise = "`w` stayed a variable, so the tape watched it on the second step too."
    hints = (
        "After the first step, what type is `w`? Print `type(w)` after `w = w - lr * grad`.",
        "A `tf.Variable` must be changed in place, or it stops being a variable.",
    )

    def check_case(self, fn, case, facts):
        w0, xs, ys, lr = case
        w = tf.Variable(w0, dtype=tf.float32)
        x, y = np.array(xs), np.array(ys)
        try:
            got = self.call(fn, w, tf.constant(x, tf.float32), tf.constant(y, tf.float32), lr,
                            shown=f"w=tf.Variable({w0}), lr={lr}").value
        except Incorrect as error:
            if "NoneType" not in str(error):
                raise
            if not _rebinds(facts, "w"):
                why = explain_none(facts, facts.returned_call(0), _VALUES)
                raise Incorrect(f"{error.observed or error} A gradient was `None` and the next operation could not "
                                f"use it. {why}".strip(), cause=why.cause) from None
            raise Incorrect(f"{error.observed or error} A gradient was `None`, most likely on the second step. "
                            + _REPLACED, cause="replaced-by-tensor") from None
        c = self.variant["c"]
        expected, w_after = _steps(w0, x, y, lr, c)
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            raise Incorrect("`two_steps` should return a list of the two gradients, one per step.")
        if got[0] is None:
            raise _none_feedback(fn, facts, "grads[0]", 0, "w", _VALUES)
        if got[1] is None:
            if _rebinds(facts, "w"):
                raise Incorrect("`grads[1]` is `None`. " + _REPLACED, cause="replaced-by-tensor")
            raise _none_feedback(fn, facts, "grads[1]", 1, "w", _VALUES)
        problem = wrong_value("grads[0]", expected[0], got[0],
                              otherwise=f"Is the loss `mean((w * x{self.variant['plus_c']} - y) ** 2)`?")
        if problem:
            raise problem
        uphill, _ = _steps(w0, x, y, -lr, c)
        per_step = "Did you update `w` once per step, by `lr * grad`?"
        problem = wrong_value("grads[1]", expected[1], got[1], [
            Alternative("the first step's gradient", expected[0], "stale-value",
                        "That is `grads[0]` again: the second gradient was taken at `w`'s start value (either `w` "
                        "did not change between the steps, or the gradient was not recomputed after the update). "
                        "Compute each step's gradient in its own tape, then `w.assign_sub(lr * grad)`."),
            Alternative("the gradient after a step uphill", uphill[1], "uphill-step",
                        "You moved `w` uphill. Did you use `assign_add` where gradient descent subtracts, "
                        "`assign_sub`?")], otherwise=per_step)
        if problem:
            raise problem
        made = " Your code makes a new `tf.Variable` and updates that one; the caller's `w` never sees it." \
            if facts.calls_to("Variable") else ""
        problem = wrong_value("w after two steps", w_after, w, [Alternative(
            "w never updated", np.float64(w0), "no-update",
            f"`w` is still its start value: the variable you were given was never updated.{made} Update it in "
            "place: `w.assign_sub(lr * grad)`.")], otherwise=per_step)
        if problem:
            raise problem


def _step_words(q: float) -> dict:
    """How rounding to the nearest multiple of `q` reads in code (`tf.round(z / 0.5) * 0.5`: the fields `div` and
    `mul` around the rounded value) and in the task; for q = 1, plain `tf.round(z)` and whole numbers."""
    if q == 1:
        return {"div": "", "mul": "", "what": "whole numbers", "pred": "round(w * x)", "rounded_z": "round(z)"}
    return {"div": f" / {q:g}", "mul": f" * {q:g}", "what": f"multiples of {q:g}",
            "pred": f"{q:g} * round(w * x / {q:g})", "rounded_z": f"{q:g} * round(z / {q:g})"}


class StraightThrough(Exercise):
    number = "5.4"
    remedies = {  # the task fixes the rounding (tf.round's, a half to the even neighbour) and keeps stop_gradient
        "remove-stop-gradient": "The task's straight-through estimator keeps it, around the rounding's correction "
                                "only: `z + tf.stop_gradient(rounded - z)`, with `z = w * x` and `rounded` the task's "
                                "rounding of it, passes `z`'s gradient.",
        "keep-with-ste": "The task rounds as `tf.round` does (a half to the even neighbour) and lets the gradient "
                         "through: `z + tf.stop_gradient(rounded - z)`, with `rounded` that rounding of `z = w * x`."}
    answer = "rounded_gradient"
    # The rounding step q: predictions are multiples of q (1 in the notebook's text). A power of two, so that
    # dividing by it is exact and a case's inputs, scaled by q, put w * x / q where q = 1 puts w * x.
    space = Space(default={"q": 1}, draws={"q": lambda rng: float(rng.choice([0.25, 0.5, 2, 4]))},
                  wording={**{name: (lambda v, name=name: _step_words(v["q"])[name])
                              for name in ("div", "mul", "what", "pred", "rounded_z")},
                           "ties": lambda v: ", ".join(f"{a * v['q']:g} → {b * v['q']:g}"
                                                       for a, b in ((0.5, 0), (1.5, 2), (2.5, 2)))})
    statement = """A model predicts ${what}: `pred = ${pred}`, rounded as `tf.round` rounds, a half to the even
neighbour (${ties}), not always up. Write `rounded_gradient(w, x, y)` that returns d loss / d w for
`loss = mean((pred - y)²)`, where the forward pass uses the rounded predictions and the backward pass treats
rounding as the identity. You may use `tf.custom_gradient` (defined inside your function) or the one-line form
above. `w` is a scalar variable, `x` and `y` 1-D constants."""
    # The second case puts w * x / q on halves (0.5, 1.5, 2.5): `tf.round` takes them to the even neighbour.
    # check_case scales each case's x and y by q.
    visible_cases = ((1.3, (1.0, 2.0, 3.0), (2.0, 2.0, 5.0)), (0.5, (1.0, 3.0, 5.0), (1.0, 1.0, 3.0)))
    praise = "the forward pass rounds, the backward pass lets the gradient through: a straight-through estimator."
    hints = (
        "`tf.round` and a cast to int have no gradient. You need a forward value that is rounded, "
        "and a backward pass that acts as if it were not.",
        "`z + tf.stop_gradient(tf.round(z$div)$mul - z)` equals `$rounded_z`, but its gradient is that of `z`.",
    )

    def check_case(self, fn, case, facts):
        w0, xs, ys = case
        words, q = self.variant, self.variant["q"]
        x, y = q * np.array(xs), q * np.array(ys)
        got = self.call(fn, tf.Variable(w0, dtype=tf.float32), tf.constant(x, tf.float32),
                        tf.constant(y, tf.float32), shown=f"w=tf.Variable({w0})").value
        z = np.float32(w0) * x.astype(np.float32) / np.float32(q)  # as TF computes it: exact for a power of two
        expected = 2 * np.mean((q * np.round(z).astype(np.float64) - y) * x)
        round_z = f"tf.round(z{words['div']}){words['mul']}"
        if got is None:
            raise _none_feedback(fn, facts, "dl_dw", None, "w", _VALUES)
        blocked = [Alternative(
            "nothing through the rounding", 0.0, "stop-gradient",
            "The gradient is exactly 0: your `tf.stop_gradient` blocks the whole path through the rounding. The "
            f"straight-through estimator stops only the rounding's correction: `z + tf.stop_gradient({round_z} - z)`"
            " passes `z`'s gradient.")] if facts.calls_to("stop_gradient") else []
        probed = lambda formula: lambda: self._probe(fn, formula)  # noqa: E731 (a second input, see _probe)
        weight_rounded = lambda w, x_, y_: 2 * np.mean((q * np.round(w / q) * x_ - y_) * x_)  # noqa: E731
        floored = lambda w, x_, y_: 2 * np.mean(  # noqa: E731
            (q * np.floor(np.float32(w) * x_.astype(np.float32) / np.float32(q)) - y_) * x_)
        problem = wrong_value("dl_dw", expected, got, [Alternative(
            "the weight rounded", weight_rounded(w0, x, y), "wrong-target",
            "That is the straight-through gradient of a loss whose weight is rounded, "
            f"`{words['pred'].replace('w * x', 'w')} * x`; the task rounds the prediction, `{words['pred']}`.",
            probed(weight_rounded)), Alternative(
            "rounded down", floored(w0, x, y), "wrong-target",
            f"That is the straight-through gradient with the predictions rounded down, `tf.floor(w * x{words['div']})"
            f"{words['mul']}`; the task rounds to the nearest, as `tf.round` does.", probed(floored)), Alternative(
            "the gradient without rounding", 2 * np.mean((w0 * x - y) * x), "no-rounding",
            "That is the gradient without rounding: the forward pass must still use the rounded "
            f"predictions, `{words['pred']}`."), Alternative(
            "halves rounded up", 2 * np.mean((q * np.floor(z + 0.5) - y) * x), "round-half-up",
            f"That is the gradient with every half rounded up (`floor(z{words['div']} + 0.5){words['mul']}`); the task "
            f"rounds as `tf.round` does, a half to the even neighbour ({words['ties']}). Use `{round_z}`."), *blocked],
            otherwise="Is the loss the mean squared error of the rounded predictions?")
        if problem:
            raise problem

    def _probe(self, fn, formula) -> bool:
        """Whether `fn`'s gradient on a second input, where the known wrong roundings all differ, is `formula`'s."""
        q = self.variant["q"]  # the second input is scaled as the cases are
        w0, x, y = 1.3, q * np.array([0.7, 1.9, 2.6, -1.2]), q * np.array([1.0, 2.0, 3.0, -1.0])
        got = self.call(fn, tf.Variable(w0, dtype=tf.float32), tf.constant(x, tf.float32), tf.constant(y, tf.float32),
                        shown=f"w=tf.Variable({w0})").value
        return got is not None and bool(np.isclose(float(to_numpy(got)), formula(w0, x, y), rtol=1e-3, atol=1e-4))


ex5_2 = FixTheStep()
ex5_3 = TwoSteps()
ex5_4 = StraightThrough()
