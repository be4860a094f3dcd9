"""Exercises of notebook 03_watching_tensors: watching constants, gradients of intermediates,
integrated gradients (in path_attribution), watching one weight only, and per-example Jacobians."""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from tapelab.checker.wrong_answers import Alternative, wrong_value
from tapelab.checker.compare import agrees, fmt, to_numpy
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.checker.explanations import none_feedback
from tapelab.checker.oracle import numeric_gradient
from tapelab.checker.variants import Space
from tapelab.exercises.path_attribution import ex3_2, forward, model_case

__all__ = ["ex3_1", "ex3_2", "ex3_3", "ex3_4"]


class _WatchExercise(Exercise):
    """An exercise whose student code may turn a None gradient into a confusing error later on: its `x` is a
    constant, so such an error is explained from the student's own gradient call."""

    parameter_kinds = {"x": "constant"}


def _input_gradient(weights, x) -> np.ndarray:
    """d sum(model(x)) / dx by float64 central differences."""
    return numeric_gradient(lambda x_: forward(weights, x_).sum(), x)


_CONSTANT_X = {"x": "constant"}  # every checker here passes `x` as a tensor, never a variable


def _differentiates_itself(facts, like: np.ndarray, target: str) -> list[Alternative]:
    """Ones everywhere from a call whose target is its source (`tape.gradient(y, y)`), if the code shows one;
    `target` is the name the task gives the target."""
    call = facts.returned_call()
    if call is None or call.target != call.source:
        return []
    return [Alternative("the source differentiated by itself", np.ones_like(like), "target-is-source",
                        f"`{call.text()}` differentiates `{call.source}` by itself, which gives ones. Did you mean "
                        f"`{call.tape}.{call.method}({target}, {call.source})`?")]


# --- 3.1 ------------------------------------------------------------------------------------

# The factor c of the loss c·Σ(logits − targets)², whose gradient with respect to the logits is 2c·(logits − targets):
# 0.5 in the notebook's text (the gradient is the residual itself).
_FACTORS = (1.0, 2.0, 1.5, 0.25)


def _logit_case(spec):
    """(x, w, targets) as float32 NumPy arrays for a case spec (batch, n_in, n_out, seed)."""
    batch, n_in, n_out, seed = spec
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(size=shape).round(2).astype(np.float32)
                 for shape in ((batch, n_in), (n_in, n_out), (batch, n_out)))


class IntermediateGradient(_WatchExercise):
    number = "3.1"
    replayable = True
    parameter_kinds = {"x": "constant", "w": "variable", "targets": "constant"}
    remedies = {"persistent": (
        "No second call is needed: the tape gives dloss/dlogits directly, `tape.gradient(loss, logits)`.")}
    answer = "logit_gradient"
    # The factor c of the squared error (0.5 in the notebook's text). Every draw differs from 0.5, so the
    # residual logits − targets (the default's answer) is never right on another variant.
    space = Space(default={"c": 0.5}, draws={"c": lambda rng: _FACTORS[int(rng.integers(len(_FACTORS)))]},
                  wording={"two_c": lambda v: f"{2 * v['c']:g}"})
    statement = ("Write `logit_gradient(x, w, targets)` for a linear layer: `x` (batch, inputs) and `targets` "
                 "(batch, outputs) are constant tensors, `w` is a `tf.Variable` (inputs, outputs). Compute "
                 "`logits = x @ w` and `loss = ${c} * tf.reduce_sum((logits - targets) ** 2)` under a tape, and "
                 "return dloss/dlogits: one number per logit, shape (batch, outputs).")
    visible_cases = ((3, 4, 2, 11),)
    praise = "the logits are a source like any other: the tape recorded them because `w` is watched."
    hints = (
        "`w` is a trainable variable, so the tape watches it, and everything computed from it, by itself.",
        "Compute `logits` and `loss` inside the `with` block; the source of the gradient is `logits`, not `w`.",
    )

    def check_case(self, fn, spec, facts):
        x, w, targets = _logit_case(spec)
        args = (tf.constant(x), tf.Variable(w), tf.constant(targets))
        got = self.call(fn, *args, shown=f"x of shape {x.shape}, w of shape {w.shape}, targets of shape {targets.shape}").value
        c = self.variant["c"]
        x64, w64, t64 = (a.astype(np.float64) for a in (x, w, targets))
        residual = x64 @ w64 - t64
        if got is None:
            raise none_feedback("`logit_gradient(x, w, targets)` returned `None`.", facts, facts.returned_call(),
                                self.parameter_kinds)
        problem = wrong_value("dloss_dlogits", 2 * c * residual, got, [
            Alternative("dloss/dw", x64.T @ (2 * c * residual), "wrong-source",
                        "That is dloss/dw, the gradient for the weights. Pass the logits as the source: "
                        "`tape.gradient(loss, logits)`."),
            Alternative("dloss/dtargets", -2 * c * residual, "wrong-source",
                        "That is dloss/dtargets, the negative of the answer. The source is `logits`."),
            Alternative("the loss itself", c * np.sum(residual**2), "loss-for-gradient",
                        "That is the loss, not its gradient: return `tape.gradient(loss, logits)`."),
            Alternative("the residual logits − targets", residual, "constant-factor",
                        f"That is the residual logits − targets, without the loss's factor: the derivative of "
                        f"{c:g}·r² is {2 * c:g}·r. Did you compute it by hand rather than with the tape?"),
            *_differentiates_itself(facts, residual, "loss")])
        self._raise_departed(problem, fn, args, lambda x_, w_, t_: 2 * c * (x_ @ w_ - t_))
        if facts.found and facts.tapes == 0:
            raise Incorrect("Exercise 3.1: your numbers are right, but this exercise is about the tape. "
                            "Compute them with `tf.GradientTape()` rather than by hand.", cause="no-tape-used")


# --- 3.3 ------------------------------------------------------------------------------------

_PARTS = ("kernel", "bias")


def _weight_gradients(weights, x) -> dict[tuple[int, str], np.ndarray]:
    """d sum(model(x)) / d each weight of the tiny model, by the chain rule in float64, keyed (layer, part)."""
    w1, b1, w2, b2 = weights
    h = np.tanh(x @ w1 + b1)
    upstream = np.ones((x.shape[0], w2.shape[1]))
    dz = (upstream @ w2.T) * (1 - h**2)
    return {(0, "kernel"): x.T @ dz, (0, "bias"): dz.sum(0), (1, "kernel"): h.T @ upstream, (1, "bias"): upstream.sum(0)}


def _unwatched_weight(facts) -> Incorrect | None:
    """Why a weight's gradient is None when an input-only tape ran the model: the engine cannot see that
    `model(x)` reads the weight, so the checker, which knows it does, says whether the watch is missing or late."""
    call = facts.returned_call(0) if facts.found else None
    tape = facts.tape(call.tape) if call is not None else None
    made = facts.assignments_of(call.source, before=call.line) if tape is not None else []
    if made and made[-1].made_by == "variable":
        return Incorrect(f"`gradient` is `None`: `{call.source} = {made[-1].value}` makes a new variable holding a copy "
                         f"of the values, but `model(x)` still computes with its own weight, so `y` does not depend "
                         f"on `{call.source}`. Did you mean to watch the model's own weight, without a copy?",
                         cause="not-connected")
    if tape is None or tape.watch_accessed:
        return None
    runs = [a.line for a in facts.assignments if "model" in a.reads and tape.contains(a.line)]
    if not runs:
        return None
    watch = tape.watch_line(call.source)
    if watch is None:
        return Incorrect(f"`gradient` is `None`: `{tape.name}` was opened with `watch_accessed_variables=False`, so "
                         f"it records only what you watch, and it never watches `{call.source}`. Did you call "
                         f"`{tape.name}.watch({call.source})` before `model(x)`?", cause="not-watched")
    if watch > runs[0]:
        return Incorrect(f"`gradient` is `None`: `{tape.name}.watch({call.source})` comes after the model ran, and a "
                         "tape only records operations on a variable from the moment it is watched. Did you call "
                         f"`{tape.name}.watch({call.source})` before computing anything from it?",
                         cause="watched-too-late")
    return None


class OneWeightGradient(_WatchExercise):
    number = "3.3"
    replayable = True
    answer = "one_weight_gradient"
    # Which weight of the two-layer model is the source, as (layer, part): the first layer's kernel in the
    # notebook's text. The last layer's bias is never drawn: its gradient of a summed output is the batch size.
    space = Space(default={"which": (0, "kernel")},
                  draws={"which": lambda rng: ((0, "bias"), (1, "kernel"))[int(rng.integers(2))]},
                  wording={"layer": lambda v: str(v["which"][0]), "part": lambda v: v["which"][1]})
    statement = ("Write `one_weight_gradient(model, x)` that returns a pair `(gradient, watched)`: the gradient of "
                 "`y = model(x)` with respect to `model.layers[${layer}].${part}` alone (`tape.watch` takes its `.value`), "
                 "and `tape.watched_variables()` of your tape, which must hold that one variable and nothing else.")
    visible_cases = ((2, 3, 4, 21),)
    praise = "the tape recorded the one weight you asked about and left the others alone."
    hints = (
        "By default a tape watches every trainable variable it sees used, so it would list all the model's weights.",
        "Open the tape with `tf.GradientTape(watch_accessed_variables=False)` and watch "
        "`model.layers[${layer}].${part}.value` yourself, before calling the model.",
    )

    @property
    def remedies(self) -> dict[str, str]:
        watch = self.variant.fill("`tape.watch(model.layers[${layer}].${part}.value)`")
        return {"watch-the-input": f"Did you mean to watch the one weight's TensorFlow variable, {watch}?",
                "then-watch-the-input": f"then watch the one weight's TensorFlow variable, {watch}."}

    def check_case(self, fn, spec, facts):
        model, weights, x = model_case(spec)
        got = self.call(fn, model, tf.constant(x), shown=f"model, x of shape {x.shape}").value
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            raise Incorrect("`one_weight_gradient` should return a pair `(gradient, watched)`, "
                            f"but it returned {fmt(got) if got is None else type(got).__name__}.")
        gradient, watched = got
        layer, part = self.variant["which"]
        source = f"model.layers[{layer}].{part}"
        gradients = _weight_gradients(weights, x.astype(np.float64))
        expected = gradients[(layer, part)]
        if isinstance(gradient, (list, tuple)) and agrees(expected, watched):
            raise Incorrect("Your pair is the right two things in the wrong order: the first item is the list of "
                            "watched variables and the second the gradient. Return `(gradient, watched)`.",
                            cause="swapped-results")
        if gradient is None:
            raise _unwatched_weight(facts) or none_feedback("`gradient` is `None`.", facts, facts.returned_call(0),
                                                            _CONSTANT_X)
        problem = wrong_value("gradient", expected, gradient, [
            *(Alternative(f"the gradient of model.layers[{i}].{p}", g, "wrong-source",
                          f"That is the gradient of `model.layers[{i}].{p}`; the task asks for `{source}`.")
              for (i, p), g in gradients.items() if (i, p) != (layer, part)),
            Alternative("the gradient of the input x", _input_gradient(weights, x.astype(np.float64)), "wrong-source",
                        f"That is the gradient with respect to the input `x`; the task asks for `{source}`.")])
        if problem:
            raise problem
        if not isinstance(watched, (list, tuple)):
            raise Incorrect(f"`watched` is a `{type(watched).__name__}`, but should be what "
                            "`tape.watched_variables()` returns (a tuple).", cause="not-from-tape")
        if facts.found and not facts.calls_to("watched_variables"):
            raise Incorrect("`watched` should come from the tape itself: return `tape.watched_variables()`.",
                            cause="not-from-tape")
        used = facts.returned_call(0)
        tape = facts.tape(used.tape) if used is not None else None
        if tape is not None and tape.watch_accessed and facts.tapes > 1:
            raise Incorrect(f"`gradient` comes from `{used.text()}`, and `{tape.name}` watches every variable it "
                            "touches (it has no `watch_accessed_variables=False`), so it recorded all the weights; "
                            "`watched` comes from another tape. Compute the gradient on the tape whose watched "
                            "variables you return, opened with `watch_accessed_variables=False`.",
                            cause="weights-watched")
        count, others, names, path = self.run(lambda: _watched_beside(watched, getattr(model.layers[layer], part)),
                                              "Reading the variables your tape watched").value
        if others or count != 1:
            why = ("By default a tape watches every trainable variable the model reads. Did you open it with "
                   "`tf.GradientTape(watch_accessed_variables=False)`?"
                   if tape is not None and tape.watch_accessed else
                   "Your tape watches only what you pass to `tape.watch`: watch that one variable alone.")
            raise Incorrect(f"`watched` holds {count} variables ({names}), but should hold only "
                            f"`{source}` (`{path}`). {why}", cause="weights-watched")


def _watched_beside(watched, target) -> tuple[int, int, str, str]:
    """What the tape's `watched` holds, by identity with the model's own weight `target` (its Keras variable or the
    TensorFlow variable behind it): how many variables, how many others, the first four's names, and the
    weight's path."""
    others = [v for v in watched if v is not target.value and v is not target]
    names = ", ".join(f"`{getattr(v, 'path', getattr(v, 'name', v))}`" for v in watched[:4]) or "nothing"
    return len(watched), len(others), names, target.path


# --- 3.4 ------------------------------------------------------------------------------------

def _softmax_jacobians(logits: np.ndarray, temperature: float) -> np.ndarray:
    """d softmax(logits[i] / T) / d logits[i] for every row i: (diag(p) − p pᵀ) / T, in float64."""
    z = logits.astype(np.float64) / temperature
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return (np.einsum("bi,ij->bij", p, np.eye(p.shape[1])) - np.einsum("bi,bj->bij", p, p)) / temperature


class PerExampleJacobian(_WatchExercise):
    number = "3.4"
    replayable = True
    parameter_kinds = {"logits": "constant"}
    answer = "softmax_jacobian"
    # The temperature T of the softmax (2 in the notebook's text); a draw is never 1, so a softmax without the
    # temperature is a wrong answer on every variant.
    space = Space(default={"t": 2}, draws={"t": lambda rng: (3, 4, 0.5)[int(rng.integers(3))]})
    statement = ("Write `softmax_jacobian(logits)` that returns, for every example i of the batch, the Jacobian of "
                 "`p = tf.nn.softmax(logits / ${t})` (a probability per class) with respect to `logits`: "
                 "the matrix of dp[i, k] / dlogits[i, j]. `logits` is a constant tensor of shape (batch, classes); "
                 "the result has shape (batch, classes, classes).")
    visible_cases = ((4, 3, 41),)
    praise = "one dense (classes, classes) block per example: a softmax mixes the classes of an example, never the examples."
    hints = (
        "A softmax ties every class of an example to the others, so each example has a full matrix, not a "
        "gradient: the tape computes it for you.",
        "Watch `logits`, compute `p` inside the tape, and remember that example i's probabilities depend only "
        "on example i's logits.",
    )

    def check_case(self, fn, case, facts):
        batch, classes, seed = case
        logits = np.random.default_rng(seed).normal(0, 1.5, (batch, classes)).round(2).astype(np.float32)
        got = self.call(fn, tf.constant(logits), shown=f"logits of shape {logits.shape}").value
        t = self.variant["t"]
        expected = _softmax_jacobians(logits, t)
        if got is None:
            raise none_feedback("`softmax_jacobian(logits)` returned `None`.", facts, facts.returned_call(),
                                self.parameter_kinds)
        try:
            shape = tuple(to_numpy(got).shape)
        except (TypeError, ValueError):
            shape = None
        if shape == (batch, classes, batch, classes):
            raise Incorrect(
                f"`jacobian` has shape {shape}, but should have shape {expected.shape}. That is the full "
                "`tape.jacobian`: it pairs every example's probabilities with every example's logits, mostly zeros. "
                "Did you mean `tape.batch_jacobian(p, logits)`?", cause="full-jacobian")
        if shape == (batch, classes):
            raise Incorrect(
                f"`jacobian` has shape {shape}, the shape of `logits`, but should have shape {expected.shape}. "
                "`tape.gradient` sums over the outputs" + ("" if not np.allclose(to_numpy(got), 0, atol=1e-6) else
                                                           " (a softmax's outputs sum to 1, so that gradient is zero)")
                + "; a Jacobian keeps one row per output. Did you mean `tape.batch_jacobian(p, logits)`?",
                cause="gradient-not-jacobian")
        if shape == expected.shape and not np.any(to_numpy(got)):
            raise none_feedback("`jacobian` is all zeros: `tape.batch_jacobian` gives zeros, not `None`, when the "
                                "tape has no record of the source.", facts, facts.returned_call(),
                                self.parameter_kinds)
        # full[i, k, m, m] of the full Jacobian (batch, classes, batch, classes): the diagonal of its last two axes
        last_diagonal = expected * np.eye(batch, classes)[:, None, :] if batch >= classes else None
        problem = wrong_value("jacobian", expected, got, [
            *([] if last_diagonal is None else [Alternative(
                "the diagonal of the full Jacobian's last two axes", last_diagonal, "full-jacobian",
                f"Those are the entries full[i, k, m, m] of the full `tape.jacobian` (shape {(batch, classes) * 2}):"
                " the diagonal of its last two axes. The per-example blocks are full[i, :, i, :], the diagonal of "
                "the two batch axes; `tape.batch_jacobian(p, logits)` gives them directly.")]),
        ] + ([] if t == 1 else [
            Alternative("the Jacobian of softmax(logits), without the temperature", _softmax_jacobians(logits, 1),
                        "missing-term", f"That is the Jacobian of `tf.nn.softmax(logits)`: the task divides the "
                        f"logits by {t:g} first."),
            Alternative("the Jacobian of softmax(logits / T) without the 1/T of the chain rule",
                        _softmax_jacobians(logits, t) * t, "constant-factor",
                        f"Those are the values of diag(p) − p pᵀ without the factor 1/{t:g} that dividing the logits "
                        "by the temperature brings. Did you write the formula by hand? The tape includes it.")]))
        if problem:
            raise problem


ex3_1 = IntermediateGradient()
ex3_3 = OneWeightGradient()
ex3_4 = PerExampleJacobian()
