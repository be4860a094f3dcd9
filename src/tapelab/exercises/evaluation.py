"""Exercise 6.6 of notebook 06_fit_vs_custom: a validation loop, the mean loss of a model over every row of a
dataset whose last batch is smaller, in inference mode and without changing the model.

The model given to the student has a `BatchNormalization` and a `Dropout` layer: a call in training mode
moves the normalisation's moving statistics (and the dropout's seed), which the checker sees afterwards, so it
names that slip from what happened to the model, not from the source.
"""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from tapelab.checker.compare import fmt, to_numpy
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.checker.replay import once_in_judge
from tapelab.checker.variants import Space
from tapelab.checker.wrong_answers import Alternative, wrong_value
from tapelab.exercises.fit_match import OWN_LOSSES
from tapelab.exercises.keras_cases import short_path

__all__ = ["ex6_6"]

_RTOL, _ATOL = 1e-4, 1e-6
_FEATURES = 3


@once_in_judge
def _validation_case(case) -> tuple[keras.Model, np.ndarray, np.ndarray, int]:
    """(model, x, y, batch size) of a case (seed, rows, batch): a Dense-BatchNormalization-Dropout-Dense model
    with seeded weights and moving statistics far from a batch's own, and seeded validation rows. The check only
    reads the model, in inference mode: the grader's judge, where no student code runs, builds it once per case."""
    seed, rows, batch = case
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, _FEATURES)).astype(np.float32)
    y = rng.uniform(-1.0, 3.0, size=(rows, 1)).astype(np.float32)
    return _model(seed), x, y, batch


def _model(seed: int) -> keras.Model:
    model = keras.Sequential([keras.Input((_FEATURES,)), keras.layers.Dense(4), keras.layers.BatchNormalization(),
                              keras.layers.Dropout(0.5, seed=seed), keras.layers.Dense(1)])
    weights = np.random.default_rng(seed + 1000)
    for v in model.variables:
        if "moving_mean" in v.path:
            v.assign(weights.uniform(-1.0, 1.0, size=v.shape))
        elif "moving_variance" in v.path:
            v.assign(weights.uniform(2.0, 4.0, size=v.shape))
        elif v.trainable:
            v.assign(weights.normal(scale=0.7, size=v.shape))
    return model


class ValidationLoss(Exercise):
    number = "6.6"
    replayable = True
    answer = "evaluate"
    # What is averaged over every row: the squared error in the notebook's text; drawn, the absolute error, or the
    # squared error with one square root of the mean at the end (`root`, the root mean squared error).
    space = Space(default={"loss": "mse", "root": False},
                  draws={"loss": lambda rng: str(rng.choice(list(OWN_LOSSES))), "root": lambda rng: bool(rng.integers(2))},
                  allowed=lambda v: not (v["root"] and v["loss"] == "mae") and (v["loss"], v["root"]) != ("mse", False),
                  wording={"error": lambda v: OWN_LOSSES[v["loss"]][0], "fn": lambda v: OWN_LOSSES[v["loss"]][1],
                           "what": lambda v: "root mean squared error" if v["root"] else
                           f"mean {OWN_LOSSES[v['loss']][0]} error",
                           "key": lambda v: "val_root_mean_squared_error" if v["root"] else "val_loss",
                           "given": lambda v: 'metrics=["root_mean_squared_error"]' if v["root"] else f'loss="{v["loss"]}"',
                           "open": lambda v: "np.sqrt(" if v["root"] else "", "close": lambda v: ")" if v["root"] else "",
                           "finish": lambda v: ", then take the square root of that mean, once" if v["root"] else ""})
    statement = """Write `evaluate(model, dataset)` that returns, as one number, the ${what} of `model` over
**every row** of a `tf.data.Dataset` of `(x, y)` batches whose last batch may be smaller: `fit`'s
`${key}` for `${given}`. Evaluate, do not train: inference mode, no optimizer, no weight or statistic
may change. The test's model has `BatchNormalization` and `Dropout`."""
    visible_cases = ((1, 10, 4), (2, 7, 3))
    praise = "every row counted once, in inference mode, and the model is as it was."
    hints = (
        "Loop `for x, y in dataset:` and call `model(x, training=False)`. A batch's `tf.reduce_mean` gives its mean "
        "over its own rows, and a short last batch would then count as much as a full one.",
        "Add up the ${error} errors of every batch, `tf.reduce_sum(${fn}(y - model(x, training=False)))`, count "
        "them (one per row), and divide the total by the count after the loop${finish}.",
    )

    def check_case(self, fn, case, facts):
        model, x, y, batch = _validation_case(case)
        dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)
        sizes = [len(x[i:i + batch]) for i in range(0, len(x), batch)]
        before = [v.numpy().copy() for v in model.variables]
        # The model as the case built it gives the expected predictions itself, before your code has it.
        diffs = [y[i:i + batch] - to_numpy(model(x[i:i + batch], training=False)) for i in range(0, len(x), batch)]
        shown = f"model, a dataset of {len(x)} rows in batches of {'+'.join(map(str, sizes))}"
        got = self.call(fn, model, dataset, shown=shown).value
        after = self.run(lambda: [(v.trainable, v.numpy()) for v in model.variables],
                         "Reading the model's variables after `evaluate`").value
        self._check_model_unchanged(model, before, after, shown)
        error = np.square if self.variant["loss"] == "mse" else np.abs
        rows = [error(d) for d in diffs]
        root = self.variant["root"]
        finish = np.sqrt if root else (lambda value: value)  # what the task does to the mean over every row
        expected = float(finish(np.mean(np.concatenate(rows))))
        if got is None:
            raise Incorrect("`evaluate` returned `None`. Did you forget to `return` the mean?", cause="no-return")
        try:
            value = np.asarray(to_numpy(got), np.float64)
        except Exception:
            value = None
        if value is None or value.size != 1:
            raise Incorrect(f"`evaluate` returned {fmt(got) if value is not None else type(got).__name__} (on "
                            f"{shown}), but should return one number, the mean over every row ({expected:.6g} "
                            "here). Did you return a list of batch losses, or a tensor of the errors?")
        other, other_name = (np.abs, "absolute") if error is np.square else (np.square, "squared")
        means = [float(np.mean(r)) for r in rows]
        of = "the square root of " if root else ""  # the root variant's alternatives end with one root too
        alternatives = [
            Alternative("the mean of the batch means", float(finish(np.mean(means))), "loss-not-weighted",
                        f"That is {of}the plain mean of the {len(means)} batch means, but the last batch holds "
                        f"{sizes[-1]} row(s), not {sizes[0]}: averaging the means counts each of its rows "
                        f"{sizes[0] / sizes[-1]:g} times as much as another row. Add up the errors of every row and "
                        "divide by the number of rows, or weight each batch mean by its rows."),
            Alternative("the last batch's loss", float(finish(means[-1])), "batch-loss-reported",
                        f"That is the loss of the last batch alone ({sizes[-1]} row(s)). Did you keep the last "
                        "batch's value instead of combining every batch?"),
            Alternative("the first batch's loss", float(finish(means[0])), "returned-in-loop",
                        "That is the loss of the first batch alone: did you `return` inside the loop? Return after "
                        "the loop, once every batch has been counted."),
            Alternative("the sum over the rows", float(finish(np.sum(np.concatenate(rows)))), "sum-not-mean",
                        f"That is {of}the sum of the errors over every row: divide it by the number of rows."),
            Alternative("the sum of the batch means", float(finish(np.sum(means))), "sum-not-mean",
                        f"That is {of}the sum of the {len(means)} batch means, not their mean, and a mean of batch means "
                        "would still count the short last batch's rows more: add up every row's error and divide by "
                        "the number of rows."),
            Alternative("every batch counted as full", float(finish(np.sum(np.concatenate(rows)) / (batch * len(sizes)))),
                        "rows-miscounted",
                        f"You divided by {batch * len(sizes)} rows, as if every batch were full, but the last one "
                        f"holds {sizes[-1]}. Count the rows each batch really has, `len(x)`."),
            Alternative(f"the mean {other_name} error", float(finish(np.mean(np.concatenate([other(d) for d in diffs])))),
                        "wrong-target", f"That is {of}the mean {other_name} error, but the "
                        f"task asks for the mean {self.variant['error']} error: `{self.variant['fn']}(y - ...)`."),
        ]
        if root:  # the mean squared error itself, or a root per batch averaged over the rows
            roots = float(np.average(np.sqrt(means), weights=sizes))
            alternatives[:0] = [
                Alternative("the mean squared error", float(np.mean(np.concatenate(rows))), "root-missing",
                            "That is the mean squared error over every row, without its square root: the task asks "
                            "for the root mean squared error, `np.sqrt(total / count)`."),
                Alternative("the batch roots averaged", roots, "root-per-batch",
                            f"That is the mean, over the rows, of the {len(means)} batches' own root mean squared "
                            "errors: a root per batch is not the root of the mean over every row. Add up the squared "
                            "errors of every row, divide by the number of rows, and take one square root at the end.")]
        problem = wrong_value(f"evaluate({shown})", expected, float(value.ravel()[0]), alternatives,
                              f"Is your value the {self.variant['what']} of `model(x, training=False)` "
                              "over every row, each counted once?", _RTOL, _ATOL)
        if problem:
            raise problem

    @staticmethod
    def _check_model_unchanged(model: keras.Model, before: list[np.ndarray], after: list[tuple[bool, np.ndarray]],
                               shown: str) -> None:
        """Evaluating leaves every variable of the model as it was (`after`: whether each is trainable, and its
        values, read after the call): a trained weight says an update ran, a moved statistic (or dropout seed)
        alone says the model ran in training mode."""
        changed = [(v, trainable) for v, b, (trainable, now) in zip(model.variables, before, after)
                   if not np.array_equal(now, b)]
        trained = [short_path(v) for v, trainable in changed if trainable]
        if trained:
            raise Incorrect(f"Evaluating changed the model's weights (on {shown}): "
                            f"{', '.join(trained)} moved. Evaluation measures the "
                            "model as it is: no tape, no optimizer, no `apply`; call the model and average its "
                            "errors.", cause="updated-in-evaluation")
        if changed:
            moved = [short_path(v) for v, _ in changed if "moving" in v.path]
            raise Incorrect(f"Evaluating changed the model (on {shown}): "
                            f"{', '.join(moved) if moved else 'the dropout seed'} moved, which happens only when "
                            "the model runs in training mode: `BatchNormalization` then normalises each batch by its "
                            "own statistics and moves its moving ones toward your validation data, and `Dropout` "
                            "zeroes inputs at random. Call `model(x, training=False)`.", cause="training-mode")


ex6_6 = ValidationLoss()
