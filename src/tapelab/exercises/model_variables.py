"""Exercises of notebook 02_model_variables: gradients for a Keras model's variables, a hand-written
SGD step, the custom training step with layer losses, and a running-mean metric."""
from __future__ import annotations

from typing import Callable

import keras
import numpy as np
import tensorflow as tf

from tapelab.compare import all_close, allclose, fmt, mismatch, to_numpy
from tapelab.exercise import Exercise
from tapelab.feedback import Incorrect
from tapelab.mistakes import none_cause

__all__ = ["ex2_1", "ex2_2", "ex2_3", "ex2_4", "worked_example"]

_RTOL, _ATOL = 1e-3, 1e-5

def worked_example() -> tuple[tf.Tensor, tf.Tensor]:
    """The notebook's data: X = [1, 2, 3, 4] as a column, Y = 2X + 1."""
    x = tf.constant([[1.0], [2.0], [3.0], [4.0]])
    return x, 2.0 * x + 1.0


def _dense_model(n_in: int = 1, n_out: int = 1, regularizer: str = "") -> keras.Model:
    """A zero-initialised Dense layer; `regularizer` "kernel" or "activity" adds a layer loss."""
    kwargs = {}
    if regularizer == "kernel":
        kwargs["kernel_regularizer"] = keras.regularizers.L2(0.1)
    elif regularizer == "activity":
        kwargs["activity_regularizer"] = keras.regularizers.L2(0.1)
    return keras.Sequential([keras.Input((n_in,)),
                             keras.layers.Dense(n_out, kernel_initializer="zeros", **kwargs)])


def _short_path(variable) -> str:
    """`dense/kernel` for `sequential_3/dense_7/kernel`: what a student recognises."""
    layer, name = variable.path.split("/")[-2:]
    return f"{layer.rstrip('_0123456789')}/{name}"


# ---------------------------------------------------------------------------------------------
# Exercise 2.1: model_gradients(model, loss_fn, x, y)

_LOSSES: dict[str, Callable[[], keras.losses.Loss]] = {
    "mse": keras.losses.MeanSquaredError,
    "bce": keras.losses.BinaryCrossentropy,
    "mape": keras.losses.MeanAbsolutePercentageError,
}


def _bn_case(loss: str, seed: int):
    """A Dense-BatchNorm-Dense model with seeded weights, a batch and targets suited to `loss`."""
    rng = np.random.default_rng(seed)
    activation = "sigmoid" if loss == "bce" else None

    def build() -> keras.Model:
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.BatchNormalization(),
                                  keras.layers.Dense(1, activation=activation)])
        weights = np.random.default_rng(seed + 1000)
        for v in model.variables:
            if "moving_variance" in v.path:
                v.assign(weights.uniform(0.5, 1.5, size=v.shape))
            else:
                v.assign(weights.normal(scale=0.7, size=v.shape))
        return model

    x = rng.normal(size=(8, 3))
    if loss == "bce":
        y = rng.integers(0, 2, size=(8, 1)).astype(float)
    else:
        y = rng.uniform(1.0, 3.0, size=(8, 1))
    return build, tf.constant(x, tf.float32), tf.constant(y, tf.float32)


def _gradient_case(spec):
    if spec == "worked":
        x, y = worked_example()
        return (lambda: _dense_model()), "mse", x, y
    _, loss, seed = spec
    build, x, y = _bn_case(loss, seed)
    return build, loss, x, y


def _reference_gradients(build, loss, x, y, training=True, swapped=False):
    model, loss_fn = build(), _LOSSES[loss]()
    with tf.GradientTape() as tape:
        preds = model(x, training=training)
        value = loss_fn(preds, y) if swapped else loss_fn(y, preds)
    return [g.numpy() for g in tape.gradient(value, model.trainable_variables)]


def _all_close(expected, got) -> bool:
    return all_close(expected, got, _RTOL, _ATOL)


class ModelGradients(Exercise):
    number = "2.1"
    answer = "model_gradients"
    visible_cases = ("worked", ("bn", "bce", 3))
    praise = "one tape around the forward pass and the loss gave one gradient per trainable variable."
    hints = (
        "Open a tape, and inside it run the model and the loss: both must be recorded.",
        "Inside the tape: `preds = model(x, training=True)` then `loss = loss_fn(y, preds)` (targets first).",
        "After the block: `return tape.gradient(loss, model.trainable_variables)`.",
    )
    solution_code = """
def model_gradients(model, loss_fn, x, y):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        loss = loss_fn(y, preds)
    return tape.gradient(loss, model.trainable_variables)
"""
    why = ("The tape records the forward pass in training mode and the loss (targets first, as Keras losses "
           "expect), and `model.trainable_variables` lists exactly the variables an optimizer will update.")

    def check_case(self, fn, spec, facts):
        build, loss, x, y = _gradient_case(spec)
        model = build()
        shown = (f"model, {type(_LOSSES[loss]()).__name__}(), x of shape {tuple(x.shape)}, "
                 f"y of shape {tuple(y.shape)}")
        got = self.call(fn, model, _LOSSES[loss](), x, y, shown=shown).value
        expected = _reference_gradients(build, loss, x, y)
        names = [_short_path(v) for v in model.trainable_variables]
        if got is None:
            raise Incorrect("`model_gradients` returned `None`. Did you forget to `return` the gradients?")
        if not isinstance(got, (list, tuple)):
            raise Incorrect(f"`model_gradients` returned a `{type(got).__name__}`, but should return a list "
                            f"of {len(expected)} gradients, one per entry of `model.trainable_variables`.")
        n_all = len(model.variables)
        if len(got) == n_all != len(expected):
            raise Incorrect(
                f"`model_gradients` returned {len(got)} gradients, one per entry of `model.variables`, "
                f"but should return {len(expected)}. This model's `BatchNormalization` layer holds "
                "non-trainable moving statistics. Did you differentiate with respect to "
                "`model.trainable_variables`?")
        if len(got) != len(expected):
            raise Incorrect(f"`model_gradients` returned {len(got)} gradients, but `model.trainable_variables` "
                            f"has {len(expected)} entries ({', '.join(names)}). Did you pass it as the sources?")
        if all(g is None for g in got):
            raise Incorrect("Every gradient is `None`. " +
                            none_cause(facts, "loss", "model.trainable_variables", False))
        if _all_close(_reference_gradients(build, loss, x, y, training=False), got) and \
                not _all_close(expected, _reference_gradients(build, loss, x, y, training=False)):
            raise Incorrect(
                "Your gradients are those of the model in inference mode. This model has a "
                "`BatchNormalization` layer, which uses the batch's own statistics only while training. "
                "Did you call `model(x, training=True)`?")
        if loss != "mse" and _all_close(_reference_gradients(build, loss, x, y, swapped=True), got):
            raise Incorrect(
                f"Your gradients are those of `loss_fn(preds, y)`. {type(_LOSSES[loss]()).__name__} is not "
                "symmetric, and Keras losses take the targets first. Did you write `loss_fn(y, preds)`?")
        for name, e, g in zip(names, expected, got):
            problem = mismatch(e, g, f"gradient for {name}", _RTOL, _ATOL)
            if problem:
                raise Incorrect(f"{problem} Is each gradient in the order of `model.trainable_variables`, "
                                "and is the loss `loss_fn(y, preds)` of `model(x, training=True)`?")


# ---------------------------------------------------------------------------------------------
# Exercise 2.2: manual_sgd_step(variables, grads, lr)

def _sgd_case(spec):
    """(variables, grads, lr): the worked example's first step, or seeded tf.Variables."""
    if spec == "worked":
        model = _dense_model()
        return list(model.trainable_variables), [tf.constant([[-35.0]]), tf.constant([-12.0])], 0.1
    seed, lr = spec
    rng = np.random.default_rng(seed)
    shapes = [(3, 2), (2,), (2, 1), (1,)]
    variables = [tf.Variable(rng.normal(size=s), dtype=tf.float32, name=f"v{i}") for i, s in enumerate(shapes)]
    grads = [tf.constant(rng.normal(size=s), tf.float32) for s in shapes]
    return variables, grads, lr


class ManualSgdStep(Exercise):
    number = "2.2"
    answer = "manual_sgd_step"
    visible_cases = ("worked",)
    praise = "your hand-written step moves every variable exactly as `keras.optimizers.SGD` does."
    hints = (
        "Gradient descent moves each variable a small step against its gradient: v ← v − lr·g.",
        "Pair each variable with its gradient using `zip(variables, grads)`, and change the variable in place.",
        "`for v, g in zip(variables, grads): v.assign_sub(lr * g)`",
    )
    solution_code = """
def manual_sgd_step(variables, grads, lr):
    for v, g in zip(variables, grads):
        v.assign_sub(lr * g)
"""
    why = ("Plain SGD updates each variable in place by v ← v − lr·g; `assign_sub` changes the variable "
           "itself, whereas `v = v - lr * g` only rebinds a local name to a new tensor.")

    def check_case(self, fn, spec, facts):
        variables, grads, lr = _sgd_case(spec)
        kept = list(variables)  # our own references, whatever the function does to the list
        before = [v.numpy().copy() for v in kept]
        shown = f"{len(kept)} variables, their gradients, lr={lr}"
        self.call(fn, variables, grads, lr, shown=shown)
        copies = [tf.Variable(b) for b in before]
        keras.optimizers.SGD(learning_rate=lr).apply(grads, copies)
        after = [v.numpy() for v in kept]
        expected = [c.numpy() for c in copies]
        if _all_close(expected, after):
            if facts.found and not (facts.calls_to("assign_sub") or facts.calls_to("assign")):
                raise Incorrect("Exercise 2.2: your variables end up right, but this exercise is the step by "
                                "hand. Update each variable with `v.assign_sub(lr * g)` instead of an optimizer.")
            return
        steps = [to_numpy(g) for g in grads]
        if all(np.allclose(a, b) for a, b in zip(after, before)):
            raise Incorrect(
                f"The variables did not change: `{_short_name(kept[0])}` is still {fmt(after[0])}, but should "
                f"be {fmt(expected[0])}. Did you write `v = v - lr * g`? That rebinds the name to a new tensor "
                "and leaves the variable alone: change it in place with `v.assign_sub(lr * g)`.")
        if all(allclose(b + lr * s, a, _RTOL, _ATOL) for a, b, s in zip(after, before, steps)):
            raise Incorrect(
                f"`{_short_name(kept[0])}` is {fmt(after[0])}, but should be {fmt(expected[0])}: your step went "
                "uphill, along the gradient. Did you use `assign_add`? Descent subtracts: `v.assign_sub(lr * g)`.")
        if all(allclose(b - s, a, _RTOL, _ATOL) for a, b, s in zip(after, before, steps)):
            raise Incorrect(
                f"`{_short_name(kept[0])}` is {fmt(after[0])}, but should be {fmt(expected[0])}: it moved by "
                "the whole gradient. Did you multiply the gradient by `lr`?")
        for v, e, a in zip(kept, expected, after):
            problem = mismatch(e, a, _short_name(v), _RTOL, _ATOL)
            if problem:
                raise Incorrect(f"{problem} Did you subtract `lr * g` from each variable, paired with its own "
                                "gradient?")


def _short_name(variable) -> str:
    return _short_path(variable) if "/" in getattr(variable, "path", "") else variable.name.split(":")[0]


# ---------------------------------------------------------------------------------------------
# Exercise 2.3: train_step(model, optimizer, loss_fn, x, y)

def _train_case(spec):
    """(build_model, make_optimizer, loss name, x, y, steps, label) for a case."""
    if spec in ("worked", "worked-l2"):
        x, y = worked_example()
        regularizer = "kernel" if spec == "worked-l2" else ""
        return (lambda: _dense_model(regularizer=regularizer), lambda: keras.optimizers.SGD(0.1),
                "mse", x, y, 3, "the worked example" + (" with an L2 kernel regularizer" if regularizer else ""))
    if spec[0] == "bn":  # BatchNormalization: training=True normalises with the batch's own statistics
        _, seed, optimizer, steps = spec
        build, x, y = _bn_case("mse", seed)
        make_opt = {"sgd": lambda: keras.optimizers.SGD(0.05),
                    "adam": lambda: keras.optimizers.Adam(0.05)}[optimizer]
        return build, make_opt, "mse", x, y, steps, "a Dense-BatchNormalization-Dense model"
    seed, n_in, n_out, regularizer, optimizer, steps = spec
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.normal(size=(6, n_in)), tf.float32)
    y = tf.constant(rng.normal(size=(6, n_out)), tf.float32)
    make_opt = {"sgd": lambda: keras.optimizers.SGD(0.05),
                "adam": lambda: keras.optimizers.Adam(0.05)}[optimizer]
    return (lambda: _dense_model(n_in, n_out, regularizer), make_opt, "mse", x, y, steps,
            f"a Dense({n_out}) model on {n_in} inputs" + (f" with an {regularizer} regularizer" if regularizer else ""))


def _reference_loop(build, make_opt, loss, x, y, steps, layer_losses=True, sign=1.0, training=True):
    """Final variables and the loss of each step, for the correct step or a named variant."""
    model, optimizer, loss_fn = build(), make_opt(), _LOSSES[loss]()
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            preds = model(x, training=training)
            value = loss_fn(y, preds)
            if layer_losses:
                value = value + sum(model.losses)
        grads = tape.gradient(value, model.trainable_variables)
        optimizer.apply([sign * g for g in grads], model.trainable_variables)
        losses.append(float(value))
    return [v.numpy() for v in model.trainable_variables], losses


def _data_losses(build, make_opt, loss, x, y, steps):
    """The data-only part of each step's loss along the correct trajectory."""
    model, optimizer, loss_fn = build(), make_opt(), _LOSSES[loss]()
    out = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            preds = model(x, training=True)
            data = loss_fn(y, preds)
            value = data + sum(model.losses)
        optimizer.apply(tape.gradient(value, model.trainable_variables), model.trainable_variables)
        out.append(float(data))
    return out


class TrainStep(Exercise):
    number = "2.3"
    answer = "train_step"
    visible_cases = ("worked", "worked-l2")
    praise = "your step records the forward pass and every loss, and lets the optimizer apply the gradients."
    hints = (
        "Four lines: forward pass and loss under a tape, gradients, then the optimizer; return the loss.",
        "Inside the tape: `preds = model(x, training=True)`, then `loss = loss_fn(y, preds) + sum(model.losses)` "
        "so a regularizer's penalty is part of what you minimise.",
        "After the block: `grads = tape.gradient(loss, model.trainable_variables)`, then "
        "`optimizer.apply(grads, model.trainable_variables)` (or `apply_gradients(zip(grads, ...))`), "
        "and `return loss`.",
    )
    solution_code = """
def train_step(model, optimizer, loss_fn, x, y):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        loss = loss_fn(y, preds) + sum(model.losses)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
"""
    why = ("The tape must record both the forward pass and every part of the loss, layer losses included, "
           "so the gradients point downhill on what you actually minimise; the optimizer then owns the update.")

    def check_case(self, fn, spec, facts):
        build, make_opt, loss, x, y, steps, label = _train_case(spec)
        model, optimizer = build(), make_opt()
        shown = "model, optimizer, loss_fn, x, y"
        returned = []
        for _ in range(steps):
            returned.append(self.call(fn, model, optimizer, _LOSSES[loss](), x, y, shown=shown).value)
        expected, expected_losses = _reference_loop(build, make_opt, loss, x, y, steps)
        after = [v.numpy() for v in model.trainable_variables]
        names = [_short_path(v) for v in model.trainable_variables]
        if not _all_close(expected, after):
            self._explain_variables(build, make_opt, loss, x, y, steps, label, names, expected, after)
        if any(r is None for r in returned):
            raise Incorrect("Your variables are right, but `train_step` returned `None`. "
                            "Did you forget `return loss`?")
        try:
            got_losses = [float(to_numpy(r)) for r in returned]
        except (TypeError, ValueError):
            raise Incorrect("Your variables are right, but `train_step` should return the loss as a scalar "
                            f"tensor, not a `{type(returned[0]).__name__}`.") from None
        if not allclose(expected_losses, got_losses, _RTOL, _ATOL):
            data_only = allclose(_data_losses(build, make_opt, loss, x, y, steps), got_losses, _RTOL, _ATOL)
            cause = ("Return the total you minimised, `loss_fn(y, preds) + sum(model.losses)`, "
                     "not the data loss alone." if data_only else "Did you return the loss of this step?")
            raise Incorrect(f"Your variables are right, but the returned losses are {fmt(got_losses)}, and "
                            f"should be {fmt(expected_losses)}. {cause}")

    def _explain_variables(self, build, make_opt, loss, x, y, steps, label, names, expected, after):
        initial = [v.numpy() for v in build().trainable_variables]
        where = next(i for i, (e, a) in enumerate(zip(expected, after)) if not allclose(e, a, _RTOL, _ATOL))
        base = (f"After {steps} calls on {label}, `{names[where]}` is {fmt(after[where])}, "
                f"but should be {fmt(expected[where])}.")
        if all(np.allclose(i, a) for i, a in zip(initial, after)):
            cause = ("The variables never changed. Did you apply the gradients with "
                     "`optimizer.apply(grads, model.trainable_variables)`?")
        elif all(allclose(e, a, _RTOL, _ATOL) for e, a in
                 zip(_reference_loop(build, make_opt, loss, x, y, steps, layer_losses=False)[0], after)):
            cause = ("They are what you get without the layer losses: this model has a regularizer. "
                     "Did you add `sum(model.losses)` to the loss inside the tape?")
        elif all(allclose(e, a, _RTOL, _ATOL) for e, a in
                 zip(_reference_loop(build, make_opt, loss, x, y, steps, training=False)[0], after)):
            cause = ("They are what the model gives in inference mode: its `BatchNormalization` layer then "
                     "uses its moving statistics instead of the batch's own. Did you call "
                     "`model(x, training=True)` inside the tape?")
        elif all(allclose(e, a, _RTOL, _ATOL) for e, a in
                 zip(_reference_loop(build, make_opt, loss, x, y, steps, sign=-1.0)[0], after)):
            cause = ("Your steps went uphill: the loss grew. Did you change the sign of the gradients? "
                     "The optimizer already subtracts them.")
        else:
            cause = ("Does each call compute the loss of `model(x, training=True)` under the tape and apply "
                     "the gradients with the optimizer it was given?")
        raise Incorrect(f"{base} {cause}")


# ---------------------------------------------------------------------------------------------
# Exercise 2.4: epoch_mean_losses(epochs)

class EpochMeanLosses(Exercise):
    number = "2.4"
    answer = "epoch_mean_losses"
    visible_cases = (((41.0, 18.415, 8.274), (3.0, 1.0)),)
    praise = "one `Mean` metric, reset at the start of each epoch, gives each epoch's own mean."
    hints = (
        "Create one `keras.metrics.Mean()` before the loop over epochs.",
        "For each epoch: `reset_state()`, then `update_state(loss)` for every batch loss, then read `result()`.",
        "Append `float(metric.result())` after each epoch's batches, and return the list.",
    )
    solution_code = """
def epoch_mean_losses(epochs):
    metric = keras.metrics.Mean()
    means = []
    for batch_losses in epochs:
        metric.reset_state()
        for loss in batch_losses:
            metric.update_state(loss)
        means.append(float(metric.result()))
    return means
"""
    why = ("A metric accumulates across every `update_state` call until `reset_state`, so resetting at the start "
           "of each epoch makes `result()` the mean of that epoch's batches alone.")

    def check_case(self, fn, epochs, facts):
        epochs = [list(e) for e in epochs]
        shown = f"epochs={[[round(v, 4) for v in e] for e in epochs]}"
        got = self.call(fn, [list(e) for e in epochs], shown=shown).value
        expected = [float(np.mean(e)) for e in epochs]
        if got is None:
            raise Incorrect("`epoch_mean_losses` returned `None`. Did you forget to `return` the list of means?")
        if not isinstance(got, (list, tuple)):
            raise Incorrect(f"`epoch_mean_losses` returned a `{type(got).__name__}`, but should return a list "
                            f"of {len(expected)} means, one per epoch.")
        problem = mismatch(expected, list(got), "epoch_mean_losses(epochs)", 1e-5, 1e-5)
        if problem:
            flat, cumulative = [], []
            for e in epochs:
                flat += e
                cumulative.append(float(np.mean(flat)))
            last = [e[-1] for e in epochs]
            if allclose(cumulative, got, 1e-5, 1e-5):
                cause = ("Each mean includes the epochs before it. Did you call `metric.reset_state()` at the "
                         "start of each epoch?")
            elif allclose(last, got, 1e-5, 1e-5):
                cause = ("Each value is the epoch's last batch loss. Did you reset the metric inside the batch "
                         "loop? Reset once per epoch, before its batches.")
            else:
                cause = "Did you `update_state` with every batch loss and read `result()` after each epoch?"
            raise Incorrect(f"{problem} {cause}")
        if facts.found and not facts.calls_to("Mean"):
            raise Incorrect("Exercise 2.4: your means are right, but this exercise is about Keras metrics. "
                            "Accumulate them with a `keras.metrics.Mean()`.")


ex2_1 = ModelGradients()
ex2_2 = ManualSgdStep()
ex2_3 = TrainStep()
ex2_4 = EpochMeanLosses()
