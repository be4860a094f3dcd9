"""Exercises of notebook 05_debugging_none: fix the line that makes a gradient None, then fix broken steps."""
from __future__ import annotations

import numpy as np
import tensorflow as tf

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
            "err_value": "pred - y" if even else "tf.abs(pred - y)",
            "err_full": "(x @ w + b - y)" if even else "tf.abs(x @ w + b - y)",
            "np_err": "np.square(pred - y)" if p == 2 else f"np.abs(pred - y) ** {p}",
            "np_fn": "np.square" if p == 2 else "np.abs",
            "err_text": f"(x @ w + b - y){sup}" if even else f"|x @ w + b - y|{sup}",
            "loss_name": "the mean squared error" if p == 2 else f"the mean {ordinal} power of the absolute error"}


class FixTheStep(Exercise):
    number = "5.2"
    replayable = True
    answer = "fixed_gradients"
    # The power p of the error in the loss, mean(|x @ w + b - y|^p) (2 in the notebook's text).
    space = Space(default={"p": 2}, draws={"p": lambda rng: int(rng.choice([3, 4, 5, 6]))},
                  wording={"err": lambda v: _error_words(v["p"])["err"],
                           "err_value": lambda v: _error_words(v["p"])["err_value"],
                           "err_text": lambda v: _error_words(v["p"])["err_text"],
                           **{name: (lambda v, name=name: _error_words(v["p"])[name])
                              for name in ("err_full", "np_err", "np_fn", "loss_name")}})
    statement = """This function should return the gradients of ${loss_name} of a linear model, but both come back `None`:

```python
def broken_gradients(w, b, x, y):
    w = tf.convert_to_tensor(w)
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w) + b
        error = ${err}.numpy()
        loss = tf.reduce_mean(error ** ${p})
    return tape.gradient(loss, [w, b])
```

Write `fixed_gradients(w, b, x, y)` that returns `[dl_dw, dl_db]` for `loss = mean(${err_text})`. `w` and `b` are
variables, `x` and `y` constant tensors. The test compares your gradients with finite differences."""
    visible_cases = ("worked",)
    praise = "both gradients flow again: `w` stays the watched variable and every step to the loss is TensorFlow's."
    hints = (
        "Two things cut the path, neither of them the ones section 4 fixed: one line before the tape, one call "
        "inside it. Ask the checklist of section 1 about each source.",
        "`tf.convert_to_tensor(w)` binds `w` to a tensor the tape does not watch: drop that line. `.numpy()` hands "
        "the error to NumPy: keep `error` a tensor.",
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
    replayable = True
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
        updated = self.run(lambda: w, "Reading `w` after `two_steps`").value  # the caller's variable, as left
        problem = wrong_value("w after two steps", w_after, updated, [Alternative(
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


def _clip_words(v) -> dict:
    """The clip range of 5.4 in code (`-1.0`, a float, as `tf.clip_by_value` is given it) and in the text (`-1`)."""
    lo, hi = v["low"] * v["q"], v["high"] * v["q"]
    return {"lo": repr(float(lo)), "hi": repr(float(hi)), "lo_text": f"{lo:g}", "hi_text": f"{hi:g}"}


# 5.4's cases, in steps of q: x = q * x_steps, y = q * y_steps, so w * x / q is the same on every variant. Each
# |w * x / q| has a fractional part in [0.6, 0.85] (never a bound of the range, and never within half a step
# outside it, where clipping before or after the rounding would disagree), but for one tie, 2.5, inside every
# drawn range: `tf.round` takes it to the even 2, where rounding halves up gives 3.
_STE_CASES = ((0.5, (-7.4, -3.2, 1.4, 5.0, 5.6, 11.3, 13.4, 19.2), (2.0, -1.0, -1.0, 4.0, 3.0, 7.0, 4.0, 5.0)),)


class StraightThrough(Exercise):
    number = "5.4"
    replayable = True
    remedies = {  # the task keeps stop_gradient around the rounding's correction, and tf.round's rounding
        "remove-stop-gradient": "The task's straight-through estimator keeps it, around the rounding's correction "
                                "only: `z + tf.stop_gradient(rounded - z)`, with `z` the clipped `w * x` and "
                                "`rounded` the task's rounding of it, passes the clip's gradient.",
        "keep-with-ste": "The task rounds to the nearest step as `tf.round` does and lets the gradient through: "
                         "`z + tf.stop_gradient(rounded - z)`, with `z` the clipped `w * x` and `rounded` that "
                         "rounding of it."}
    answer = "clipped_gradient"
    # The step q (a power of two, so dividing by it is exact) and the clip range [low * q, high * q]: predictions
    # are multiples of q in that range (0.5 in [-1, 3] in the notebook's text). The visible case puts w * x / q
    # below and above every drawn range, so a gradient that ignores the clip never matches.
    space = Space(default={"q": 0.5, "low": -2, "high": 6},
                  draws={"q": lambda rng: float(rng.choice([0.25, 0.5, 1, 2])),
                         "low": lambda rng: int(rng.integers(-2, 1)), "high": lambda rng: int(rng.integers(4, 8))},
                  wording={**{name: (lambda v, name=name: _step_words(v["q"])[name])
                              for name in ("div", "mul", "what", "pred")},
                           **{name: (lambda v, name=name: _clip_words(v)[name])
                              for name in ("lo", "hi", "lo_text", "hi_text")}})
    statement = """A quantised model predicts ${what} between ${lo_text} and ${hi_text}:
`pred = clip(${pred}, ${lo_text}, ${hi_text})`, with `tf.round`'s rounding (a half goes to the even
neighbour). Where `w * x` lies outside that range the clip holds the
prediction still, so no gradient should pass there. Write `clipped_gradient(w, x, y)` that returns d loss / d w
for `loss = mean((pred - y)²)`: the forward pass uses the clipped, rounded predictions; the backward pass
treats the rounding as the identity where `${lo_text} ≤ w * x ≤ ${hi_text}` and passes 0 outside. `w` is a scalar
variable, `x` and `y` 1-D constants."""
    visible_cases = _STE_CASES
    praise = "the forward pass rounds and clips; the gradient passes the rounding and stops where the clip holds."
    hints = (
        "`tf.clip_by_value` has the backward pass the task asks for: gradient 1 inside its range, 0 outside. "
        "`tf.round` has none at all.",
        "Clip first, `z = tf.clip_by_value(w * x, $lo, $hi)`, then round straight through: "
        "`z + tf.stop_gradient(tf.round(z$div)$mul - z)`.",
    )

    def check_case(self, fn, case, facts):
        w0, x_steps, y_steps = case
        v, q = self.variant, self.variant["q"]
        lo, hi = v["low"] * q, v["high"] * q
        x, y = q * np.array(x_steps), q * np.array(y_steps)
        got = self.call(fn, tf.Variable(w0, dtype=tf.float32), tf.constant(x, tf.float32),
                        tf.constant(y, tf.float32), shown=f"w=tf.Variable({w0})").value
        if got is None:
            raise _none_feedback(fn, facts, "dl_dw", None, "w", _VALUES)
        z = (np.float32(w0) * x.astype(np.float32)).astype(np.float64)  # as TF computes it: exact steps of q
        inside = (z >= lo) & (z <= hi)
        rounded = q * np.round(z / q)
        pred = np.clip(rounded, lo, hi)
        slope = lambda p, mask: 2 * np.mean((p - y) * x * mask)  # noqa: E731 (d loss / d w through the mask)
        round_z = f"tf.round(z{v['div']}){v['mul']}"
        blocked = [Alternative(
            "nothing through the rounding", 0.0, "stop-gradient",
            "The gradient is exactly 0: your `tf.stop_gradient` blocks the whole path through the rounding. The "
            f"straight-through estimator stops only the rounding's correction: `z + tf.stop_gradient({round_z} - z)`"
            " passes `z`'s gradient.")] if facts.calls_to("stop_gradient") else []
        problem = wrong_value("dl_dw", slope(pred, inside), got, [Alternative(
            "the gradient passed outside the range", slope(pred, 1.0), "unclipped-ste",
            f"Your forward pass clips, but your gradient also flows where `w * x` is outside [{v['lo_text']}, "
            f"{v['hi_text']}], where the clip holds the prediction still. Clip before the straight-through "
            f"rounding, `z = tf.clip_by_value(w * x, {v['lo']}, {v['hi']})`, so those entries pass 0."), Alternative(
            "no clip at all", slope(rounded, 1.0), "no-clip",
            f"That is the straight-through gradient of the rounded predictions without the clip: the forward pass "
            f"must also keep them in [{v['lo_text']}, {v['hi_text']}], `tf.clip_by_value(w * x, {v['lo']}, "
            f"{v['hi']})`."), Alternative(
            "the gradient passed on a symmetric range", slope(pred, np.abs(z) <= hi), "unclipped-ste",
            f"Your gradient flows where `|w * x| ≤ {v['hi_text']}`, a symmetric range, but the clip holds the "
            f"prediction still below {v['lo_text']}: pass the gradient only where `{v['lo_text']} ≤ w * x ≤ "
            f"{v['hi_text']}`: clip first, `z = tf.clip_by_value(w * x, {v['lo']}, {v['hi']})`."), Alternative(
            "the gradient without rounding", slope(np.clip(z, lo, hi), inside), "no-rounding",
            "That is the gradient of the clipped predictions without rounding: the forward pass must still use "
            f"the rounded ones, `{v['pred']}`."), Alternative(
            "rounded down", slope(np.clip(q * np.floor(z / q), lo, hi), inside), "wrong-target",
            f"That is the straight-through gradient with the predictions rounded down, `tf.floor(z{v['div']})"
            f"{v['mul']}`; the task rounds to the nearest step, as `tf.round` does."), Alternative(
            "halves rounded up", slope(np.clip(q * np.floor(z / q + 0.5), lo, hi), inside), "round-half-up",
            f"That is the gradient with every half rounded up (`tf.floor(z{v['div']} + 0.5){v['mul']}`); `tf.round` "
            f"takes a half to the even neighbour. Use `tf.round(z{v['div']}){v['mul']}`."), *blocked],
            otherwise="Is the loss the mean squared error of the clipped, rounded predictions?")
        if problem:
            raise problem


ex5_2 = FixTheStep()
ex5_3 = TwoSteps()
ex5_4 = StraightThrough()
