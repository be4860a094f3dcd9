"""Decide a step in tensor ops (the same code eagerly and in a graph), then read the decision on the host.

`decide` turns the measured vector and the counters into the step's outcome and the new counters without
leaving the device; `outcome_from_report` turns the report vector, once it is on the host, into a
`StepOutcome`. Keeping one decision path means eager mode, `tf.function` and `fit` cannot disagree.

With a LossScaleOptimizer, non-finite gradients are the optimizer's business: it lowers its loss scale and
skips the update itself, so the guard passes them through and neither counts nor resets the skip bound.
"""
from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from tapelab.guarded.measure import (BATCH_ROWS, ITERATIONS, LEARNING_RATE, LOSS, LOSS_SCALE, LOSS_SIZE,
                                        Layout)
from tapelab.guarded.records import StepOutcome

OUTCOMES = ("applied", "skipped", "raised")
LOSS_CODES = ("", "non_finite", "empty")
STEPS, APPLIED, SKIPPED, RAISED, CONSECUTIVE = range(5)
COUNTER_NAMES = ("steps", "applied", "skipped", "raised", "consecutive_skips")
# The report is [measured vector..., outcome code, loss code, apply flag, counters...].
OUTCOME, LOSS_CODE, APPLY = range(3)


def decide(stats: tf.Tensor, layout: Layout, counters: tf.Tensor, *, raise_first: bool,
           max_skips: int) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """(apply: bool, new counters: int64[5], report: float64 vector) for one step."""
    n = len(layout.present)
    grads_finite = tf.reduce_all(tf.math.is_finite(stats[:n]))
    extra = stats[n:]
    empty = (extra[LOSS_SIZE] == 0) | (extra[BATCH_ROWS] == 0)
    loss_code = tf.where(empty, 2, tf.where(tf.math.is_finite(extra[LOSS]), 0, 1))
    loss_ok = tf.equal(loss_code, 0)
    none_ok = tf.constant(not layout.none and bool(layout.present))
    good = grads_finite & loss_ok & none_ok
    scale_skip = tf.constant(layout.loss_scaled) & ~grads_finite & loss_ok & none_ok
    bad = ~good & ~scale_skip
    consecutive = counters[CONSECUTIVE]
    raised = bad & tf.constant(raise_first) | bad & (consecutive >= max_skips)
    skipped = scale_skip | bad & ~raised
    new_consecutive = tf.where(good, tf.constant(0, tf.int64),
                               tf.where(bad & ~raised, consecutive + 1, consecutive))
    new_counters = tf.stack([counters[STEPS] + 1, counters[APPLIED] + tf.cast(good, tf.int64),
                             counters[SKIPPED] + tf.cast(skipped, tf.int64),
                             counters[RAISED] + tf.cast(raised, tf.int64), new_consecutive])
    apply = good | scale_skip
    outcome = tf.where(good, 0, tf.where(raised, 2, 1))
    head = tf.cast(tf.stack([outcome, loss_code]), tf.float64)
    report = tf.concat([stats, head, [tf.cast(apply, tf.float64)], tf.cast(new_counters, tf.float64)], 0)
    return apply, new_counters, report


def counters_of(report: np.ndarray, layout: Layout) -> dict[str, int]:
    """The counters stored at the end of a report."""
    start = layout.size + 3
    return {name: int(report[start + i]) for i, name in enumerate(COUNTER_NAMES)}


def apply_flag(report: np.ndarray, layout: Layout) -> bool:
    return bool(report[layout.size + APPLY])


def outcome_from_report(report: np.ndarray, layout: Layout, *, run_id: str,
                        step_seconds: float | None) -> StepOutcome:
    """The StepOutcome a report describes (the report is on the host already: no further sync)."""
    n = len(layout.present)
    squares = report[:n]
    extra = report[n:layout.size]
    norms: dict[str, float | None] = {name: None for name in layout.names}
    non_finite = []
    for index, square in zip(layout.present, squares):
        name = layout.names[index]
        norms[name] = math.sqrt(square) if math.isfinite(square) else float(square)
        if not math.isfinite(square):
            non_finite.append(name)
    global_norm = math.sqrt(float(np.sum(squares))) if n else None
    counters = counters_of(report, layout)
    outcome = OUTCOMES[int(report[layout.size + OUTCOME])]
    return StepOutcome(
        step=counters["steps"], outcome=outcome, global_norm=global_norm, norms=norms, none=layout.none,
        non_finite=tuple(non_finite), consecutive_skips=counters["consecutive_skips"], dropped=layout.dropped,
        loss=float(extra[LOSS]) if layout.has_loss else None,
        loss_problem=LOSS_CODES[int(report[layout.size + LOSS_CODE])],
        iterations=int(extra[ITERATIONS]) + (outcome == "applied"), learning_rate=float(extra[LEARNING_RATE]),
        step_seconds=step_seconds, loss_scale=float(extra[LOSS_SCALE]) if layout.loss_scaled else None,
        run_id=run_id)
