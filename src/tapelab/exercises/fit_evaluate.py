"""Checking a custom `test_step` against plain `evaluate` (Exercise 6.1): once the student's model trains as
`fit` does, `evaluate` runs on it and on a plain compiled model with the same weights, on the same batches, and
the results are compared; a wrong one is told apart from known wrong steps (the weights dropped, the last
batch's numbers returned, a step that trains)."""
from __future__ import annotations

from functools import lru_cache

import keras
import numpy as np

from tapelab.checker.compare import agrees, allclose, fmt_pair
from tapelab.checker.messages import Incorrect
from tapelab.checker.wrong_answers import Alternative, because
from tapelab.exercises.dtype_policies import dtype_policy
from tapelab.exercises.fit_cases import FitCase, batches_read
from tapelab.exercises.fit_match import _model_kind, weighted_failure
from tapelab.quiet import Quiet

__all__ = ["check_evaluate"]


def _plain_evaluate(weights: list[np.ndarray], case: FitCase, batches) -> dict[str, float]:
    """What a plain functional model with `weights`, compiled as the case says, reports from `evaluate`: what
    `evaluate` does, eagerly, without its callbacks and iterators (the metrics reset, Keras's own `test_step` on
    each batch, the metrics' results; tests/exercises/test_fit_baseline.py compares it with `evaluate`)."""
    model = _plain_model(case)
    model.set_weights(weights)
    with Quiet():
        model.reset_metrics()
        for batch in batches:
            model.test_step(batch)
        return {key: float(value) for key, value in model.get_metrics_result().items()}


@lru_cache(maxsize=32)
def _plain_model(case: FitCase) -> keras.Model:
    """The case's plain model, built under its dtype policy and compiled as the case says: once per case and
    process, given the weights to evaluate each time."""
    with dtype_policy(case.policy):
        model = case.model()
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss=case.loss_object(), **case.metric_options(),
                      jit_compile=False, run_eagerly=True)
    return model


def _unweighted(case: FitCase) -> tuple:
    """The case's batches without their weights."""
    return tuple(batch[:2] for batch in batches_read(case))


def _evaluated(model: keras.Model, case: FitCase) -> dict:
    """What the student's `model.evaluate` returns on the case's batches, eagerly: tracing a test function costs
    more than its few batches take eagerly."""
    model.run_eagerly = True
    return model.evaluate(case.batches(), verbose=0, return_dict=True)


def check_evaluate(exercise, fn, model: keras.Model, case: FitCase) -> None:
    """Does the trained `model`'s own `test_step` make `evaluate` report what a plain model reports?"""
    name = f"{exercise.answer}({case.shown()})"
    # The model is the student's: every use of it goes through `run`, whose outcome the grader's judge is served
    # (tapelab.checker.replay).
    if not exercise.run(lambda: _model_kind(model, "test_step"), "Reading your model").value[1]:
        raise Incorrect(f"Your model trains as `fit` does, but `{name}` returned a model whose class does not "
                        "override `test_step`, so `evaluate` runs Keras's own. Define `def test_step(self, data):` "
                        "in your class too.", cause="no-test-step")
    where = f" (on {case.describe(exercise.compile_loss)})"
    weights = exercise.run(lambda: model.get_weights(), "Reading your model's weights").value
    want = _plain_evaluate(weights, case, batches_read(case))
    try:
        got = exercise.run(lambda: _evaluated(model, case), f"Evaluating your trained model with `evaluate` "
                           f"({case.describe(exercise.compile_loss)})").value
    except Incorrect as problem:
        weighted_failure(problem, case, "evaluate", "test_step", fn)
        raise
    after = exercise.run(lambda: model.get_weights(), "Reading your model's weights after `evaluate`").value
    if not all(np.array_equal(a, b) for a, b in zip(weights, after)):
        raise Incorrect(f"`evaluate` changed your model's weights{where}: your `test_step` trains. `evaluate` only "
                        "measures: no tape, no `self.optimizer.apply`, and `self(x, training=False)`.",
                        cause="evaluate-trains")
    if sorted(got) != sorted(want):
        raise Incorrect(f"`evaluate` returned the keys {sorted(got)}, but a plain model gives {sorted(want)}{where}. "
                        "Does your `test_step` update every metric in `self.metrics` and return "
                        "`{m.name: m.result() for m in self.metrics}`?", cause="metrics-not-returned")
    last = batches_read(case)[-1:]
    for key in sorted(want):
        value = float(np.asarray(got[key]))
        if agrees(want[key], value, case.rtol(key), 1e-4):
            continue
        got_text, want_text = fmt_pair(value, want[key], case.rtol(key), 1e-4)
        if value == 0.0:  # what a metric reports when `evaluate` has reset it and no step updated it since
            raise Incorrect(f"`evaluate` gives {key} = 0, but a plain model with your weights gives {want_text}{where}. "
                            "Your model trains correctly, so the bug is in `test_step`: `evaluate` resets every "
                            f"tracker first, and one that no `test_step` updates reports 0. Does your `test_step` "
                            f"update the `\"{key}\"` tracker?", cause="metric-not-updated")
        alternatives = [Alternative("last batch", lambda: _plain_evaluate(weights, case, last)[key],
                                    "batch-loss-reported",
                                    "That is the value of the last batch alone. Did your `test_step` return the "
                                    "batch's own number instead of the metrics' `result()`, the mean over every "
                                    "batch `evaluate` ran?")] if case.steps > 1 else []
        if case.weighted:
            fed = ("to `compute_loss`" if key == "loss" else
                   "to this metric's `update_state(y, y_pred, sample_weight=sample_weight)`")
            alternatives.insert(0, Alternative(
                "weights dropped", lambda: _plain_evaluate(weights, case, _unweighted(case))[key], "sample-weight-ignored",
                f"That is what `evaluate` reports without the sample weights: does your `test_step` pass them {fed}?"))
        says, code = because(want[key], value, alternatives,
                             "Does your `test_step` compute the loss as `train_step` does, and update each metric "
                             "the same way?", case.rtol(key), 1e-4)
        raise Incorrect(f"`evaluate` gives {key} = {got_text}, but a plain model with your weights gives {want_text}"
                        f"{where}. Your model trains correctly, so the bug is in `test_step`. {says}", cause=code)
