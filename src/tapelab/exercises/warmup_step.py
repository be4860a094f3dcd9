"""Exercise 2.7 of notebook 02_model_variables: find and fix a compiled step whose learning-rate warm-up never
warms up, because its call counter is Python state that runs only while `tf.function` traces the step.

The checker builds steps for fresh models, calls each compiled step several times and, after every call, reads
by how much the weights moved along the call's own gradient: that factor is the warm-up scale the call used.
The sequence of scales tells the known slips apart (frozen at the traced value, one call late, never capped,
no warm-up, shared by two steps) from what the code did rather than from its source.
"""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.checker.variants import Space
from tapelab.checker.wrong_answers import Alternative, because
from tapelab.exercises.keras_cases import seeded_tanh_model, tanh_mse

__all__ = ["ex2_7"]

_LR = 0.1
_ATOL = 1e-4

_GIVEN = """```python
def make_warmup_step(model, optimizer):
    calls = 0

    @tf.function
    def step(x, y):
        nonlocal calls
        calls += 1
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        scale = min(1.0, calls / ${w})
        optimizer.apply([scale * g for g in grads], model.trainable_variables)
        return loss

    return step
```"""


class WarmupStep(Exercise):
    number = "2.7"
    answer = "make_warmup_step"
    replayable = True  # every read of the kernel's state after a call goes through `run`
    # The warm-up's length w (3 in the notebook's text): call t scales the gradients by min(1, t / w). The checker
    # makes w + 2 calls, so the scale reaches 1 and stays there for two calls.
    space = Space(default={"w": 3}, draws={"w": lambda rng: int(rng.choice([2, 4, 5]))})
    statement = ("The factory below builds a compiled training step with a learning-rate warm-up: call number t of "
                 "`step` should scale the gradients by min(1, t / ${w}) before `optimizer.apply`, so the steps grow "
                 "over the first ${w} calls to the full step and stay there. It does not warm up: every call scales "
                 "by the same number.\n\n" + _GIVEN + "\n\nFind why, and write the fixed `make_warmup_step(model, "
                 "optimizer)` in the cell below. Keep `step` compiled with `@tf.function`, its loss and its "
                 "arguments; each step the factory makes counts its own calls. The test builds steps for fresh "
                 "models, calls each several times with tensors, and reads the weights after every call.")
    visible_cases = ((1, 4, 2),)  # (seed, rows per batch, features)
    praise = "the count lived in a variable, so every call of the one traced graph advanced the warm-up."
    hints = (
        "Python code inside a `tf.function` runs only while it is traced. How many times does `calls += 1` run, "
        "and what number did `scale` become in the graph?",
        "Make the counter a variable, created in `make_warmup_step`: `calls = tf.Variable(0.0)`; in `step`, "
        "`calls.assign_add(1.0)` and `scale = tf.minimum(1.0, calls / ${w})` (Python's `min` cannot compare a "
        "tensor while tracing).",
    )

    def _made(self, fn, model, shown):
        # what the check asks of `step` is read in the factory's run, and the weights in each call's: the grader's
        # judge has only a stand-in for `step` and the model as built, and is served what the kernel read
        # (tapelab.checker.replay)
        optimizer = keras.optimizers.SGD(learning_rate=_LR)
        step, is_callable, compiled = self.run(
            lambda: (lambda made: (made, callable(made), hasattr(made, "experimental_get_tracing_count")))(
                fn(model, optimizer)), f"Calling `{self.answer}({shown})`").value
        if not is_callable:
            raise Incorrect(f"`make_warmup_step` returned {'`None`' if step is None else 'a `' + type(step).__name__ + '`'}"
                            ", but should return the compiled function `step(x, y)`. Did you end with `return step`?",
                            cause="no-return" if step is None else None)
        if not compiled:
            raise Incorrect("`make_warmup_step` returned a plain Python function. Keep `@tf.function` on `step`: "
                            "the exercise is about what a compiled step keeps between calls.", cause="not-compiled")
        return step

    def _scales(self, step, model, seed, rows, features, calls, shown) -> list:
        """Call `step` `calls` times on fresh batches; after each, the factor by which the weights moved along
        the call's own gradient at the weights it started from (None where the move is not such a multiple)."""
        rng = np.random.default_rng(seed)
        scales = []
        for call in range(1, calls + 1):
            x = rng.normal(size=(rows, features)).astype(np.float32)
            y = rng.uniform(-1.0, 2.0, size=(rows, 1)).astype(np.float32)

            def called():
                before = [v.numpy().copy() for v in model.trainable_variables]
                value = step(tf.constant(x), tf.constant(y))
                return before, value, [v.numpy() for v in model.trainable_variables]

            before, value, after = self.run(called, f"Calling `step` (call {call}, on {shown})").value
            loss, grads = tanh_mse(before, x, y)
            self._loss_returned(value, loss, call)
            moved = np.concatenate([(b - a).ravel() for b, a in zip(before, after)])
            grad = _LR * np.concatenate([g.ravel() for g in grads])
            big = np.abs(grad) > 1e-3
            scale = float(np.median(moved[big] / grad[big])) if big.any() else 0.0
            scales.append(round(scale, 4) if np.allclose(moved, scale * grad, rtol=1e-3, atol=_ATOL) else None)
        return scales

    def _loss_returned(self, got, want, call) -> None:
        """`step` returns the mean squared error of its batch (`want`), measured before its update."""
        try:
            value = float(np.asarray(got).ravel()[0]) if np.asarray(got).size == 1 else None
        except (TypeError, ValueError):
            value = None
        if value is None or not np.isclose(value, want, rtol=1e-4, atol=1e-6):
            shown = f"{value:.6g}" if value is not None else ("`None`" if got is None else f"a `{type(got).__name__}`")
            raise Incorrect(f"Call {call} of `step` returned {shown}, but should return the batch's loss before the "
                            f"update, {want:.6g}. Does `step` still end with `return loss`, the loss computed under "
                            "the tape?")

    def check_case(self, fn, case, facts):
        seed, rows, features = case
        w = self.variant["w"]
        n = w + 2
        shown = f"a Dense(3)-Dense(1) model with {features} input feature(s)"
        model = self.given(lambda: seeded_tanh_model(seed, features))
        got = self._scales(self._made(fn, model, shown), model, seed, rows, features, n, shown)

        def warm(t):
            return round(min(1.0, t / w), 4)

        calls = range(1, n + 1)
        if None in got:
            first = got.index(None) + 1
            raise Incorrect(f"On call {first} of `step` the weights did not move along that call's gradient of the "
                            "mean squared error (by any factor). Did you keep the given loss, "
                            "`tf.reduce_mean(tf.square(y - model(x, training=True)))`, and apply `scale * g` for "
                            "each gradient with the optimizer given?")
        alternatives = [
            Alternative("frozen at the traced value", [warm(1)] * n, "trace-time-state",
                        f"Every call used {warm(1):g}, the scale of the first call: the code that counts the calls ran "
                        "once, while `tf.function` traced `step` (Python state, or a name rebound to a new tensor), "
                        "and the graph keeps the number it gave. Keep the count in a `tf.Variable` made in "
                        "`make_warmup_step`, change it in place with `assign_add` in `step`, and compute the scale "
                        "from it with TensorFlow operations."),
            Alternative("one call late", [warm(t - 1) for t in calls], "stale-value",
                        "Each call used the scale of the call before it, so the first call did not move the weights. "
                        "Do you compute `scale` from the counter before adding 1 to it?"),
            Alternative("never capped", [round(t / w, 4) for t in calls], "warmup-not-capped",
                        f"The scale went on growing after call {w} ({round((w + 1) / w, 4):g} on call {w + 1}): it is "
                        f"t / {w} without the cap at 1. Take `tf.minimum(1.0, calls / {w})`."),
            Alternative("no warm-up", [1.0] * n, "missing-term",
                        f"Every call made the full step: the warm-up scale min(1, t / {w}) is missing. Multiply each "
                        "gradient by it before `optimizer.apply`."),
            Alternative("no step", [0.0] * n, "no-update",
                        "No call moved the weights. Does `step` still call `optimizer.apply` with the scaled "
                        "gradients and `model.trainable_variables`?"),
        ]
        _judge(f"Calls 1 to {n} of `step`", [warm(t) for t in calls], got, alternatives,
               f"Does call t scale the gradients by min(1, t / {w}), counting the calls in a variable?")
        # a second step, for a fresh model: its warm-up starts again
        other = self.given(lambda: seeded_tanh_model(seed + 1, features))
        again = self._scales(self._made(fn, other, shown), other, seed + 1, rows, features, 2, shown)
        _judge("Then a second step, made for a fresh model: its calls 1 and 2", [warm(1), warm(2)], again, [
            Alternative("shared counter", [warm(n + 1), warm(n + 2)], "shared-state",
                        f"The second step went on from the first step's {n} calls: the two steps share one counter. "
                        "Create the counter variable inside `make_warmup_step`, so that each step it makes gets "
                        "its own.")], "Does each step that `make_warmup_step` makes count its own calls from 0?")


def _judge(calls: str, want: list, got: list, alternatives: list, otherwise: str) -> None:
    """Raise, naming the known slip that gives `got`, when the measured scales are not `want`."""
    if np.allclose(got, want, rtol=1e-3, atol=1e-3):
        return
    says, code = because(want, got, alternatives, otherwise, 1e-3, 1e-3)
    if code is None:
        says = f"No known mistake gives these scales. {says}"
    raise Incorrect(f"{calls} scaled the gradients by {', '.join(f'{s:g}' for s in got)}, but should scale them by "
                    f"{', '.join(f'{s:g}' for s in want)}. {says}", cause=code)


ex2_7 = WarmupStep()
