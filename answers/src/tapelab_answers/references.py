"""The reference computations behind the checkers' expected values: each exercise's correct computation, and
the named wrong variants a checker compares a student's values against.

They are close to the model answers, which is why they live here and not in `tapelab`: a graded course's
environment does not install this distribution, so its kernels cannot read them. `tapelab release` runs them
for every case of every check and stores the numbers (tapelab.checker.expected); the checkers read those,
and call these functions only for a case no data covers (a test's own input, in a self-study install).

Each function takes the objects a case is built from (a model, an optimizer, a loss, data): building them
stays in `tapelab.exercises`, so this module imports nothing from `tapelab`, and TensorFlow only when called.
"""
from __future__ import annotations

__all__ = ["anchored_steps", "epoch_losses", "layer_gradients", "two_optimizer_steps"]


def layer_gradients(model, loss_fn, x, y, training=True, swapped=False):
    """Exercise 2.1: for each layer of `model`, the gradients of the loss for those of its weights that have one (a
    frozen layer's included, batch-norm moving statistics left out), or of a named wrong loss: inference mode
    (`training=False`) or the loss's arguments swapped."""
    import tensorflow as tf

    with tf.GradientTape() as tape:
        preds = model(x, training=training)
        value = loss_fn(preds, y) if swapped else loss_fn(y, preds)
    grads = tape.gradient(value, [layer.weights for layer in model.layers])
    return [[g.numpy() for g in layer if g is not None] for layer in grads]


def anchored_steps(model, optimizer, loss_fn, x, y, anchors, steps, alpha, layer_losses=True, pull=1.0,
                   reduce="sum", training=True, sign=1.0, forward_outside=False):
    """Exercise 2.3: the trainable variables after `steps` fine-tuning steps whose loss adds the layer losses and
    alpha * sum((v - anchor)**2) over the trainable variables, each step's total loss, and the parts of that loss
    (data, layer, pull) along the correct run; or a named wrong step: without the layer losses, the pull scaled by
    `pull` (0 leaves it out, 2 doubles it), each variable's pull averaged (`reduce="mean"`), in inference mode,
    uphill (`sign=-1`), or with the forward pass made before the tape opened (`forward_outside`)."""
    import tensorflow as tf

    losses, parts = [], []
    for _ in range(steps):
        early = model(x, training=training) if forward_outside else None
        with tf.GradientTape() as tape:
            preds = model(x, training=training) if early is None else early
            data = loss_fn(y, preds)
            layer = sum(model.losses) if layer_losses else 0.0
            squares = [tf.square(v - a) for v, a in zip(model.trainable_variables, anchors)]
            drift = sum(tf.reduce_mean(s) if reduce == "mean" else tf.reduce_sum(s) for s in squares)
            value = data + layer + pull * alpha * drift
        grads = tape.gradient(value, model.trainable_variables)
        optimizer.apply([sign * g for g in grads], model.trainable_variables)
        losses.append(float(value))
        parts.append([float(data), float(layer), float(alpha * drift)])
    return [v.numpy() for v in model.trainable_variables], losses, parts


def epoch_losses(step, dataset, epochs):
    """Exercise 2.4: each epoch's batch losses along the correct loop, `step` training a fresh model."""
    return [[float(step(x, y)) for x, y in dataset] for _ in range(epochs)]


def two_optimizer_steps(model, opt_a, opt_b, x, y, steps, scaled_by="own", power=2):
    """Exercise 6.4: the trainable weights after `steps` steps in which `opt_a` trains the first layer and
    `opt_b` the others, and the loss before each: the mean of the error's absolute value to the `power` (the
    exercise's variant; 2, the mean squared error, in the notebook). `scaled_by` gives a known wrong variant under
    mixed precision instead: "none" (the loss never scaled) or "a" / "b" (that optimizer's scale for every variable)."""
    import tensorflow as tf

    scalers = {"own": (opt_a, opt_b), "none": (None, None), "a": (opt_a, opt_a), "b": (opt_b, opt_b)}[scaled_by]
    n = len(model.layers[0].trainable_variables)
    parts = model.trainable_variables[:n], model.trainable_variables[n:]
    losses = []
    for _ in range(steps):
        with tf.GradientTape(persistent=True) as tape:
            error = y - tf.cast(model(x, training=True), y.dtype)
            loss = tf.reduce_mean(tf.square(error) if power == 2 else tf.abs(error) ** power)
            targets = [loss if scaler is None else scaler.scale_loss(loss) for scaler in scalers]
        for optimizer, target, part in zip((opt_a, opt_b), targets, parts):
            optimizer.apply(tape.gradient(target, part), part)
        del tape
        losses.append(float(loss))
    return [v.numpy() for v in model.trainable_variables], losses
