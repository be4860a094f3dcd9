"""Exercises of notebook 03_watching_tensors: watching constants, gradients of intermediates,
input gradients (saliency), watching only the input, and per-example Jacobians."""
from __future__ import annotations

import ast
import inspect
import re
import textwrap

import keras
import numpy as np
import tensorflow as tf

from tapelab.compare import allclose, fmt, mismatch, to_numpy
from tapelab.exercise import Exercise
from tapelab.feedback import Incorrect
from tapelab.mistakes import factor_cause, none_cause
from tapelab.oracle import numeric_gradient

__all__ = ["ex3_1", "ex3_2", "ex3_3", "ex3_4"]


# --- what the student's source shows -------------------------------------------------------

def _is_tape_with(node: ast.AST) -> bool:
    return isinstance(node, ast.With) and any("GradientTape" in ast.unparse(i.context_expr) for i in node.items)


def _watch_calls(stmt: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == "watch"]


def watched_too_late(fn) -> str | None:
    """The name passed to `tape.watch` after an earlier statement of the tape block already read it."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    for block in (n for n in ast.walk(tree) if _is_tape_with(n)):
        read: set[str] = set()
        for stmt in block.body:
            calls = _watch_calls(stmt)
            for call in calls:
                for arg in call.args:
                    if isinstance(arg, ast.Name) and arg.id in read:
                        return arg.id
            if not calls:
                read |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return None


def _why_none(fn, facts, target: str, source: str) -> str:
    """Why the gradient with respect to a constant `source` came back None."""
    late = watched_too_late(fn)
    if late:
        return (f"`tape.watch({late})` comes after a line that already used `{late}`, and the tape only records "
                f"operations on a tensor from the moment it is watched. Call `tape.watch({late})` "
                "before computing anything from it.")
    return none_cause(facts, target, source, source_is_constant=True)


def _wrong_value(name: str, expected, got, *causes: str | None) -> Incorrect:
    base = mismatch(expected, got, name) or f"`{name}` is {fmt(got)}, but should be {fmt(expected)}."
    cause = next((c for c in causes if c), None) or factor_cause(expected, got)
    return Incorrect(f"{base} {cause}" if cause else base)


class _WatchExercise(Exercise):
    """An exercise whose student code may turn a None gradient into a confusing error later on."""

    def check_case(self, fn, case, facts):
        self._fn, self._facts = fn, facts
        self.check_one(fn, case, facts)

    def check_one(self, fn, case, facts) -> None:
        raise NotImplementedError

    def _explain_error(self, error: Exception, shown: str) -> str:
        text = str(error)
        if "of type 'ndarray'" in text:  # the array itself, printed over many lines, is noise
            try:
                error = type(error)(re.sub(r"Passed in object .*? of type", "Passed in object of type", text,
                                           flags=re.S))
            except Exception:  # an exception type that cannot be rebuilt from a message: keep it
                pass
        message = super()._explain_error(error, shown)
        if "Attempt to convert a value (None)" in text:
            message += (" A gradient was `None` and the next operation could not use it. "
                        + _why_none(self._fn, self._facts, "y", "x"))
        return message


# --- tiny deterministic models the checkers build ------------------------------------------

def _tiny_model(n_in: int, hidden: int, n_out: int, seed: int) -> tuple[keras.Model, list[np.ndarray]]:
    """Dense(tanh) -> Dense with weights drawn from `seed`, built without touching Keras' RNG."""
    rng = np.random.default_rng(seed)
    weights = [rng.normal(0, 0.8, (n_in, hidden)), rng.normal(0, 0.3, hidden),
               rng.normal(0, 0.8, (hidden, n_out)), rng.normal(0, 0.3, n_out)]
    weights = [w.astype(np.float32) for w in weights]
    zeros = {"kernel_initializer": "zeros", "bias_initializer": "zeros"}
    model = keras.Sequential([keras.Input((n_in,)), keras.layers.Dense(hidden, activation="tanh", **zeros),
                              keras.layers.Dense(n_out, **zeros)])
    model.set_weights(weights)
    return model, [w.astype(np.float64) for w in weights]


def _forward(weights: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    w1, b1, w2, b2 = weights
    return np.tanh(x @ w1 + b1) @ w2 + b2


def _model_case(spec, n_out: int = 1):
    """(model, float64 weights, float32 x) for a case spec (batch, n_in, hidden, seed)."""
    batch, n_in, hidden, seed = spec
    model, weights = _tiny_model(n_in, hidden, n_out, seed)
    x = np.random.default_rng(seed + 1000).normal(size=(batch, n_in)).astype(np.float32)
    return model, weights, x


def _input_gradient(weights, x) -> np.ndarray:
    """d sum(model(x)) / dx by float64 central differences."""
    return numeric_gradient(lambda x_: _forward(weights, x_).sum(), x)


# --- 3.1 ------------------------------------------------------------------------------------

class IntermediateGradient(_WatchExercise):
    number = "3.1"
    answer = "intermediate_gradient"
    visible_cases = ((1.0, 2.0, -0.5),)
    praise = "an intermediate result is a source like any other, once the tape has recorded it."
    hints = (
        "`x` is a constant, so the tape records nothing about it until you watch it.",
        "Inside the tape: `tape.watch(x)` first, then `y = x * x` and `z = y * y`.",
        "After the `with` block, `return tape.gradient(z, y)`: the source is `y`, not `x`.",
    )
    solution_code = """
def intermediate_gradient(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    return tape.gradient(z, y)
"""
    why = ("Once `x` is watched, every tensor computed from it is recorded too, so `y` can be a source: "
           "`tape.gradient(z, y)` replays the record only from `z` back to `y`.")

    def check_one(self, fn, values, facts):
        x = tf.constant(values, tf.float32)
        got = self.call(fn, x, shown=f"x={fmt(x)}").value
        x64 = np.array(values, np.float64)
        expected = numeric_gradient(lambda y_: float(np.sum(y_**2)), x64**2)
        if got is None:
            raise Incorrect("`intermediate_gradient(x)` returned `None`. " + _why_none(fn, facts, "z", "x"))
        if mismatch(expected, got, "dz_dy"):
            dz_dx = allclose(4 * x64**3, got) and (
                "That is dz/dx. Pass the intermediate as the source: `tape.gradient(z, y)`.")
            dy_dx = allclose(2 * x64, got) and "That is dy/dx. The target is `z` and the source is `y`."
            raise _wrong_value("dz_dy", expected, got, dz_dx, dy_dx)
        if facts.found and facts.tapes == 0:
            raise Incorrect("Exercise 3.1: your numbers are right, but this exercise is about the tape. "
                            "Compute them with `tf.GradientTape()` rather than by hand.")


# --- 3.2 ------------------------------------------------------------------------------------

class InputSaliency(_WatchExercise):
    number = "3.2"
    answer = "input_saliency"
    visible_cases = ((3, 4, 5, 7),)
    praise = "the magnitude of the input gradient says how much each input feature moves the output."
    hints = (
        "`x` arrives as a NumPy array, and a tape can only watch TensorFlow tensors and variables.",
        "Convert it with `x = tf.constant(x)`, then inside the tape `tape.watch(x)` and `y = model(x)`.",
        "`return tf.abs(tape.gradient(y, x))`: the saliency is the size of the gradient, not its sign.",
    )
    solution_code = """
def input_saliency(model, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = model(x)
    return tf.abs(tape.gradient(y, x))
"""
    why = ("A NumPy array is not on the tape, so it is converted to a tensor and watched; the gradient of "
           "the output with respect to that tensor, taken in absolute value, ranks the inputs by influence.")

    def check_one(self, fn, spec, facts):
        model, weights, x = _model_case(spec)
        got = self.call(fn, model, x, shown=f"model, x of shape {x.shape}").value
        signed = _input_gradient(weights, x.astype(np.float64))
        expected = np.abs(signed)
        if got is None:
            raise Incorrect("`input_saliency(model, x)` returned `None`. " + _why_none(fn, facts, "y", "x"))
        if isinstance(got, (list, tuple)):
            raise Incorrect(f"`input_saliency(model, x)` returned a {type(got).__name__} of {len(got)} items, "
                            f"but should return one tensor of shape {x.shape}, like `x`. Did you take the "
                            "gradient with respect to the model's weights instead of the input `x`?")
        if mismatch(expected, got, "saliency"):
            kept_sign = allclose(signed, got) and (
                "Those are the signed gradients: the saliency is their magnitude. Did you forget `tf.abs`?")
            raise _wrong_value("saliency", expected, got, kept_sign)


# --- 3.3 ------------------------------------------------------------------------------------

class InputOnlyGradient(_WatchExercise):
    number = "3.3"
    answer = "input_only_gradient"
    visible_cases = ((2, 3, 4, 21),)
    praise = "the tape recorded the input and nothing else: no weight was watched."
    hints = (
        "By default a tape watches every trainable variable it sees used, the model's weights included.",
        "Open the tape with `tf.GradientTape(watch_accessed_variables=False)` and call `tape.watch(x)` yourself.",
        "Inside: `tape.watch(x)`, `y = model(x)`; after: `return tape.gradient(y, x), tape.watched_variables()`.",
    )
    solution_code = """
def input_only_gradient(model, x):
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = model(x)
    return tape.gradient(y, x), tape.watched_variables()
"""
    why = ("With `watch_accessed_variables=False` the tape records only what you watch, so it keeps no record "
           "of the weights you do not need and `watched_variables()` comes back empty.")

    def check_one(self, fn, spec, facts):
        model, weights, x = _model_case(spec)
        got = self.call(fn, model, tf.constant(x), shown=f"model, x of shape {x.shape}").value
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            raise Incorrect("`input_only_gradient` should return a pair `(gradient, watched)`, "
                            f"but it returned {fmt(got) if got is None else type(got).__name__}.")
        gradient, watched = got
        expected = _input_gradient(weights, x.astype(np.float64))
        if gradient is None:
            raise Incorrect("`gradient` is `None`. " + _why_none(fn, facts, "y", "x"))
        if mismatch(expected, gradient, "gradient"):
            raise _wrong_value("gradient", expected, gradient)
        if not isinstance(watched, (list, tuple)):
            raise Incorrect(f"`watched` is a `{type(watched).__name__}`, but should be what "
                            "`tape.watched_variables()` returns (a tuple).")
        if len(watched) > 0:
            names = ", ".join(f"`{getattr(v, 'name', v)}`" for v in watched[:4])
            raise Incorrect(f"`watched` holds {len(watched)} variables ({names}), but should be empty. By default "
                            "a tape watches every trainable variable the model reads. Did you open it with "
                            "`tf.GradientTape(watch_accessed_variables=False)`?")
        if not facts.calls_to("watched_variables") and facts.found:
            raise Incorrect("`watched` should come from the tape itself: return `tape.watched_variables()`.")


# --- 3.4 ------------------------------------------------------------------------------------

class PerExampleJacobian(_WatchExercise):
    number = "3.4"
    answer = "per_example_jacobian"
    visible_cases = ((4, 5, 6, 3, 31),)
    praise = "one matrix of partial derivatives per example, each of shape (outputs, inputs)."
    hints = (
        "`tape.gradient` sums over the outputs; a Jacobian keeps one row per output.",
        "Row i of the output depends only on row i of the input, so you want `tape.batch_jacobian`, "
        "not `tape.jacobian`.",
        "Watch `x`, compute `y = model(x)` inside the tape, then `return tape.batch_jacobian(y, x)`.",
    )
    solution_code = """
def per_example_jacobian(model, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = model(x)
    return tape.batch_jacobian(y, x)
"""
    why = ("`batch_jacobian` computes dy[i]/dx[i] for each example i and skips the cross-example blocks, "
           "which are zero when examples do not interact, giving shape (batch, outputs, inputs).")

    def check_one(self, fn, case, facts):
        batch, n_in, hidden, n_out, seed = case
        model, weights, x = _model_case((batch, n_in, hidden, seed), n_out)
        got = self.call(fn, model, tf.constant(x), shown=f"model, x of shape {x.shape}").value
        x64 = x.astype(np.float64)
        expected = np.stack([
            np.stack([numeric_gradient(lambda row, o=o: _forward(weights, row[None])[0, o], x64[i])
                      for o in range(n_out)])
            for i in range(batch)])
        if got is None:
            raise Incorrect("`per_example_jacobian(model, x)` returned `None`. " + _why_none(fn, facts, "y", "x"))
        try:
            shape = tuple(to_numpy(got).shape)
        except (TypeError, ValueError):
            shape = None
        if shape == (batch, n_out, batch, n_in):
            raise Incorrect(
                f"`jacobian` has shape {shape}, but should have shape {expected.shape}. That is the full "
                "`tape.jacobian`: it pairs every output row with every input row, mostly zeros. "
                "Did you mean `tape.batch_jacobian(y, x)`?")
        if shape == (batch, n_in):
            raise Incorrect(
                f"`jacobian` has shape {shape}, the shape of `x`, but should have shape {expected.shape}. "
                "`tape.gradient` sums over the outputs; a Jacobian keeps one row per output. "
                "Did you mean `tape.batch_jacobian(y, x)`?")
        if shape == expected.shape and not np.any(to_numpy(got)):
            raise Incorrect("`jacobian` is all zeros: `tape.batch_jacobian` gives zeros, not `None`, when the "
                            "tape has no record of `x`. " + _why_none(fn, facts, "y", "x"))
        if mismatch(expected, got, "jacobian"):
            raise _wrong_value("jacobian", expected, got)


ex3_1 = IntermediateGradient()
ex3_2 = InputSaliency()
ex3_3 = InputOnlyGradient()
ex3_4 = PerExampleJacobian()
