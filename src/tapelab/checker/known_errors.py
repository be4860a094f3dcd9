"""Errors whose text alone names their cause: a needle in the message, the cause code, what to tell the student.

`tapelab.checker.explanations.error_cause` falls back on this table when the code's facts say nothing
more specific; `tests/test_causes.py` holds every code in it to the catalogue.
"""
from __future__ import annotations

__all__ = ["KNOWN_ERRORS"]

KNOWN_ERRORS = (  # (needle in the error text, cause code, explanation)
    ("Argument `target` should be", "none-target",
     "`tape.gradient` got `None` as its target. Did you pass the value you computed inside the tape?"),
    ("of type 'ndarray', not tf.Tensor", "numpy-source",
     "A NumPy array cannot be watched. Convert it first with `tf.constant(...)`."),
    ("of type 'Variable', not tf.Tensor", "weights-watched",
     "`tape.watch` got a Keras variable (a layer's weight), which it cannot watch; a tape watches trainable "
     "weights by itself unless `watch_accessed_variables=False`. Did you mean to watch the input, `tape.watch(x)`?"),
    ("_unique_id", "zip-order",
     "The optimizer got a tensor where it expected a variable. Did you swap the pairs? "
     "Write `zip(grads, model.trainable_variables)`: the gradient first, then its variable."),
    ("apply_gradients() takes 2 positional arguments", "apply-two-lists",
     "`apply_gradients` takes one list of (gradient, variable) pairs. Did you pass the gradients and the "
     "variables separately? Write `apply_gradients(zip(grads, variables))`, or `optimizer.apply(grads, variables)`."),
    ("has no attribute 'reset_states'", "keras2-reset-states",
     "Keras 3 metrics have `reset_state()`, not the Keras 2 `reset_states()`. Did you mean `reset_state()`?"),
    ("'method' object is not iterable", "metrics-not-property",
     "Keras iterates `self.metrics`, but yours is a plain method. Did you forget `@property` above `def metrics(self):`?"),
    ("No gradients provided for any variable", "no-gradients",
     "Every gradient was `None`: the tape holds no path from these variables to the loss. It records one only "
     "where the model is called and the loss computed inside the `with tf.GradientTape() as tape:` block, in "
     "TensorFlow operations (a `.numpy()` or a NumPy function on the way cuts it)."),
    ("Unknown variable", "unknown-variable",
     "An optimizer is built for the variables it first sees and refuses any other. Did you give an "
     "optimizer variables that belong to another one? With two optimizers, give each its own layer's variables."),
    ("metric has not yet been built", "metric-not-updated",
     "A metric was never updated before `fit` asked for its result. Did you forget to update the metrics? "
     "Call `update_state` on each metric in `self.metrics` (the loss metric with the loss, the others with "
     "`y` and `y_pred`) before returning their results."),
    ("CompileMetrics.update_state() missing", "metric-fed-loss",
     "`self.metrics` also holds the compiled metrics, which compare `y` with `y_pred`. Did you update every "
     "metric with the loss? Update the loss tracker with the loss and the others with `update_state(y, y_pred)`."),
    ("Inputs must be an iterable of at least one Tensor", None,
     "`tf.add_n` needs at least one tensor, and it got an empty list: a model without regularizers has no layer "
     "losses, so `model.losses` is `[]`."),
    ("object has no attribute 'get_scaled_loss'", None,
     "`get_scaled_loss` (with `get_unscaled_gradients`) is the TensorFlow 2 loss-scaling API; a Keras 3 optimizer "
     "has `scale_loss(loss)` instead, and its `apply` unscales the gradients itself."),
    ("must have rank at least 2", None,
     "`batch_jacobian` treats the first axis as a batch of independent examples, so its target and source need "
     "rank 2 or more; for the Jacobian of one 1-D point use `jacobian`."),
    ("had NaN values", None,
     "`tf.debugging.check_numerics` raises on a NaN or infinite value: it stops the run with an error instead of "
     "skipping the step. To skip, test with `tf.math.is_finite` and choose with `tf.cond`."),
    ("had Inf values", None,
     "`tf.debugging.check_numerics` raises on a NaN or infinite value: it stops the run with an error instead of "
     "skipping the step. To skip, test with `tf.math.is_finite` and choose with `tf.cond`."),
    ("Mean.update_state() got multiple values for argument 'sample_weight'", None,
     "A `keras.metrics.Mean` (the loss tracker in `self.metrics`) takes the values to average and their weights, "
     "`update_state(loss, sample_weight=...)`, not `(y, y_pred)`: feed the loss tracker the loss and the other "
     "metrics `(y, y_pred)`."),
    ("only supports singleton tf.Variables", "variable-per-call",
     "A compiled function that creates a `tf.Variable` fails on its first call: TensorFlow traces it once more "
     "to check that a second trace creates no variable. Did you create the variable inside the `tf.function`? "
     "Create it once, outside the compiled function (or behind a guard that skips it after the first trace)."),
    ("as a Python `bool` is not allowed", "eager-only-check",
     "A compiled function (`tf.function`, or a `train_step` that `fit` compiles) is traced with tensors that have "
     "no value yet, so Python cannot decide whether one is true: `bool(t)`, or Python's `min`/`max` of a tensor, "
     "fail. AutoGraph rewrites an `if` or `while` on a tensor in your function's own code; elsewhere use a "
     "TensorFlow operation (`tf.minimum`, `tf.maximum`, `tf.where`, `tf.cond`)."),
    ("numpy() is only available when eager execution is enabled", "eager-only-check",
     "`.numpy()` works only eagerly: a compiled function (`tf.function`, or a `train_step` that `fit` compiles) "
     "is traced with tensors that have no value yet. Compute with TensorFlow operations on the tensor itself."),
    ("No loss to compute", "keras2-compiled-loss",
     "The model was compiled with an optimizer only, so there is no compiled loss: `self.compiled_loss` and "
     "`self.compute_loss` have nothing to compute. Compute the loss yourself in the step, with TensorFlow "
     "operations on `y` and `y_pred`."),
)
