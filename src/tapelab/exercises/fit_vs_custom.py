"""Exercises of notebook 06_fit_vs_custom: a custom `train_step` that matches `fit`, two optimizers
for two layers, clipping by global norm, fixing a Keras 2 step in the lower-level style, and (from
`guarded_step`) a guarded step inside `tf.function`."""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from tapelab.alternatives import Alternative, wrong_value
from tapelab.compare import allclose, fmt, fmt_pair, to_numpy
from tapelab.exercise import Exercise
from tapelab.exercises.fit_match import FitCase, FitMatch, worked_example
from tapelab.exercises.guarded_step import GuardedStep
from tapelab.feedback import Incorrect

__all__ = ["ex6_1", "ex6_2", "ex6_3", "ex6_4", "ex6_5", "worked_example"]


class CustomTrainStep(FitMatch):
    number = "6.1"
    answer = "make_custom_model"
    # Several batches per epoch, a second metric and a loss other than MSE, on data of their own; a last
    # batch smaller than the others (fit weights batch losses by rows); a mixed_float16 policy (loss scaling).
    visible_cases = (FitCase(), FitCase(8, 2, 4, "huber", ("mae",), 60), FitCase(5, 2, 2, "mse", ("mae",), 66),
                     FitCase(8, 2, 3, "mse", (), 67, "mixed_float16"))
    praise = "your `train_step` reproduces `fit` number for number."
    hints = (
        "Define `class CustomModel(keras.Model):` inside the function, build it from `keras.Input` and a "
        "`Dense(1, kernel_initializer=\"zeros\")`, and return the instance.",
        "In `train_step`: `x, y = data`; under a tape compute `y_pred = self(x, training=True)`, "
        "`loss = self.compute_loss(x=x, y=y, y_pred=y_pred)` and `scaled_loss = self.optimizer.scale_loss(loss)` "
        "(a no-op unless mixed precision wrapped the optimizer); differentiate `scaled_loss`, then "
        "`self.optimizer.apply(grads, self.trainable_variables)`.",
        "Finish with the metrics loop: for each `m` in `self.metrics`, "
        "`m.update_state(loss, sample_weight=tf.shape(x)[0])` if `m.name == \"loss\"` (fit weights each batch by "
        "its rows) else `m.update_state(y, y_pred)`; return `{m.name: m.result() for m in self.metrics}`.",
    )
    solution_code = """
def make_custom_model(n_features=1):
    class CustomModel(keras.Model):
        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(x=x, y=y, y_pred=y_pred)
                scaled_loss = self.optimizer.scale_loss(loss)
            grads = tape.gradient(scaled_loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss, sample_weight=tf.shape(x)[0])
                else:
                    metric.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

    inputs = keras.Input((n_features,))
    outputs = keras.layers.Dense(1, kernel_initializer="zeros")(inputs)
    return CustomModel(inputs, outputs)
"""
    why = ("`fit` only calls your `train_step` once per batch: computing the compiled loss with `compute_loss`, "
           "scaling it for the optimizer, applying its gradients and updating `self.metrics` (the loss weighted by "
           "the batch's rows) is exactly what the built-in step does, so the numbers agree.")


class TwoOptimizers(Exercise):
    number = "6.4"
    answer = "two_optimizer_step"
    # Two optimizers of different kinds over two steps, a first layer without bias and a
    # BatchNormalization between the layers, each on inputs of its own.
    visible_cases = ((3, 4, 8, "sgd", "sgd", 1, 21), (2, 3, 6, "sgd", "sgd", 1, 20, False, True),
                     (2, 3, 5, "momentum", "adam", 2, 25))
    praise = "each optimizer moved exactly its own layer, by its own rule."
    hints = (
        "Take each part's variables from its layers: `first = model.layers[0].trainable_variables`, and the "
        "others from `model.layers[1:]`; never by position in one list.",
        "Compute the loss once under one tape; `tape.gradient(loss, [first, others])` returns the gradients "
        "in the same two lists.",
        "`opt_a.apply(grads_first, first)` and `opt_b.apply(grads_others, others)`.",
    )
    solution_code = """
def two_optimizer_step(model, opt_a, opt_b, x, y):
    first = model.layers[0].trainable_variables
    others = [v for layer in model.layers[1:] for v in layer.trainable_variables]
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
    grads_first, grads_others = tape.gradient(loss, [first, others])
    opt_a.apply(grads_first, first)
    opt_b.apply(grads_others, others)
    return loss
"""
    why = ("One tape gives every gradient in one backward pass; an optimizer keeps state per variable and is "
           "built for the variables it first sees, so each part of the model needs its own optimizer and "
           "must always get the same variables, taken from its layers so that no change of layout can shift them.")

    _OPTIMIZERS = {
        "sgd": (lambda: keras.optimizers.SGD(0.1), lambda: keras.optimizers.SGD(0.01)),
        "momentum": (lambda: keras.optimizers.SGD(0.05, momentum=0.9), None),
        "adam": (None, lambda: keras.optimizers.Adam(0.01)),
    }

    @staticmethod
    def _model(n_in: int, hidden: int, weights: list[np.ndarray], bias: bool = True, norm: bool = False) -> keras.Model:
        middle = [keras.layers.BatchNormalization(center=False, scale=False)] if norm else []
        model = keras.Sequential([keras.Input((n_in,)), keras.layers.Dense(hidden, activation="tanh", use_bias=bias),
                                  *middle, keras.layers.Dense(1)])
        stats = [np.zeros(hidden, np.float32), np.ones(hidden, np.float32)] if norm else []  # moving mean, variance
        first = 2 if bias else 1
        model.set_weights(weights[:first] + stats + weights[first:])
        return model

    def _pair(self, a: str, b: str):
        return self._OPTIMIZERS[a][0](), self._OPTIMIZERS[b][1]()

    def check_case(self, fn, case, facts):
        # (n_in, hidden, rows, a, b, steps, seed[, bias of the first layer, BatchNormalization between the layers])
        n_in, hidden, rows, a, b, steps, seed, *options = case
        bias, norm = (*options, *(True, False)[len(options):])
        rng = np.random.default_rng(seed)
        weights = [rng.normal(size=(n_in, hidden)) * 0.5, rng.normal(size=hidden) * 0.1,
                   rng.normal(size=(hidden, 1)) * 0.5, rng.normal(size=1) * 0.1]
        if not bias:
            del weights[1]
        weights = [w.astype(np.float32) for w in weights]
        x = tf.constant(rng.normal(size=(rows, n_in)), tf.float32)
        y = tf.constant(rng.normal(size=(rows, 1)), tf.float32)
        model, reference = self._model(n_in, hidden, weights, bias, norm), self._model(n_in, hidden, weights, bias, norm)
        opt_a, opt_b = self._pair(a, b)
        ref_a, ref_b = self._pair(a, b)
        first = f"Dense({hidden}{'' if bias else ', use_bias=False'})"
        shown = (f"a {first}+{'BatchNormalization+' if norm else ''}Dense(1) model, opt_a={type(opt_a).__name__}, "
                 f"opt_b={type(opt_b).__name__}, x of shape {tuple(x.shape)}")
        returned, losses = [], []
        for _ in range(steps):
            returned.append(self.call(fn, model, opt_a, opt_b, x, y, shown=shown).value)
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(y - reference(x, training=True)))
            losses.append(float(loss))
            variables = reference.trainable_variables
            grads = tape.gradient(loss, variables)
            n = len(reference.layers[0].trainable_variables)
            ref_a.apply(grads[:n], variables[:n])
            ref_b.apply(grads[n:], variables[n:])
        steps_text = f" after {steps} steps" if steps > 1 else ""
        if norm:
            moving = [w.numpy() for w in model.non_trainable_weights]
            if all(np.array_equal(w, start) for w, start in zip(moving, (np.zeros(hidden), np.ones(hidden)))):
                raise Incorrect(f"The model ({shown}) has a `BatchNormalization` layer, and its moving mean and "
                                f"variance never changed{steps_text}: your step ran the model in inference mode, "
                                "where it normalizes with the moving statistics instead of the batch's. Did you "
                                "call `model(x, training=True)` inside the tape?", cause="inference-mode")
        names = [f"{'first' if i < len(reference.layers[0].trainable_variables) else 'second'} layer's "
                 f"{v.name}" for i, v in enumerate(reference.trainable_variables)]
        count = len(names)
        got = [w.numpy() - w0 for w, w0 in zip(model.trainable_variables, weights)]
        want = [w.numpy() - w0 for w, w0 in zip(reference.trainable_variables, weights)]
        wrong = [i for i in range(count) if not allclose(want[i], got[i], rtol=1e-3, atol=1e-6)]
        if not wrong:
            self._check_returned(returned, losses, shown)
            return
        n = len(reference.layers[0].trainable_variables)
        ratios = [_ratio(want[i], got[i]) for i in range(count)]
        lr_a, lr_b = (float(o.get_config()["learning_rate"]) for o in (opt_a, opt_b))
        if a == b == "sgd":
            first_by_b = all(_near(ratios[i], lr_b / lr_a) for i in range(n))
            second_by_a = all(_near(ratios[i], lr_a / lr_b) for i in range(n, count))
            if first_by_b and second_by_a:
                raise Incorrect(f"The first layer moved {lr_b / lr_a:g} times and the second {lr_a / lr_b:g} times "
                                "as far as they should: the optimizers are swapped. `opt_a` (learning rate "
                                f"{lr_a:g}) must update the first layer and `opt_b` ({lr_b:g}) the second.",
                                cause="swapped-optimizers")
            if second_by_a and not any(i < n for i in wrong):
                raise Incorrect(f"The second layer moved {lr_a / lr_b:g} times as far as it should, as if `opt_a` "
                                "updated it. Did you pass all the variables to `opt_a`? Only the first layer's "
                                "belong to it; give the second layer's to `opt_b`.", cause="one-optimizer")
            by_other = [i for i in wrong if _near(ratios[i], lr_a / lr_b if i >= n else lr_b / lr_a)]
            if not bias and by_other == wrong:
                raise Incorrect(f"In this model ({shown}) the first layer has {n} trainable variable(s), the second "
                                f"{count - n}, and some variables moved by the other optimizer's learning rate. Did "
                                "you split the variables at a fixed index, or count another layer's variables? Take them from "
                                "the layers instead: `model.layers[0].trainable_variables` for `opt_a`, the other "
                                "layers' for `opt_b`.", cause="fixed-split")
        i = wrong[0]
        if not np.any(got[i]):
            raise Incorrect(f"The {names[i]} did not change{steps_text}, but should move by {fmt(want[i])}. "
                            "Did you apply gradients to every variable, each with its layer's optimizer?",
                            cause="no-update")
        moved, should = fmt_pair(got[i], want[i], 1e-3, 1e-6)
        raise Incorrect(f"The {names[i]} moved by {moved}{steps_text}, but should move by {should} "
                        f"(on {shown}). Is your loss the mean squared error `tf.reduce_mean(tf.square(y - model(x)))`, "
                        "and did each optimizer get its own layer's variables and gradients, in order?")

    def _check_returned(self, returned, losses, shown):
        for step, (got, want) in enumerate(zip(returned, losses), start=1):
            at = f" at step {step}" if len(losses) > 1 else ""
            if got is None:
                raise Incorrect("`two_optimizer_step` returned `None`, but should return the loss. Did you forget "
                                "`return loss`?", cause="no-return")
            try:
                value = np.asarray(to_numpy(got), np.float64)
            except Exception:
                value = None
            if value is None or value.size != 1:
                raise Incorrect(f"`two_optimizer_step` returned {fmt(got) if value is not None else type(got).__name__}"
                                f"{at}, but should return the loss, one number ({want:.6g} here). Did you return "
                                "the scalar `loss` from the tape?")
            if not allclose(want, float(value.ravel()[0]), rtol=1e-4, atol=1e-6):
                got_text, want_text = fmt_pair(float(value.ravel()[0]), want, 1e-4, 1e-6)
                raise Incorrect(f"Your weights are right, but `two_optimizer_step` returned {got_text}"
                                f"{at} where the loss (the mean squared error before the update, on {shown}) is "
                                f"{want_text}. Return the `loss` you computed inside the tape, unchanged.")


def _ratio(want: np.ndarray, got: np.ndarray) -> float:
    mask = np.abs(want) > 1e-7
    return float(np.median(got[mask] / want[mask])) if mask.any() else float("nan")


def _near(ratio: float, target: float) -> bool:
    return bool(np.isfinite(ratio)) and abs(ratio - target) < 1e-2 * abs(target)


class ClipGlobalNorm(Exercise):
    number = "6.3"
    answer = "clip_gradients"
    # Clipped, left alone (norm below max_norm), and all zeros (a norm of 0).
    # Clipped where per-tensor and per-entry clipping differ (first, so they are told apart), the gradients
    # above, left alone (norm below max_norm), and all zeros (a norm of 0).
    visible_cases = ((([3.0, 4.0], [0.5, 12.0]), 6.5), (([3.0, 4.0], [12.0]), 6.5), (([1.0, -2.0], [[0.5]]), 4.0),
                     (([0.0], [0.0, 0.0]), 2.0))
    praise = "you scale every gradient by the same factor, and only when the global norm is too large."
    hints = (
        "The global norm is the norm of all gradients put together: the square root of the sum of every "
        "squared entry of every tensor.",
        "`global_norm = tf.sqrt(tf.add_n([tf.reduce_sum(tf.square(g)) for g in grads]))`; "
        "every gradient is multiplied by the same `scale`.",
        "`scale = tf.minimum(1.0, max_norm / global_norm)` leaves small gradients alone; return "
        "`[g * scale for g in grads]`.",
    )
    solution_code = """
def clip_gradients(grads, max_norm):
    global_norm = tf.sqrt(tf.add_n([tf.reduce_sum(tf.square(g)) for g in grads]))
    scale = tf.minimum(1.0, max_norm / global_norm)
    return [g * scale for g in grads]
"""
    why = ("Scaling all gradients by one factor keeps the direction of the update and caps its length; "
           "clipping each tensor on its own would change the direction.")

    def check_case(self, fn, case, facts):
        values, max_norm = case
        arrays = [np.asarray(v, np.float64) for v in values]
        grads = [tf.constant(a, tf.float32) for a in arrays]
        shown = f"grads of shapes {[tuple(a.shape) for a in arrays]}, max_norm={max_norm}"
        got = self.call(fn, grads, max_norm, shown=shown).value
        norm = float(np.sqrt(sum(np.sum(a * a) for a in arrays)))
        expected = [a * min(1.0, max_norm / norm) if norm else a for a in arrays]
        if got is None:
            raise Incorrect("`clip_gradients` returned `None`. Did you forget `return`?", cause="no-return")
        library = "library-clip" if facts.calls_to("clip_by_global_norm") else None
        if isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], (list, tuple)):
            raise Incorrect("`clip_gradients` returned a pair `(list, norm)`, but should return the list of clipped "
                            "gradients only. Did you return the tuple of `tf.clip_by_global_norm` whole, instead of "
                            "its first item? (And then write the clipping yourself, as the exercise asks.)",
                            cause=library)
        if not isinstance(got, (list, tuple)):
            raise Incorrect(f"`clip_gradients` returned a `{type(got).__name__}`, but should return a list with one "
                            f"tensor per gradient ({len(arrays)} here). Did you return the tuple of "
                            "`tf.clip_by_global_norm` whole, instead of its first item?", cause=library)
        if norm == 0 and any(g is not None and not np.all(np.isfinite(to_numpy(g))) for g in got):
            raise Incorrect(f"With all-zero gradients (on {shown}) your values are NaN or Inf: the global norm is "
                            "0 there. Did you divide by it without `tf.minimum(1.0, max_norm / global_norm)`?",
                            cause="zero-norm-nan")
        problem = wrong_value("clipped", expected, list(got), self._alternatives(arrays, max_norm, norm),
                              "Did you compute one global norm over all the tensors and scale each by "
                              "`min(1, max_norm / norm)`?")
        if problem:
            raise problem
        if library:
            raise Incorrect("Your values are right, but this exercise asks you to write the clipping yourself, "
                            "without `tf.clip_by_global_norm`: compute the global norm and one scale factor.",
                            cause=library)

    @staticmethod
    def _alternatives(arrays, max_norm, norm) -> list[Alternative]:
        def scaled(scale):
            return [a * scale(a) for a in arrays]

        return [
            Alternative("unscaled", arrays, "not-clipped",
                        f"Your gradients came back unchanged, but their global norm {norm:.4g} exceeds "
                        f"max_norm={max_norm}. Scale them by `min(1, max_norm / global_norm)`: a `tf.minimum`, "
                        "so that the factor is below 1 exactly when clipping is needed."),
            Alternative("per entry", lambda: [np.clip(a, -max_norm, max_norm) for a in arrays], "per-entry-clip",
                        "You clipped each entry to the range [-max_norm, max_norm] (`clip_by_value`): that changes "
                        "the direction of the gradient. Scale every gradient by one factor, "
                        "`min(1, max_norm / global_norm)`, instead."),
            Alternative("per tensor", lambda: scaled(lambda a: min(1.0, max_norm / np.linalg.norm(a))
                                                      if np.linalg.norm(a) else 1.0), "per-tensor-clip",
                        "You clipped each tensor by its own norm (per tensor vs global): that is `clipnorm`. "
                        "Clip by the GLOBAL norm, the norm of all the gradients together, with one common scale."),
            Alternative("always scaled", lambda: scaled(lambda a: max_norm / norm), "clip-scales-up",
                        f"The global norm is {norm:.4g}, already at most max_norm={max_norm}, yet you scaled the "
                        "gradients up. Clip only when the norm exceeds `max_norm`: scale by "
                        "`min(1, max_norm / global_norm)`."),
            Alternative("no square root", lambda: scaled(lambda a: min(1.0, max_norm / norm ** 2)),
                        "norm-without-sqrt", "You divided by the sum of squares. Did you forget the square root "
                        "in the global norm?"),
        ]


class FixKeras2Step(FitMatch):
    number = "6.2"
    answer = "make_tracked_model"
    compile_loss = False
    # Several batches per epoch, a smaller last batch, and a mixed_float16 policy.
    visible_cases = (FitCase(), FitCase(8, 2, 4, "mse", (), 60), FitCase(5, 2, 2, "mse", (), 66),
                     FitCase(8, 2, 3, "mse", (), 67, "mixed_float16"))
    praise = "your own loss tracker reports what `fit` reports, and the Keras 2 bug is gone."
    hints = (
        "The model is compiled with an optimizer only: there is no compiled loss, so compute the mean squared "
        "error yourself inside the tape.",
        "Create `self.loss_tracker = keras.metrics.Mean(name=\"loss\")` in `__init__`, update it with the loss "
        "in `train_step` and list it in a `metrics` property.",
        "`train_step` returns `{\"loss\": self.loss_tracker.result()}`; the `metrics` property returns "
        "`[self.loss_tracker]` so that `fit` resets it every epoch.",
        "Match `fit` in the hard cases too: update the tracker with `sample_weight=tf.shape(x)[0]` (a smaller "
        "last batch counts less) and differentiate `self.optimizer.scale_loss(loss)` (mixed precision).",
    )
    solution_code = """
def make_tracked_model(n_features=1):
    class TrackedModel(keras.Model):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_tracker = keras.metrics.Mean(name="loss")

        @property
        def metrics(self):
            return [self.loss_tracker]

        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = tf.reduce_mean(tf.square(y - tf.cast(y_pred, y.dtype)))
                scaled_loss = self.optimizer.scale_loss(loss)
            grads = tape.gradient(scaled_loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            self.loss_tracker.update_state(loss, sample_weight=tf.shape(x)[0])
            return {"loss": self.loss_tracker.result()}

    inputs = keras.Input((n_features,))
    outputs = keras.layers.Dense(1, kernel_initializer="zeros")(inputs)
    return TrackedModel(inputs, outputs)
"""
    why = ("Without a compiled loss the step owns both the loss and its bookkeeping: a `Mean` tracker fed the "
           "batch losses and reset by `fit` each epoch reports the same epoch mean that `fit` prints.")


ex6_1 = CustomTrainStep()
ex6_2 = FixKeras2Step()
ex6_3 = ClipGlobalNorm()
ex6_4 = TwoOptimizers()
ex6_5 = GuardedStep()
