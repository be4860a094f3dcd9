"""Exercise 3.2 of notebook 03_watching_tensors: integrated gradients, input gradients averaged along the straight
path from a baseline to the input, all points in one watched batch; and the tiny seeded models that the
notebook's checkers build (3.3 uses them too)."""
from __future__ import annotations

import keras
import numpy as np

from tapelab.checker.compare import mismatch, to_numpy
from tapelab.checker.exercise import Exercise
from tapelab.checker.explanations import none_feedback
from tapelab.checker.messages import Incorrect
from tapelab.checker.variants import Space
from tapelab.checker.wrong_answers import Alternative, wrong_value

__all__ = ["ex3_2", "tiny_model", "forward", "model_case"]


def tiny_model(n_in: int, hidden: int, n_out: int, seed: int) -> tuple[keras.Model, list[np.ndarray]]:
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


def forward(weights: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    """The tiny model's output, in float64."""
    w1, b1, w2, b2 = weights
    return np.tanh(x @ w1 + b1) @ w2 + b2


def model_case(spec, n_out: int = 1):
    """(model, float64 weights, float32 x) for a case spec (batch, n_in, hidden, seed)."""
    batch, n_in, hidden, seed = spec
    model, weights = tiny_model(n_in, hidden, n_out, seed)
    x = np.random.default_rng(seed + 1000).normal(size=(batch, n_in)).astype(np.float32)
    return model, weights, x


def _row_gradients(weights, points: np.ndarray) -> np.ndarray:
    """d model(p) / d p for every row p of `points` (one output), by the chain rule in float64."""
    w1, b1, w2, _ = weights
    h = np.tanh(points @ w1 + b1)
    return ((1 - h**2) * w2[:, 0]) @ w1.T


# Where the `steps` points sit on the path, as α = (k + offset) / steps for k = 0 .. steps − 1: the right end of
# each of the `steps` equal pieces of [0, 1] in the notebook's text, their middles, or their left ends.
_POINTS = {
    1.0: ("1/steps, 2/steps, …, 1", "tf.range(1, steps + 1, dtype=tf.float32) / steps"),
    0.5: ("0.5/steps, 1.5/steps, …, (steps − 0.5)/steps", "(tf.range(steps, dtype=tf.float32) + 0.5) / steps"),
    0.0: ("0, 1/steps, …, (steps − 1)/steps", "tf.range(steps, dtype=tf.float32) / steps"),
}


def _alphas(offset: float, steps: int) -> np.ndarray:
    return (np.arange(steps) + offset) / steps


def _completeness(got, expected: np.ndarray, difference: np.ndarray, steps: int) -> str:
    """The sum of wrong attributions of the right shape against f(x) − f(baseline) and the right sum; else ""."""
    try:
        values = to_numpy(got).astype(np.float64)
    except (TypeError, ValueError):
        return ""
    if values.shape != expected.shape or mismatch(expected, got, "value") is None:
        return ""
    return (f"Your attributions sum to {values.sum():.4f}; f(x) − f(baseline) is {float(difference.sum()):.4f}, and the "
            f"right ones sum to {expected.sum():.4f} (the gap is the error of averaging over {steps} points).")


class IntegratedGradients(Exercise):
    number = "3.2"
    replayable = True
    answer = "integrated_gradients"
    # Which points of the path are averaged (the right ends of the pieces in the notebook's text). Every draw is
    # another rule, and the cases' few steps keep the rules' averages apart, so the text's answer fails a draw.
    space = Space(default={"offset": 1.0}, draws={"offset": lambda rng: (0.5, 0.0)[int(rng.integers(2))]},
                  wording={"alphas": lambda v: _POINTS[v["offset"]][0],
                           "alpha_code": lambda v: _POINTS[v["offset"]][1]})
    statement = ("Write `integrated_gradients(model, x, baseline, steps)`. `x` and `baseline` are float32 **NumPy "
                 "arrays** of shape (features,); `model` has one output. Stack the `steps` points "
                 "`baseline + α·(x − baseline)`, α = ${alphas}, into one batch, watch it, and call the model once on "
                 "it under one tape. Return the mean of the input gradients over the points times `(x − baseline)`.")
    visible_cases = ((4, 5, 31, 5, "random"),)
    praise = ("the average gradient along the path, times how far each feature moved: together the attributions "
              "account for f(x) − f(baseline).")
    hints = (
        "`x` and `baseline` arrive as NumPy arrays: convert them with `tf.constant`, so the batch of points you "
        "build from them is a tensor the tape can watch.",
        "`alphas = ${alpha_code}`; then `points = baseline + alphas[:, None] * (x - baseline)`, of shape "
        "(steps, features). Watch `points`, not `x`: the model runs on `points`.",
    )

    def check_case(self, fn, spec, facts):
        n_in, hidden, seed, steps, baseline_kind = spec
        model, weights = tiny_model(n_in, hidden, 1, seed)
        rng = np.random.default_rng(seed + 1000)
        x = rng.normal(size=n_in).astype(np.float32)
        baseline = (np.zeros(n_in) if baseline_kind == "zeros" else rng.normal(0, 0.5, n_in)).astype(np.float32)
        runs = []
        call = model.call

        def counted(*args, **kwargs):
            runs.append(1)
            return call(*args, **kwargs)

        model.call = counted
        got = self.call(fn, model, x, baseline, steps,
                        shown=f"model, x and baseline of shape {x.shape}, steps={steps}").value
        x64, b64 = x.astype(np.float64), baseline.astype(np.float64)
        delta = x64 - b64

        def path_gradients(offset: float) -> np.ndarray:
            return _row_gradients(weights, b64 + _alphas(offset, steps)[:, None] * delta)

        offset = self.variant["offset"]
        grads = path_gradients(offset)
        expected = grads.mean(axis=0) * delta
        if got is None:
            raise none_feedback("`integrated_gradients(model, x, baseline, steps)` returned `None`.", facts,
                                facts.returned_call())
        through_x = (_alphas(offset, steps)[:, None] * grads).sum(axis=0)
        others = [Alternative(f"the points α = {_POINTS[o][0]}", path_gradients(o).mean(axis=0) * delta, "path-points",
                              f"Those are the attributions at α = {_POINTS[o][0]}; the task's points are "
                              f"α = {_POINTS[offset][0]}.") for o in _POINTS if o != offset]
        at_ends, with_both = ((_row_gradients(weights, b64 + np.linspace(0, 1, n)[:, None] * delta).mean(axis=0) * delta)
                              for n in (steps, steps + 1))
        gap = _completeness(got, expected, forward(weights, x64[None]) - forward(weights, b64[None]), steps)
        problem = wrong_value("attributions", expected, got, [
            Alternative("the mean gradient, not multiplied by (x − baseline)", grads.mean(axis=0), "missing-term",
                        "Those are the mean gradients along the path, not yet multiplied by `(x - baseline)`."),
            Alternative("the sum over the points instead of the mean", grads.sum(axis=0) * delta, "constant-factor",
                        f"Those are {steps} times the answer: the gradients summed over the {steps} points instead "
                        "of averaged."),
            Alternative("the gradient of the mean output", expected / steps, "mean-target",
                        f"Those are the answer divided by {steps}: the target averaged the outputs of the {steps} "
                        "points, which divides every gradient by their number. Differentiate `model(points)` itself."),
            Alternative("one attribution per point", grads * delta, "not-reduced",
                        "Those are one row of attributions per point: average the rows over the points (axis 0)."),
            Alternative("the gradient at x alone", path_gradients(1.0)[-1] * delta, "path-points",
                        "That is the gradient at `x` alone times `(x - baseline)`: the task averages the gradients "
                        "at every point of the path."),
            Alternative("the points of tf.linspace(0, 1, steps)", at_ends, "path-points",
                        f"Those are the attributions at α = 0, 1/(steps − 1), …, 1, both ends included; the task's "
                        f"points are α = {_POINTS[offset][0]}."),
            Alternative("the points of tf.linspace(0, 1, steps + 1)", with_both, "path-points",
                        f"Those are the attributions at the {steps + 1} points α = 0, 1/steps, …, 1, both ends "
                        f"included; the task's {steps} points are α = {_POINTS[offset][0]}."),
            Alternative("times x instead of (x − baseline)", grads.mean(axis=0) * x64, "missing-term",
                        "Those are the mean gradients times `x`: the task multiplies them by `(x - baseline)`."),
            Alternative("the mean of every gradient entry", grads.mean() * delta, "missing-axis",
                        "Those are one mean of all the gradients' entries times `(x - baseline)`: the mean ran over "
                        "the points and the features. Average over the points only, `axis=0`."),
            Alternative("the points α·x, a path from zero", _row_gradients(weights, _alphas(offset, steps)[:, None]
                                                                        * x64).mean(axis=0) * delta, "path-points",
                        "Those are the attributions at the points α·x, on the path from zero to x: the task's "
                        "points run from the baseline, `baseline + α·(x - baseline)`."),
            Alternative("the gradient with respect to x through the path", through_x * delta, "wrong-source",
                        "That is the gradient with respect to `x` through the whole path (the tape adds α times the "
                        "gradient of each point), times `(x - baseline)`. Watch the batch of points and take the "
                        "gradient with respect to it."),
            *others], otherwise=gap)
        if problem:
            raise problem
        calls = self.run(lambda: len(runs), "Counting the calls of the model").value
        if calls != 1:
            raise Incorrect(f"Your attributions are right, but your function ran the model {calls} times; the "
                            "task asks for one call on one batch of all the points, under one tape.",
                            cause="point-per-pass")


ex3_2 = IntegratedGradients()
