"""The "predict, then run" questions of notebook 02_model_variables, one per teaching section that has no
exercise (tapelab.checker.predictions). Each misconception tests what its wrong belief gives on the
notebook's own case; the numbers below describe that case (the cell that asks the question shows it)."""
from __future__ import annotations

import numpy as np

from tapelab.checker.predictions import Misconception, Question

__all__ = ["q2_1", "q2_5", "q2_6", "q2_8", "MEAN_FEED", "TRACED_ARGUMENTS", "RATES"]

# Section 1: Sequential([Input((3,)), Dense(4), BatchNormalization(), Dense(1, use_bias=False)]), last layer frozen.
_FROZEN_WEIGHTS = 1  # the frozen Dense(1, use_bias=False) holds its kernel only
_MOVING_STATISTICS = 2  # moving_mean and moving_variance of the BatchNormalization layer

q2_1 = Question("2.1", misconceptions=[
    Misconception("moving-statistics-trained",
                  lambda guess, truth: guess[1] - truth[1] in (_MOVING_STATISTICS,
                                                               _MOVING_STATISTICS + _FROZEN_WEIGHTS),
                  "You counted the batch-norm moving mean and variance as trainable. The layer updates them itself "
                  "in training mode, without gradients, so `trainable_variables` leaves them out."),
    Misconception("frozen-layer", lambda guess, truth: guess[1] - truth[1] == _FROZEN_WEIGHTS,
                  "You counted the frozen layer's kernel as trainable. `layer.trainable = False` takes its weights "
                  "out of `trainable_variables`, so an optimizer given that list never sees them."),
    Misconception("frozen-layer", lambda guess, truth: truth[0] - guess[0] == _FROZEN_WEIGHTS,
                  "You took the frozen layer's kernel out of `model.variables` too. Freezing changes only "
                  "`trainable_variables`: `model.variables` still lists every weight of every layer."),
])

# Section 5: a fresh keras.metrics.Mean fed these values, `result()` read after each group, `reset_state()`
# before the last group.
MEAN_FEED = ((4.0, 8.0), (3.0,), (10.0,))

q2_5 = Question("2.5", misconceptions=[
    Misconception("batch-loss-reported",
                  lambda guess, truth: np.allclose(guess[:2], [group[-1] for group in MEAN_FEED[:2]]),
                  "You read `result()` as the last value fed. A `Mean` keeps a running total and a count, so "
                  "`result()` is the mean of every value since the last reset."),
    Misconception("metric-not-reset",
                  lambda guess, truth: np.isclose(guess[2], np.mean([v for group in MEAN_FEED for v in group])),
                  "You kept the values from before `reset_state()`. It sets the total and the count back to "
                  "zero, so the last mean covers only what was fed after it."),
])

# Section 6: `doubled` (a tf.function) called once with each of these, in order; the question is its trace count.
TRACED_ARGUMENTS = (("float32", [1.0, 2.0]), ("float32", [3.0, 4.0]), ("float32", [1.0, 2.0, 3.0]),
                    ("int32", [1, 2]), ("python", 2.0), ("python", 2.0))
_TENSOR_SIGNATURES = len({(kind, len(v)) for kind, v in TRACED_ARGUMENTS if kind != "python"})  # dtype, shape
_DISTINCT_TENSOR_VALUES = len({(kind, tuple(v)) for kind, v in TRACED_ARGUMENTS if kind != "python"})

q2_6 = Question("2.6", misconceptions=[
    Misconception("trace-per-signature", lambda guess, truth: guess == len(TRACED_ARGUMENTS),
                  "You counted one trace per call. A `tf.function` traces once for each new input signature "
                  "and runs the stored graph when a signature comes back."),
    Misconception("trace-per-signature", lambda guess, truth: guess == truth - _TENSOR_SIGNATURES + 1,
                  "You let every tensor share one trace. A tensor's signature is its dtype and its shape, so a "
                  "longer vector, or an int32 one, traces again."),
    Misconception("trace-per-signature",
                  lambda guess, truth: guess == truth - _TENSOR_SIGNATURES + _DISTINCT_TENSOR_VALUES,
                  "You traced again for a tensor with new values. Only a Python argument's value is part of the "
                  "signature; a tensor counts by dtype and shape alone."),
])

# Section 8: which of these rates makes the loss of 10 full-batch steps from zero grow ("none" if none does).
RATES = (0.03, 0.1, 0.15)

q2_8 = Question("2.8", kind="choice", choices=(*RATES, "none"), misconceptions=[
    Misconception("rate-too-high", lambda guess, truth: guess == "none" and truth in RATES,
                  "You expected larger steps only to train faster. Above a limit set by the loss's curvature, "
                  "each step overshoots the minimum by more than the last, and the loss grows."),
])
