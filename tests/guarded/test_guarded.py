"""Behaviours of GuardedApply in eager mode: good steps applied, None and non-finite gradients refused or
skipped (bounded), one structured record per step, and the test matrix of notebook 06. Graph mode, fit,
checkpoints and mixed precision are in tests/guarded/; losses, None policies and records in
tests/guarded/test_guard_policies.py."""
import json
import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

from guarded.steps import X, Y, eager_step as _step, make_model as _model, weights as _weights
from tapelab.guarded import BadGradientsError, GuardedApply, JsonFormatter, StepOutcome, name_bad_variables


def test_good_step_is_applied_like_the_optimizer_and_reports_norms():
    """Does a good step update the weights exactly as SGD would (w 3.5, b 1.2), with norms 35, 12 and 37?"""
    model = _model()
    outcome = _step(model, GuardedApply(keras.optimizers.SGD(0.1)), X, Y)
    assert outcome.applied and outcome.reason == "" and outcome.step == 1
    assert outcome.norms == pytest.approx({"dense/kernel": 35.0, "dense/bias": 12.0})
    assert outcome.global_norm == pytest.approx(37.0)
    kernel, bias = _weights(model)
    assert kernel.item() == pytest.approx(3.5) and bias.item() == pytest.approx(1.2)


def test_none_gradients_raise_by_default_and_leave_weights_alone():
    """Does a disconnected loss raise BadGradientsError naming the variables, with diagnose's report?"""
    model = _model()
    with pytest.raises(BadGradientsError) as failure:
        _step(model, GuardedApply(keras.optimizers.SGD(0.1)), X, Y, disconnect=True)
    message = str(failure.value)
    assert "`dense/kernel`" in message and "`dense/bias`" in message and "None" in message
    assert "\nDiagnosis: " in message and "dense/kernel: None" in message.partition("Diagnosis: ")[2]
    assert failure.value.outcome.outcome == "raised" and failure.value.outcome.none == ("dense/kernel", "dense/bias")
    assert all(not np.any(w) for w in _weights(model))


def test_non_finite_gradients_are_refused():
    """Does an overflowing batch give a non-finite reason and no update, instead of NaN weights?"""
    model = _model()
    guard = GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip")
    outcome = _step(model, guard, X * 1e20, Y * 1e20)
    assert outcome.outcome == "skipped" and outcome.reason == "non_finite"
    assert "dense/kernel" in outcome.non_finite
    assert all(np.all(np.isfinite(w)) and not np.any(w) for w in _weights(model))


def test_skips_are_bounded_and_a_good_step_resets_the_count():
    """With max_skips=2: skip, skip, good, skip, skip, then does the third bad step in a row raise?"""
    guard = GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip", max_skips=2)
    model = _model()
    bad, good = (X * 1e20, Y * 1e20), (X, Y)
    outcomes = [_step(model, guard, *batch).outcome for batch in (bad, bad, good, bad, bad)]
    assert outcomes == ["skipped", "skipped", "applied", "skipped", "skipped"]
    with pytest.raises(BadGradientsError, match="after 2 skipped step"):
        _step(model, guard, *bad)
    assert {k: guard.counters[k] for k in ("steps", "applied", "skipped", "raised")} == {
        "steps": 6, "applied": 1, "skipped": 4, "raised": 1}


def test_max_skips_zero_raises_on_the_first_bad_step():
    """Is `on_bad="skip", max_skips=0` the same as failing fast?"""
    guard = GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip", max_skips=0)
    with pytest.raises(BadGradientsError):
        _step(_model(), guard, X, Y, disconnect=True)


def test_one_record_per_step_with_step_id_outcome_and_norms():
    """Does `log` receive one flat, JSON-serialisable dict per step, raised steps included?"""
    records = []
    guard = GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip", max_skips=1, log=records.append)
    model = _model()
    _step(model, guard, X, Y)
    _step(model, guard, X, Y, disconnect=True)
    with pytest.raises(BadGradientsError):
        _step(model, guard, X, Y, disconnect=True)
    assert [(r["step"], r["outcome"], r["reason"]) for r in records] == [
        (1, "applied", ""), (2, "skipped", "none"), (3, "raised", "none")]
    assert records[0]["event"] == "gradient_step" and records[0]["norms"]["dense/bias"] == pytest.approx(12.0)
    assert records[1]["global_norm"] is None and records[1]["none"] == ["dense/kernel", "dense/bias"]
    json.dumps(records)


def test_json_formatter_merges_a_record_into_one_line():
    """Does JsonFormatter turn a dict message into one JSON object with logger and level?"""
    record = StepOutcome(4, "applied", 5.0, {"w": 5.0}).record()
    line = JsonFormatter().format(logging.makeLogRecord({"name": "train", "levelname": "INFO", "msg": record}))
    data = json.loads(line)
    assert data["logger"] == "train" and data["step"] == 4 and data["outcome"] == "applied"
    plain = json.loads(JsonFormatter().format(logging.makeLogRecord({"msg": "hello %s", "args": ("you",)})))
    assert plain["message"] == "hello you"


def test_custom_explain_hook_words_the_error():
    """Is the `explain` callable used for the error message?"""
    guard = GuardedApply(keras.optimizers.SGD(0.1), explain=lambda none, bad: f"custom: {list(none)}")
    w = tf.Variable(1.0, name="w")
    with pytest.raises(BadGradientsError, match=r"custom: \['w'\]"):
        guard([None], [w])


def test_default_explanation_is_singular_or_plural():
    """Does the default message read well for one and for several variables?"""
    assert name_bad_variables(["w"], []).startswith("The gradient of `w` is None")
    assert name_bad_variables(["a", "b"], ["c"]).startswith("The gradients of `a`, `b` are None")


@pytest.mark.parametrize("kwargs", [{"on_bad": "ignore"}, {"max_skips": -1}])
def test_invalid_settings_are_rejected(kwargs):
    """Are an unknown on_bad and a negative max_skips refused at construction?"""
    with pytest.raises(ValueError):
        GuardedApply(keras.optimizers.SGD(0.1), **kwargs)


def test_mismatched_lengths_are_a_usage_error():
    """Do gradients and variables of different lengths raise ValueError, counting no step?"""
    guard = GuardedApply(keras.optimizers.SGD(0.1))
    with pytest.raises(ValueError, match="2 gradients for 1 variables"):
        guard([tf.constant(1.0), tf.constant(2.0)], [tf.Variable(0.0)])
    assert guard.counters["steps"] == 0


MATRIX = {
    "normal batch": (X, Y, False, "applied"),
    "batch of one": (X[:1], Y[:1], False, "applied"),
    "extreme values": (X * 1e20, Y * 1e20, False, "skipped"),
    "disconnected loss": (X, Y, True, "skipped"),
}


@pytest.mark.parametrize("case", sorted(MATRIX))
def test_matrix(case):
    """Normal, boundary and failure cases: is each applied or skipped, and do weights move only if applied?"""
    x, y, disconnect, expected = MATRIX[case]
    model = _model()
    outcome = _step(model, GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip"), x, y, disconnect)
    assert outcome.outcome == expected
    moved = any(np.any(w) for w in _weights(model))
    assert moved == (expected == "applied")


def test_matrix_large_batch():
    """Scale: is a 100,000-row batch applied, with finite norms, and the same update as plain SGD?"""
    rng = np.random.default_rng(6)
    x = rng.uniform(-1, 1, size=(100_000, 1)).astype(np.float32)
    y = 2 * x + 1
    guarded, plain = _model(), _model()
    outcome = _step(guarded, GuardedApply(keras.optimizers.SGD(0.1)), x, y)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - plain(x)))
    keras.optimizers.SGD(0.1).apply(tape.gradient(loss, plain.trainable_variables), plain.trainable_variables)
    assert outcome.applied and np.isfinite(outcome.global_norm)
    for a, b in zip(_weights(guarded), _weights(plain)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_guard_writes_nothing_to_stdout_or_stderr(capfd):
    """Are good, skipped and raised steps silent (no warnings from the optimizer)?"""
    guard = GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip", max_skips=1)
    model = _model()
    _step(model, guard, X, Y)
    _step(model, guard, X, Y, disconnect=True)
    with pytest.raises(BadGradientsError):
        _step(model, guard, X, Y, disconnect=True)
    assert capfd.readouterr() == ("", "")
