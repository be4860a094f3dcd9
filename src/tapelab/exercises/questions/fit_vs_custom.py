"""The "predict, then run" questions of notebook 06_fit_vs_custom, one per teaching section that has no
exercise (tapelab.checker.predictions). Each misconception tests what its wrong belief gives on the
notebook's own case; the numbers below describe that case (the cell that asks the question shows it)."""
from __future__ import annotations

import numpy as np

from tapelab.checker.predictions import Misconception, Question

__all__ = ["q6_1", "q6_2", "q6_4", "q6_9", "other_targets", "BATCH_LOSSES", "CLIP_MODES"]

# Section 1: the baseline fitted on targets y = 3x - 1, one batch of the four rows, SGD(0.1), "mse".
_X = np.array([1.0, 2.0, 3.0, 4.0])
_LEARNING_RATE = 0.1


def other_targets(x):
    """The targets of question 6.1: y = 3x - 1."""
    return 3 * x - 1


def _loss_after_first_step() -> float:
    """The mean squared error of the zero model after one SGD step on the whole batch: what the loss would be
    if `fit` reported it after the update."""
    y = other_targets(_X)
    w, b = _LEARNING_RATE * np.mean(2 * y * _X), _LEARNING_RATE * np.mean(2 * y)  # minus lr times dL/dw at zero
    return float(np.mean((w * _X + b - y) ** 2))


q6_1 = Question("6.1", misconceptions=[
    Misconception("sum-not-mean", lambda guess, truth: np.isclose(guess, truth * len(_X), rtol=1e-3),
                  "You added the squared errors. `\"mse\"` averages them over the batch's rows, so the first loss "
                  "is their mean."),
    Misconception("loss-after-update", lambda guess, truth: np.isclose(guess, _loss_after_first_step(), rtol=1e-3),
                  "You took the loss after the first update. `fit` reports the loss of each batch's forward pass, "
                  "measured before the optimizer moves the weights: here that of the zero model."),
])

# Section 2: the runs without accumulation that question 6.2 compares with one epoch of batch_size=2 and
# SGD(0.1, gradient_accumulation_steps=2): "A" batch_size=4, "B" batch_size=2, "C" batch_size=4 at rate 0.2.
q6_2 = Question("6.2", kind="choice", choices=("A", "B", "C"), misconceptions=[
    Misconception("accumulation-per-batch", lambda guess, truth: guess == "B",
                  "You let the optimizer update after every batch. With `gradient_accumulation_steps=2` it only "
                  "adds up the first batch's gradient, then applies the mean of the two once."),
    Misconception("constant-factor", lambda guess, truth: guess == "C",
                  "You applied the sum of the two batch gradients. The optimizer applies their mean, which for "
                  "two batches of equal size is the gradient of the whole batch."),
])

# Section 4: one epoch of `custom_loop`, two batches of these (loss, rows), the loss metric weighted by rows.
BATCH_LOSSES = ((3.0, 4), (9.0, 2))

q6_4 = Question("6.4", misconceptions=[
    Misconception("loss-not-weighted",
                  lambda guess, truth: np.isclose(guess, np.mean([loss for loss, _ in BATCH_LOSSES])),
                  "You gave each batch the same weight. `custom_loop` passes `sample_weight=len(x_batch)`, so a "
                  "batch counts by its rows, as in `fit`."),
    Misconception("batch-loss-reported", lambda guess, truth: np.isclose(guess, BATCH_LOSSES[-1][0]),
                  "You reported the last batch's loss. The metric's `result()` is the weighted mean over every "
                  "batch since its last reset."),
])

# Section 9: which clipping mode, at threshold 1, keeps the direction of the explorer's first gradient.
CLIP_MODES = ("clipnorm", "global_clipnorm", "clipvalue")

q6_9 = Question("6.9", kind="choice", choices=CLIP_MODES, misconceptions=[
    Misconception("per-tensor-clip", lambda guess, truth: guess == "clipnorm",
                  "You let `clipnorm` scale the whole gradient. It clips each variable's gradient by its own "
                  "norm, the kernel's and the bias's apart, so their proportions change."),
    Misconception("per-entry-clip", lambda guess, truth: guess == "clipvalue",
                  "You expected clipping each entry to keep the direction. `clipvalue` cuts every entry above "
                  "the threshold to it, so large and small entries end up alike."),
])
