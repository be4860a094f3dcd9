"""A Keras callback that runs the host side of a guard inside `fit`.

Under `fit` the train step is a compiled graph: the guard decides, applies and counts there, and leaves
the step's report in a variable. After each batch this callback reads it (one copy to the host), hands the
record to the guard's log and raises `BadGradientsError` when the guard refused a step for good. At the
end of each epoch it adds the guard's counters and step latency to the epoch's logs (so `History`, `CSVLogger` and
TensorBoard see them, prefixed `guard_`) and passes them to `publish`, if given, for a monitoring system.
"""
from __future__ import annotations

from typing import Any, Callable

import keras

__all__ = ["GuardCallback"]


class GuardCallback(keras.callbacks.Callback):
    """Poll `guard` after every training batch; publish its counters after every epoch."""

    def __init__(self, guard: Any, publish: Callable[[dict[str, Any]], None] | None = None):
        super().__init__()
        self.guard, self.publish = guard, publish

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self.guard.poll()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        counters = {**self.guard.counters, **{f"latency_{k}": v for k, v in self.guard.latency.items()}}
        if logs is not None:
            logs.update({f"guard_{name}": value for name, value in counters.items() if value is not None})
        if self.publish is not None:
            self.publish(counters)
