"""Exercise 2.4 of notebook 02_model_variables: a training loop over the batches of a `tf.data.Dataset`,
several epochs, with the loss metric it is given reset at the start of each epoch.

The checker hands the student a step that trains a real model and records its calls, and a `Mean` that
counts its updates, so it can tell from what happened (not from the source) how the loop went wrong.
"""
from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tapelab.checker.wrong_answers import Alternative, wrong_value
from tapelab.checker.exercise import Exercise
from tapelab.exercises.keras_cases import bn_case, dense_model, train_step_fn, worked_example
from tapelab.checker.messages import Incorrect

__all__ = ["ex2_4"]

_RTOL, _ATOL = 1e-4, 1e-5
_NO_Y = object()


class _RecordingStep:
    """The `step` given to the student: one training step on a batch (x, y), counting its calls."""

    def __init__(self, step) -> None:
        self._step = step
        self.calls = 0
        self.whole_batch = False  # called with the dataset's (x, y) tuple as one argument

    def __call__(self, x, y=_NO_Y):
        if y is _NO_Y:
            self.whole_batch = isinstance(x, (tuple, list))
            raise TypeError("step() missing 1 required positional argument: 'y'")
        self.calls += 1
        return self._step(x, y)


class Mean(keras.metrics.Mean):
    """The `metric` given to the student: a `Mean` that counts how many values it was given. It keeps the
    name `Mean`, which is what a student reads in an error about it (`'Mean' object has no attribute ...`)."""

    def __init__(self) -> None:
        super().__init__(name="loss")
        self.updates = self.resets = 0

    def update_state(self, *args: Any, **kwargs: Any) -> None:
        self.updates += 1
        super().update_state(*args, **kwargs)

    def reset_state(self) -> None:
        self.resets += 1
        super().reset_state()


def _loop_case(spec):
    """(build_model, learning rate, dataset, epochs, label) for a case."""
    if spec[0] == "worked":
        _, batch, epochs = spec
        x, y = worked_example()
        build, lr, label = dense_model, 0.05, "the worked example"
    else:
        _, seed, batch, epochs = spec
        build, x, y = bn_case("mse", seed)
        lr, label = 0.05, "a Dense-BatchNormalization-Dense model"
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)
    return build, lr, dataset, epochs, f"{label} in batches of {batch}"


def _fresh_step(build, lr):
    """An eager training step for a fresh model (SGD at `lr`, mean squared error)."""
    return train_step_fn(build(), keras.optimizers.SGD(lr), keras.losses.MeanSquaredError())


class TrainEpochs(Exercise):
    number = "2.4"
    replayable = True
    answer = "train_epochs"
    fixed_because = ("`train_epochs` is a loop for any `step`, `dataset`, `epochs` and `metric` it is given and holds "
                     "no numbers of its own, so only the test's inputs could change, not what you write; the one "
                     "choice it could vary, weighting each batch's loss by its rows, is what notebook 06 asks of you "
                     "in Exercise 6.1.")
    # Several batches per epoch and several epochs, on the worked example and on a BatchNormalization model.
    visible_cases = (("worked", 2, 3), ("bn", 4, 3, 2))
    praise = ("every batch of every epoch went through `step` once, and the `metric` you were given, reset at the "
              "start of each epoch, gave each epoch's own mean loss.")
    hints = (
        "Two loops: epochs outside, the dataset's batches inside. Reset the metric at the start of each epoch.",
        "For each batch `for x, y in dataset:`, call `loss = step(x, y)` once and `metric.update_state(loss)`.",
    )

    def expectations(self, spec):
        """Each epoch's batch losses along the correct loop, from a fresh model."""
        build, lr, dataset, epochs, _ = _loop_case(spec)
        return {"batch losses": lambda refs: refs.epoch_losses(_fresh_step(build, lr), dataset, epochs)}

    def check_case(self, fn, spec, facts):
        build, lr, dataset, epochs, label = _loop_case(spec)
        recorder, metric = self.given(lambda: _RecordingStep(_fresh_step(build, lr))), Mean()
        shown = f"step, dataset ({label}), epochs={epochs}, metric"
        try:
            got = self.call(fn, recorder, dataset, epochs, metric, shown=shown).value
        except Incorrect:
            if recorder.whole_batch:
                raise Incorrect("Your loop passed each batch to `step` as one tuple. A batch of this dataset is "
                                "a pair `(x, y)`, and `step` takes them separately: write `for x, y in dataset:` "
                                "and call `step(x, y)`.", cause="batch-not-unpacked") from None
            raise
        n_batches = int(dataset.cardinality())
        calls, resets, updates = self.run(lambda: (recorder.calls, metric.resets, metric.updates),
                                          "Reading how your loop used `step` and the metric").value
        self._check_calls(calls, n_batches, epochs)
        batch_losses = self.expect(spec)["batch losses"]
        expected = [float(np.mean(e)) for e in batch_losses]
        if got is None:
            raise Incorrect("`train_epochs` returned `None`. Did you forget to `return` the list of means?",
                            cause="no-return")
        if not isinstance(got, (list, tuple)):
            raise Incorrect(f"`train_epochs` returned a `{type(got).__name__}`, but should return a list of "
                            f"{epochs} means, one per epoch.")
        flat = [v for e in batch_losses for v in e]
        alternatives = (
            Alternative("never reset", [float(np.mean(flat[:(k + 1) * n_batches])) for k in range(epochs)],
                        "metric-not-reset", "Each mean includes the epochs before it. Did you call "
                        "`metric.reset_state()` at the start of each epoch?"),
            Alternative("reset per batch", [e[-1] for e in batch_losses], "reset-per-batch",
                        f"Each value is the epoch's last batch loss, and the metric was reset {resets} times "
                        f"in {epochs} epochs: inside the batch loop. Reset once per epoch, before its batches.")
            if resets >= epochs * n_batches else
            Alternative("last batch loss", [e[-1] for e in batch_losses], "batch-loss-reported",
                        "Each value is the epoch's last batch loss, not the mean over its batches. Report the "
                        "metric's `result()` after the epoch's batches, not the loss of its last step."),
            Alternative("result per batch", [float(np.mean(e[:k + 1])) for e in batch_losses for k in range(len(e))],
                        "result-per-batch", "That is one running mean per batch. Did you append "
                        "`metric.result()` inside the batch loop? Append it once per epoch, after the batches."),
        )
        if updates == epochs * n_batches:  # it was fed every loss, so a mean of 0 means it was emptied
            alternatives += (Alternative(
                "reset before result", [0.0] * epochs, "reset-before-result",
                "Every mean is 0, although the metric received every batch loss: it was empty when you read it. "
                "Did you call `reset_state()` before `result()` at the end of each epoch? Read the result first, "
                "or reset at the start of the epoch."),)
        problem = wrong_value("train_epochs(...)", expected, list(got), alternatives,
                              "Did you `update_state` the metric with each batch's loss and read `result()` "
                              "once per epoch?", _RTOL, _ATOL)
        if problem:
            raise problem
        if updates != epochs * n_batches:
            fresh = facts.found and facts.calls_to("Mean")
            raise Incorrect(f"Your means are right, but the `metric` you were given received {updates} of "
                            f"the {epochs * n_batches} batch losses."
                            + (" Did you create a new `keras.metrics.Mean()`? Use the one you were given, and "
                               "reset it with `metric.reset_state()` at the start of each epoch." if fresh else
                               " Update it with `metric.update_state(loss)` for every batch."),
                            cause="fresh-metric" if fresh else None)

    @staticmethod
    def _check_calls(calls: int, n_batches: int, epochs: int) -> None:
        """Each call of `step` is one update of the model: their number is a fact the checker saw."""
        wanted = epochs * n_batches
        if calls == wanted:
            return
        head = (f"Your loop called `step` {calls} times, but {epochs} epochs of {n_batches} batches need "
                f"{wanted} calls.")
        if calls == 2 * wanted:
            raise Incorrect(f"{head} That is twice per batch, and each call trains the model once more. Call "
                            "`loss = step(x, y)` once per batch and give that `loss` to the metric.",
                            cause="step-twice")
        if calls == n_batches and epochs > 1:
            raise Incorrect(f"{head} That is one epoch. Did you loop `for epoch in range(epochs):` around the "
                            "batches?", cause="epochs-ignored")
        raise Incorrect(f"{head} Did you loop over `range(epochs)`, and over every batch of `dataset` in each?")


ex2_4 = TrainEpochs()
