"""Does the guard check the loss (non-finite, empty batch), follow its policy for partial None gradients,
keep IndexedSlices sparse, name duplicate variables apart, and write records a machine can parse, with
bounded retries for a flaky log sink?"""
import json
import logging
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from guarded.steps import X, Y, eager_step, make_model, weights
from tapelab.guarded import GuardedApply, JsonFormatter, StepOutcome, with_retries


def _no_constants(name):
    raise AssertionError(f"not strict JSON: {name}")


def _parse(record):
    return json.loads(json.dumps(record), parse_constant=_no_constants)


def test_a_non_finite_loss_is_a_bad_step_even_with_finite_gradients():
    """Is a NaN loss passed with finite gradients skipped with reason non_finite_loss, weights unchanged?"""
    w = tf.Variable(1.0, name="w")
    guard = GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip")
    outcome = guard([tf.constant(2.0)], [w], loss=tf.constant(float("nan")))
    assert outcome.outcome == "skipped" and outcome.reason == "non_finite_loss" and w.numpy() == 1.0


def test_an_empty_batch_is_a_bad_step_not_applied(capfd):
    """Is a batch with no rows refused (empty_batch), whether the loss is a NaN mean or Keras's empty loss?"""
    model = make_model()
    model.compile(loss="mse")
    empty = X[:0]
    guard = GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip", max_skips=5)
    with tf.GradientTape() as tape:
        loss = model.compute_loss(x=empty, y=empty, y_pred=model(empty))
    grads = tape.gradient(tf.reduce_sum(loss), model.trainable_variables)
    keras_loss = guard(grads, model.trainable_variables, loss=loss)
    mean_loss = eager_step(model, guard, empty, empty, loss=None, batch=empty)
    assert not keras_loss.applied and keras_loss.loss_problem == "empty" and "empty_batch" in keras_loss.reason
    assert not mean_loss.applied and "empty_batch" in mean_loss.reason
    assert all(not np.any(w) for w in weights(model)) and capfd.readouterr() == ("", "")


def _two_layer_step(guard, **kwargs):
    used, unused = keras.layers.Dense(1, name="used"), keras.layers.Dense(1, name="unused")
    used.build((None, 1)), unused.build((None, 1))
    variables = used.trainable_variables + unused.trainable_variables
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(Y - used(X)))
    before = [v.numpy().copy() for v in variables]
    outcome = guard(tape.gradient(loss, variables), variables, loss=loss, **kwargs)
    moved = [bool(np.any(v.numpy() != b)) for v, b in zip(variables, before)]
    return outcome, moved


@pytest.mark.parametrize("allow_none", [{"unused/kernel", "unused/bias"}, lambda name: name.startswith("unused/"),
                                        True], ids=["names", "predicate", "any"])
def test_allowed_none_gradients_are_dropped_and_the_rest_applied(allow_none, capfd):
    """With an allow_none policy, are the unused layer's None gradients dropped (listed, unchanged, no
    Keras warning on stderr) and the used layer updated?"""
    outcome, moved = _two_layer_step(GuardedApply(keras.optimizers.SGD(0.1), allow_none=allow_none))
    assert outcome.applied and outcome.dropped == ("unused/kernel", "unused/bias") and outcome.none == ()
    assert moved == [True, True, False, False]
    assert capfd.readouterr() == ("", "")


def test_a_none_gradient_outside_the_policy_is_still_bad():
    """Does a policy naming only `unused/bias` leave `unused/kernel`'s None gradient a bad step?"""
    outcome, moved = _two_layer_step(GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip",
                                                  allow_none={"unused/bias"}))
    assert outcome.outcome == "skipped" and outcome.none == ("unused/kernel",) and not any(moved)


def test_all_none_is_bad_even_when_none_is_allowed():
    """Is a step with no gradient at all refused even with allow_none=True (nothing would be applied)?"""
    guard = GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip", allow_none=True)
    outcome = guard([None], [tf.Variable(1.0, name="w")])
    assert outcome.outcome == "skipped" and outcome.none == ("w",) and outcome.dropped == ()


def test_indexed_slices_stay_sparse_and_their_norm_counts_repeated_rows():
    """Does an Embedding's IndexedSlices gradient reach the optimizer sparse, with the dense gradient's norm
    (rows 1, 1, 3 looked up: sqrt(2^2 + 2^2 + 1 + 1) = sqrt(10))?"""
    embedding = keras.layers.Embedding(5, 2, name="embedding")
    embedding.build((None,))
    optimizer = keras.optimizers.SGD(0.1)
    seen = []
    apply = optimizer.apply
    optimizer.apply = lambda grads, variables: (seen.extend(type(g) for g in grads), apply(grads, variables))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(embedding(tf.constant([1, 1, 3])))
    outcome = GuardedApply(optimizer)(tape.gradient(loss, embedding.trainable_variables),
                                      embedding.trainable_variables, loss=loss)
    assert outcome.applied and seen == [tf.IndexedSlices]
    assert outcome.norms["embedding/embeddings"] == pytest.approx(math.sqrt(10))


def test_duplicate_variable_names_do_not_collide():
    """Do two variables both named `w` get separate norms (`w@0`, `w@1`)?"""
    a, b = tf.Variable(1.0, name="w"), tf.Variable(1.0, name="w")
    outcome = GuardedApply(keras.optimizers.SGD(0.1))([tf.constant(3.0), tf.constant(4.0)], [a, b])
    assert outcome.norms == {"w@0": 3.0, "w@1": 4.0} and outcome.global_norm == 5.0


def test_every_record_is_strict_json_with_time_run_iterations_loss_and_rate():
    """Does each record (good, non-finite, None) parse as strict JSON and carry timestamp, run_id, the
    optimizer's iterations, loss, learning rate and step time?"""
    records = []
    guard = GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip", log=records.append, run_id="run-7")
    model = make_model()
    for batch, disconnect in (((X, Y), False), ((X * 1e20, Y * 1e20), False), ((X, Y), True), ((X, Y), False)):
        with tf.GradientTape() as tape:
            prediction = model(batch[0])
            loss = tf.reduce_mean(tf.square(batch[1] - (0 if disconnect else prediction)))
        guard(tape.gradient(loss, model.trainable_variables), model.trainable_variables, loss=loss)
    parsed = [_parse(r) for r in records]
    assert [(r["outcome"], r["iterations"]) for r in parsed] == [
        ("applied", 1), ("skipped", 1), ("skipped", 1), ("applied", 2)]
    assert all(r["run_id"] == "run-7" and r["timestamp"].endswith("Z") for r in parsed)
    assert parsed[0]["loss"] == pytest.approx(41.0) and parsed[0]["learning_rate"] == pytest.approx(0.1)
    assert parsed[0]["step_seconds"] is None and parsed[1]["step_seconds"] > 0
    assert parsed[1]["global_norm"] is None and parsed[1]["loss"] is None and parsed[1]["non_finite"]
    assert guard.latency["count"] == 3 and guard.latency["seconds_sum"] >= parsed[1]["step_seconds"]


def test_json_formatter_writes_strict_json_with_a_timestamp():
    """Does JsonFormatter turn NaN and Inf into null and stamp a plain message with the time?"""
    record = StepOutcome(4, "skipped", float("inf"), {"w": float("nan")}, non_finite=("w",)).record()
    line = JsonFormatter().format(logging.makeLogRecord({"name": "train", "levelname": "WARNING", "msg": record}))
    data = json.loads(line, parse_constant=_no_constants)
    assert data["global_norm"] is None and data["norms"] == {"w": None} and data["non_finite"] == ["w"]
    plain = json.loads(JsonFormatter().format(logging.makeLogRecord({"msg": "hello"})))
    assert plain["timestamp"].endswith("Z")


def test_a_flaky_log_sink_is_retried_with_backoff_then_dropped_and_counted():
    """Is a sink that fails twice retried after 0.05 s and 0.1 s, and one that always fails dropped
    (counted in log_failures) without stopping the step?"""
    delivered, sleeps, failures = [], [], iter([OSError("busy"), ConnectionError("reset")])

    def flaky(record):
        error = next(failures, None)
        if error:
            raise error
        delivered.append(record)

    w = tf.Variable(1.0, name="w")
    GuardedApply(keras.optimizers.SGD(0.1), log=flaky, sleep=sleeps.append)([tf.constant(1.0)], [w])
    assert len(delivered) == 1 and sleeps == [0.05, 0.1]

    def broken(record):
        raise TimeoutError("metrics server down")

    guard = GuardedApply(keras.optimizers.SGD(0.1), log=broken, log_retries=1, sleep=sleeps.append)
    assert guard([tf.constant(1.0)], [w]).applied and guard.counters["log_failures"] == 1


def test_retries_do_not_hide_bugs_and_reraise_after_the_last_attempt():
    """Is a non-transient error raised at once, and a transient one raised after `attempts` calls?"""
    calls = []

    def fetch():
        calls.append(1)
        raise OSError("flaky store")

    with pytest.raises(OSError):
        with_retries(fetch, attempts=3, sleep=lambda s: None)()
    assert len(calls) == 3
    with pytest.raises(KeyError):
        with_retries(lambda: {}["batch"], sleep=lambda s: pytest.fail("retried a bug"))()
