"""The catalogue of common tape mistakes, and how to name one from what a student's code did."""
from __future__ import annotations

import numpy as np

from tapelab.codeinfo import CodeFacts
from tapelab.compare import to_numpy

__all__ = ["error_cause", "none_cause", "factor_cause"]

_ERROR_CAUSES = (
    ("non-persistent GradientTape can only be used to compute one set",
     "A non-persistent tape gives one set of gradients and is then released. Did you call "
     "`tape.gradient` twice? Ask for every gradient in one call, e.g. `tape.gradient(loss, [w, b])`, "
     "or, to ask one tape several times, open it with `tf.GradientTape(persistent=True)` and `del tape` after."),
    ("Argument `target` should be",
     "`tape.gradient` got `None` as its target. Did you pass the value you computed inside the tape?"),
    ("of type 'ndarray', not tf.Tensor",
     "A NumPy array cannot be watched. Convert it first with `tf.constant(...)`."),
    ("object has no attribute '_id'",
     "A NumPy array reached the tape where a tensor was expected. Did you call `.numpy()` or a NumPy "
     "function inside the `with` block? The tape only sees TensorFlow operations: use `tf.` functions there."),
    # Keras 3 training steps
    ("_unique_id",
     "The optimizer got a tensor where it expected a variable. Did you swap the pairs? "
     "Write `zip(grads, model.trainable_variables)`: the gradient first, then its variable."),
    ("No gradients provided for any variable",
     "Every gradient was `None`. Did you call the model and compute the loss inside the "
     "`with tf.GradientTape() as tape:` block?"),
    ("Unknown variable",
     "An optimizer is built for the variables it first sees and refuses any other. Did you give an "
     "optimizer variables that belong to another one? With two optimizers, give each its own layer's variables."),
    ("metric has not yet been built",
     "A metric was never updated before `fit` asked for its result. Did you forget to update the metrics? "
     "Call `update_state` on each metric in `self.metrics` (the loss metric with the loss, the others with "
     "`y` and `y_pred`) before returning their results."),
    ("No loss to compute",
     "The model was compiled with an optimizer only, so there is no compiled loss to call. Did you keep "
     "the Keras 2 `self.compiled_loss`? Compute the loss yourself, e.g. `tf.reduce_mean(tf.square(y - y_pred))`."),
)


def error_cause(error: BaseException) -> str | None:
    """The likely mistake behind an exception raised by a student's tape code, if known."""
    for needle, cause in _ERROR_CAUSES:
        if needle in str(error):
            return cause
    return None


def none_cause(facts: CodeFacts, target: str, source: str, source_is_constant: bool) -> str:
    """Why `tape.gradient(target, source)` most likely returned None, as a question."""
    if facts.found and facts.tapes == 0:
        return "Did you record the computation inside a `with tf.GradientTape() as tape:` block?"
    if source_is_constant and facts.found and not facts.calls_to("watch") and not facts.calls_to("Variable"):
        return (f"`{source}` is a constant, and the tape only watches trainable variables by itself. "
                f"Did you call `tape.watch({source})` inside the `with` block?")
    if facts.computed_outside_tape(target):
        return f"Did you compute `{target}` inside the `with tf.GradientTape() as tape:` block?"
    if source_is_constant and not facts.found:
        return f"Did you call `tape.watch({source})`, and compute `{target}` inside the `with` block?"
    return (f"The tape saw no path from `{source}` to `{target}`. Is `{target}` computed from "
            f"`{source}` inside the `with` block, using TensorFlow operations only?")


def factor_cause(expected, actual) -> str | None:
    """If `actual` is a constant multiple of `expected`, say so: a dropped mean, 2 or sign."""
    try:
        want, got = to_numpy(expected).astype(np.float64), to_numpy(actual).astype(np.float64)
    except (TypeError, ValueError):
        return None
    if want.shape != got.shape or not np.any(np.abs(want) > 1e-6):
        return None
    ratios = got[np.abs(want) > 1e-6] / want[np.abs(want) > 1e-6]
    ratio = float(np.median(ratios))
    if abs(ratio - 1) < 1e-3 or not np.allclose(got, ratio * want, rtol=1e-3, atol=1e-5):
        return None
    return (f"Your values are {ratio:.4g} times the right ones. "
            "Did you add or drop a constant factor (a mean, a 2, a minus sign)?")
