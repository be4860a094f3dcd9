"""The step `fit` runs, diagnosed: a compiled Keras model's forward pass and loss on one batch.

`fit` traces `train_step` into a `tf.function` (with XLA when the model's `jit_compile` resolves to
True), so a NaN or a None gradient shows only as a bad loss. `diagnose_fit_step` rebuilds the loss that
Keras's own `train_step` differentiates (the model called with `training=True`, then `compute_loss`),
runs it compiled the way the model compiles it, replays it eagerly op by op, and compares the two.
The optimizer's update is not run: the model, its metrics and its optimizer are left as they were.
"""
from __future__ import annotations

from typing import Any, Iterable

__all__ = ["diagnose_fit_step"]


def diagnose_fit_step(model: Any, x: Any, y: Any = None, sample_weight: Any = None, *, allow: Iterable[str] = (),
                      jit_compile: bool | None = None):
    """Diagnose the gradients `model.fit` computes on the batch `(x, y, sample_weight)`; a `Report`.

    `jit_compile` defaults to the model's own (what `compile(jit_compile=...)` resolved); `allow` is
    diagnose's allowlist. A model that overrides `train_step` computes its own loss, which this function
    cannot see: pass that loss to `diagnose(...)` instead.
    """
    from keras.src.backend.tensorflow.trainer import TensorFlowTrainer

    from tapelab.diagnose.run import diagnose

    if getattr(type(model), "train_step", None) is not TensorFlowTrainer.train_step:
        raise ValueError(f"{type(model).__name__} overrides `train_step`, so its loss is its own: call "
                         "`diagnose(lambda: <your step's loss>, model=model, jit_compile=model.jit_compile)`.")
    if not getattr(model, "compiled", False):
        raise ValueError("the model is not compiled: call `model.compile(...)` first, as `fit` needs it.")

    def fit_step_loss():
        y_pred = model(x, training=True)
        return model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True)

    tracked = list(model.metrics_variables)
    kept = [v.numpy() for v in tracked]
    try:
        return diagnose(fit_step_loss, model=model, allow=allow,
                        jit_compile=bool(model.jit_compile if jit_compile is None else jit_compile))
    finally:
        for var, value in zip(tracked, kept):
            var.assign(value)
