"""Apply gradients only when they are usable: no None, no NaN or Inf, a finite non-empty loss, a record per step.

A custom training step that calls `optimizer.apply(grads, variables)` blindly fails late and quietly:
all-None gradients raise a generic ValueError, some None are dropped with a warning on stderr, and NaN
gradients turn every weight into NaN without any error at all. `GuardedApply` checks first, then
applies, skips (bounded: too many bad steps in a row raise) or fails fast naming the variables at fault.

    guard = GuardedApply(optimizer, on_bad="skip", max_skips=3, log=records.append)
    with tf.GradientTape() as tape:
        loss = loss_fn()
    outcome = guard(tape.gradient(loss, variables), variables, loss=loss)

Where it runs:
- **Eagerly** the call returns a `StepOutcome`, logs it and raises `BadGradientsError` at once.
- **In a graph** (`tf.function`, a `train_step` under `fit`, XLA included) the check, the norms and the
  decision are tensor ops, the update runs under `tf.cond`, and the call returns a dict of tensors
  (`step`, `applied`, `global_norm`). The host side (the log record and the error) runs when
  `guard.poll()` is called after the step: `GuardCallback(guard)` does that after every batch of `fit`.
- `FlightRecorder`: the first refused steps of a run (at most `keep`, within `max_bytes`) are saved with
  their batch, weights and optimizer state, diagnosed, and replayable (`python -m tapelab.diagnose.replay`).
- `GradientStats` (and `GradientStatsCallback` under `fit`): per-variable gradient norms and histograms
  for TensorBoard, computed in the step on scheduled steps only and written by the host.
- Counters live in `tf.Variable`s: the guard is a `tf.Module`, so `tf.train.Checkpoint(guard=guard)`
  saves and restores them with the model.
- With a `keras.optimizers.LossScaleOptimizer` (mixed precision), non-finite gradients are passed to the
  optimizer, whose loss scaling lowers its scale and skips the update; such steps are "skipped" but do
  not count towards `max_skips`. Norms are reported unscaled; pass the unscaled loss as `loss`.

Runs in the user's training code, in eager mode, in `tf.function` and under `fit`; it imports
TensorFlow, NumPy and `tapelab.diagnose` (lazily, to name a cause), never the checker, grading or the
CLI. `apply` holds `GuardedApply`; `measure` the gradient norms, `decide` the in-graph decision,
`records` the step records and the error, `retry` `with_retries`, `callback` the Keras callback,
`flight` the flight recorder that saves refused steps for `tapelab.diagnose.replay`, `stats` the gradient
statistics (it imports `tensorboard` only when it writes).
"""
from tapelab.guarded.apply import GuardedApply
from tapelab.guarded.callback import GuardCallback
from tapelab.guarded.flight import FlightRecorder
from tapelab.guarded.records import BadGradientsError, JsonFormatter, StepOutcome, name_bad_variables
from tapelab.guarded.retry import with_retries
from tapelab.guarded.stats import GradientStats, GradientStatsCallback

__all__ = ["BadGradientsError", "FlightRecorder", "GradientStats", "GradientStatsCallback", "GuardCallback",
           "GuardedApply", "JsonFormatter", "StepOutcome", "name_bad_variables", "with_retries"]
