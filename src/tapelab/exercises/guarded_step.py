"""Exercise 6.5 of notebook 06_fit_vs_custom: a guarded training step that runs inside `tf.function`.

The student's `safe_step(model, optimizer, x, y)` must apply the MSE gradients only when the batch has rows
and the loss and every gradient are finite, return whether it applied them, and let a malformed batch
raise. The checker compiles it with `tf.function` and runs it on a test matrix (happy, boundary, failure
and scale cases), each on the same model reset to zero weights, against a reference SGD step computed eagerly.
"""
from __future__ import annotations

from dataclasses import dataclass

import keras
import numpy as np
import tensorflow as tf

from tapelab.checker.compare import fmt_pair
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect

__all__ = ["GuardedStep", "MatrixCase", "matrix"]

LEARNING_RATE = 0.1
_EITHER = "Is your condition False when the loss or a gradient is NaN or Inf?"


@dataclass(frozen=True)
class MatrixCase:
    """One row of the test matrix: its name, the batch, and what a guarded step must do with it."""

    name: str
    x: np.ndarray
    y: np.ndarray
    applied: bool  # False: the step must leave the weights alone and return False
    raises: bool = False  # a malformed batch: the step must raise, not return


def matrix(features: int = 2, seed: int = 0, large: int = 10_000) -> tuple[MatrixCase, ...]:
    """The matrix for a `Dense(1)` model on `features` inputs: normal, one row, empty, a finite loss with an
    overflowing gradient, a NaN, an overflowing loss, a large batch, and a batch of the wrong width."""
    rng = np.random.default_rng(seed)

    def batch(rows: int, scale: float = 1.0, width: int = features) -> tuple[np.ndarray, np.ndarray]:
        x = (rng.normal(size=(rows, width)) * scale).astype(np.float32)
        return x, (rng.normal(size=(rows, 1)) + 1.0).astype(np.float32)

    x_nan, y_nan = batch(4)
    x_nan[1, 0] = np.nan
    x_huge, y_big = batch(4, 1e21)
    return (
        MatrixCase("a normal batch of 8 rows", *batch(8), applied=True),
        MatrixCase("a batch of one row", *batch(1), applied=True),
        MatrixCase("an empty batch (0 rows)", *batch(0), applied=False),
        MatrixCase("inputs near 1e21 with targets near 1e18 (a finite loss, an overflowing gradient)",
                   x_huge, y_big * 1e18, applied=False),
        MatrixCase("a NaN in the inputs", x_nan, y_nan, applied=False),
        MatrixCase("targets near 1e20 (the loss overflows)", batch(4)[0], batch(4)[1] * 1e20, applied=False),
        MatrixCase(f"a large batch of {large} rows", *batch(large), applied=True),
        MatrixCase(f"a malformed batch ({features + 1} features for a model of {features})",
                   *batch(4, width=features + 1), applied=False, raises=True),
    )


def _model(features: int) -> keras.Model:
    inputs = keras.Input((features,))
    return keras.Model(inputs, keras.layers.Dense(1, kernel_initializer="zeros")(inputs))


def _reference(features: int, case: MatrixCase) -> tuple[list[np.ndarray], float, list[str]]:
    """Eagerly: the weights after one SGD step on `case`, the loss, and what each gradient holds that is not
    finite ("NaN" when it holds one, else "Inf", "" when it is finite). The
    zero `Dense(1)` written out as its two variables, `x @ kernel + bias`: the layer's own ops, without
    building a Keras model for each row."""
    variables = [tf.Variable(tf.zeros((features, 1))), tf.Variable(tf.zeros((1,)))]
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(case.y - (case.x @ variables[0] + variables[1])))
    grads = tape.gradient(loss, variables)
    stepped = [(v - LEARNING_RATE * g).numpy() for v, g in zip(variables, grads)]
    return stepped, float(loss), [_non_finite(g.numpy()) for g in grads]


def _non_finite(values: np.ndarray) -> str:
    return "NaN" if np.isnan(values).any() else "Inf" if np.isinf(values).any() else ""


class GuardedStep(Exercise):
    number = "6.5"
    replayable = True
    answer = "safe_step"
    fixed_because = ("`safe_step` is a guard for any model, optimizer and batch, and holds no number of its own; its "
                     "one formula, the mean squared error, is what the test's bad batches are built on (a finite "
                     "loss with an overflowing gradient exists for the squared error, not for the absolute one), so "
                     "another loss would leave a missing gradient check unseen.")
    visible_cases = ((2, 0),)  # (features, seed): the whole matrix on a Dense(1) of 2 inputs
    praise = "your step runs inside `tf.function`, applies every good batch and refuses every bad one."
    hints = (
        "Compute the loss and the gradients as usual, then one boolean tensor `ok`: "
        "`tf.math.is_finite(loss)` (an empty batch's mean loss is NaN, so this refuses it too), and every "
        "gradient finite (`tf.reduce_all(tf.math.is_finite(g))` for each `g`).",
        "Inside `tf.function` a tensor has no Python value: do not call `.numpy()` or `bool()` on it. Branch "
        "with `tf.cond(ok, apply, skip)`, where `apply` calls `optimizer.apply(grads, variables)` and returns "
        "`tf.constant(True)`, and `skip` returns `tf.constant(False)` (AutoGraph turns a plain `if ok:` into "
        "that `tf.cond`).",
    )

    def check_case(self, fn, case, facts):
        """Every row of the matrix through one compiled step, one model and one optimizer, reset to zero
        weights and zero iterations before each row: `tf.function` traces the step once per case, for batches of
        any number of rows (the batch size relaxed, as `fit`'s train function relaxes it), not once per row. The
        malformed batch gets a trace of its own shapes, so that its error is raised while tracing, where the
        step's own code could catch it."""
        features, seed = case
        model = _model(features)
        optimizer = keras.optimizers.SGD(LEARNING_RATE)
        optimizer.build(model.trainable_variables)  # variables are created eagerly, never inside the graph
        compiled = tf.function(fn, reduce_retracing=True)
        for row in matrix(features, seed):
            for v in model.trainable_variables:
                v.assign(tf.zeros_like(v))
            optimizer.iterations.assign(0)
            self._check_row(tf.function(fn) if row.raises else compiled, model, optimizer, features, row, facts)

    def _check_row(self, compiled, model, optimizer, features: int, row: MatrixCase, facts) -> None:
        shown = f"a `Dense(1)` model on {features} inputs, SGD({LEARNING_RATE}), {row.name}"
        doing = f"Calling `tf.function(safe_step)` on {shown}"
        errors: list[Exception] = []
        any_rows = (tf.TensorSpec((None, features), tf.float32), tf.TensorSpec((None, 1), tf.float32))

        def step():
            try:
                if not row.raises:  # traced once, on the first row; a cache hit after it, whatever the rows
                    compiled.get_concrete_function(model, optimizer, *any_rows)
                return compiled(model, optimizer, tf.constant(row.x), tf.constant(row.y))
            except Exception as error:  # kept whole: the feedback shows only its first line
                errors.append(error)
                raise

        if row.raises:
            outcome = self.run(lambda: _raised(step), doing).value
            if outcome[0] == "raised":
                return  # a malformed batch must raise; any error stops the run, which is the point
            returned = outcome[1]
            raise Incorrect(f"On {row.name} your step returned {_shown(returned)} instead of raising. A batch of "
                            "the wrong shape is a bug in the input pipeline, not a bad batch to skip: did you "
                            "catch the exception? Let it propagate.", cause="error-swallowed")
        try:
            returned = self.run(step, doing).value
        except Incorrect as problem:
            raise self._explain_graph_error(problem, errors) from None
        flag = _flag(returned)
        if flag is None:
            raise Incorrect(f"On {shown} your step returned {_shown(returned)}, but should return one boolean "
                            "tensor: whether it applied the gradients. Did you forget to return the result of "
                            "`tf.cond`?", cause="no-return" if returned is None else None)
        # the optimizer counts every `apply`, even of zero gradients
        got, applied = self.run(lambda: ([v.numpy() for v in model.trainable_variables],
                                         int(optimizer.iterations.numpy())),
                                "Reading the weights and the optimizer's `iterations` after your step").value
        stepped, loss, non_finite = _reference(features, row)
        if row.applied:
            self._check_applied(flag, applied, got, stepped, shown)
            return
        if applied and not flag:
            raise Incorrect(f"On {shown} the step must be refused. Your step returned False, but the optimizer "
                            f"took a step anyway (its `iterations` is {applied}; the weights are now "
                            f"{_weights(got)}). Did you call `optimizer.apply` outside the branch that runs only "
                            "when the step is good?", cause="applied-anyway")
        if applied or flag:
            raise self._wrongly_applied(shown, loss, non_finite, bool(applied), facts)

    def _check_applied(self, flag: bool, applied: int, got, stepped, shown: str) -> None:
        if not flag or applied != 1:
            steps = {0: "took no step", 1: "took one step"}.get(applied, f"took {applied} steps")
            raise Incorrect(f"On {shown} the step is good and must be applied once, but your step returned "
                            f"{flag} and the optimizer {steps}. Is your condition True for a finite loss and "
                            "finite gradients on a batch with rows, and do you apply the gradients once?")
        for name, g, want in zip(("kernel", "bias"), got, stepped):
            if not np.allclose(g, want, rtol=1e-5, atol=1e-6):
                got_text, want_text = fmt_pair(g, want, 1e-5, 1e-6)
                raise Incorrect(f"On {shown} the `{name}` after your step is {got_text}, but one SGD step on the "
                                f"mean squared error gives {want_text}. Did you apply the gradients of "
                                "`tf.reduce_mean(tf.square(y - model(x, training=True)))` once, with `optimizer`?")

    def _wrongly_applied(self, shown: str, loss: float, non_finite: list[str], moved: bool, facts) -> Incorrect:
        """A bad batch the step accepted: say which check the numbers and the code show was missing. A step that
        tests with `tf.math.is_nan` alone lets an infinity through; with `is_nan` beside another test, which value
        each guards is not known, so no check is said to be missing."""
        did = "applied it (the optimizer took a step)" if moved else "returned True"
        head = f"On {shown} the step must be refused, but your step {did}."
        bad = [name for name, kind in zip(("kernel", "bias"), non_finite) if kind]
        infinite = [name for name, kind in zip(("kernel", "bias"), non_finite) if kind == "Inf"]
        tests = {name for name in ("is_nan", "is_finite", "is_inf") if facts.calls_to(name)}
        if np.isinf(loss) or np.isfinite(loss) and infinite:
            if tests == {"is_nan"}:
                what = (f"the loss is {loss}" if np.isinf(loss) else
                        f"the loss is finite but the gradient of `{'`, `'.join(infinite)}` holds Inf")
                return Incorrect(f"{head} Here {what}, and your step tests with `tf.math.is_nan`, which is False "
                                 "for an infinity, so it lets this step through. Test with `tf.math.is_finite`, "
                                 "False for NaN and for Inf.",
                                 cause="loss-not-checked" if np.isinf(loss) else "gradients-not-checked")
            if "is_nan" in tests:
                return Incorrect(f"{head} {_EITHER}")
        if np.isfinite(loss) and bad:
            return Incorrect(f"{head} Here the loss is finite ({loss:.3g}) but the gradient of "
                             f"`{'`, `'.join(bad)}` is not: did you check only the loss? Check every gradient "
                             "too, `tf.reduce_all(tf.math.is_finite(g))`.", cause="gradients-not-checked")
        if not np.isfinite(loss) and not bad:
            return Incorrect(f"{head} Here every gradient is finite but the loss is {loss} (a mean over no rows "
                             "or an overflow): did you check only the gradients? Check the loss too, "
                             "`tf.math.is_finite(loss)`.", cause="loss-not-checked")
        return Incorrect(f"{head} {_EITHER}")

    def _explain_graph_error(self, problem: Incorrect, errors: list[Exception]) -> Incorrect:
        """A step that fails only because it runs in a graph: it asked a symbolic tensor for its value."""
        text = " ".join(f"{type(e).__name__}: {e}" for e in errors) or str(problem)
        if any(needle in text for needle in ("numpy() is only available", "as a Python `bool`",
                                             "OperatorNotAllowedInGraphError", "SymbolicTensor")):
            return Incorrect(f"{problem} Inside `tf.function` a tensor has no value yet, so `.numpy()`, `float()` "
                             "or `bool()` of it fails. Compute the check with tensor ops "
                             "(`tf.math.is_finite`, `tf.reduce_all`) and branch with `tf.cond`.",
                             cause="eager-only-check")
        return problem


def _raised(step) -> tuple:
    """("raised",) when `step()` raised an error (the stub's own `NotImplementedError` is re-raised: `run` says to
    replace it), else ("returned", what it returned): a malformed batch's refusal is the value the check reads."""
    try:
        return "returned", step()
    except NotImplementedError as error:
        if str(error) and "raise NotImplementedError" not in str(error):
            return ("raised",)
        raise
    except Exception:
        return ("raised",)


def _flag(value) -> bool | None:
    """The boolean a step returned (a bool tensor, a NumPy bool or a Python bool), or None if it is not one."""
    try:
        array = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    except Exception:
        return None
    if array.shape != () or array.dtype != np.bool_:
        return None
    return bool(array)


def _shown(value) -> str:
    if value is None:
        return "`None`"
    flag = _flag(value)
    return f"`{flag}`" if flag is not None else f"a `{type(value).__name__}`"


def _weights(values: list[np.ndarray]) -> str:
    return ", ".join(np.array2string(np.asarray(v).ravel(), precision=4) for v in values)
