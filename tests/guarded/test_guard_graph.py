"""Does the guard work where production steps run: inside tf.function, in a train_step under fit, and
across a checkpoint restore, with the same decisions as in eager mode?"""
import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from guarded.steps import X, Y, make_model, weights
from tapelab.guarded import BadGradientsError, GuardCallback, GuardedApply

BAD = (X * 1e20, Y * 1e20)


def _compiled_step(model, guard):
    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        return guard(tape.gradient(loss, model.trainable_variables), model.trainable_variables, loss=loss, batch=x)
    return step


def test_tf_function_step_applies_good_and_skips_bad_like_eager():
    """In a tf.function, is a good step applied exactly as SGD would (w 3.5, b 1.2) and a bad one refused?"""
    records = []
    model = make_model()
    guard = GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip", log=records.append)
    step = _compiled_step(model, guard)
    result = step(X, Y)
    assert bool(result["applied"]) and float(result["global_norm"]) == pytest.approx(37.0)
    assert guard.poll().applied
    np.testing.assert_allclose([w.item() for w in weights(model)], [3.5, 1.2], rtol=1e-6)
    assert not bool(step(*BAD)["applied"])
    outcome = guard.poll()
    assert outcome.outcome == "skipped" and outcome.reason == "non_finite+non_finite_loss"
    np.testing.assert_allclose([w.item() for w in weights(model)], [3.5, 1.2], rtol=1e-6)
    assert guard.poll() is None  # nothing new since the last poll
    assert [(r["step"], r["outcome"], r["iterations"]) for r in records] == [(1, "applied", 1), (2, "skipped", 1)]
    assert records[0]["loss"] == pytest.approx(41.0) and records[0]["learning_rate"] == pytest.approx(0.1)


def test_tf_function_step_raises_at_the_poll_after_max_skips():
    """Is the bound on skips kept in the graph, and does the next poll raise BadGradientsError?"""
    model = make_model()
    guard = GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip", max_skips=1)
    step = _compiled_step(model, guard)
    step(*BAD)
    assert guard.poll().outcome == "skipped"
    step(*BAD)
    with pytest.raises(BadGradientsError, match="after 1 skipped step"):
        guard.poll()
    assert {k: guard.counters[k] for k in ("steps", "applied", "skipped", "raised")} == {
        "steps": 2, "applied": 0, "skipped": 1, "raised": 1}


class GuardedModel(keras.Model):
    """A Keras 3 train_step override that hands its gradients to a guard."""

    def __init__(self, guard, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(1, kernel_initializer="zeros", name="dense")
        self.guard = guard

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred)
        self.guard(tape.gradient(loss, self.trainable_variables), self.trainable_variables,
                            loss=loss, batch=x)
        for metric in self.metrics:
            metric.update_state(loss) if metric.name == "loss" else metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def _fit(guard, batches, jit_compile=False, publish=None):
    model = GuardedModel(guard)
    model.compile(optimizer=guard.optimizer, loss="mse", jit_compile=jit_compile)
    xs = np.concatenate([x for x, _ in batches])
    ys = np.concatenate([y for _, y in batches])
    history = model.fit(xs, ys, batch_size=len(batches[0][0]), shuffle=False, verbose=0,
                        callbacks=[GuardCallback(model.guard, publish=publish)])
    return model, history


def test_fit_with_train_step_override_skips_a_bad_batch_and_reports_counters():
    """Under fit, compiled with XLA, is an extreme batch skipped, the weights kept finite, and are the
    counters in the epoch's logs and every record strict JSON?"""
    records, published = [], []
    model, history = _fit(GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip", log=records.append),
                          [(X, Y), BAD, (X, Y)], jit_compile=True, publish=published.append)
    assert [r["outcome"] for r in records] == ["applied", "skipped", "applied"]
    assert history.history["guard_skipped"] == [1] and history.history["guard_applied"] == [2]
    assert history.history["guard_latency_count"] == [2]  # the times between the three batch ends
    assert len(published) == 1 and published[0]["skipped"] == 1 and published[0]["raised"] == 0
    assert all(np.all(np.isfinite(w)) for w in weights(model))
    assert int(model.optimizer.iterations) == 2 == records[-1]["iterations"]
    for record in records:
        json.loads(json.dumps(record, allow_nan=False))


def test_fit_raises_bad_gradients_error_when_the_guard_fails_fast():
    """With on_bad="raise", does fit stop with BadGradientsError at the bad batch, weights untouched by it?"""
    with pytest.raises(BadGradientsError, match="Step 2: gradients not applied"):
        _fit(GuardedApply(keras.optimizers.SGD(0.1)), [(X, Y), BAD, (X, Y)])


def test_counters_survive_a_checkpoint_restore(tmp_path):
    """Do the counters and the step numbering continue from a checkpoint in a fresh guard?"""
    model = make_model()
    guard = GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip")
    step = _compiled_step(model, guard)
    for batch in ((X, Y), BAD, (X, Y)):
        step(*batch)
    path = tf.train.Checkpoint(model=model, guard=guard).save(str(tmp_path / "ckpt"))
    restored_model = make_model()
    restored = GuardedApply(keras.optimizers.SGD(0.1), on_bad="skip")
    tf.train.Checkpoint(model=restored_model, guard=restored).restore(path).assert_existing_objects_matched()
    assert {k: restored.counters[k] for k in ("steps", "applied", "skipped")} == {"steps": 3, "applied": 2,
                                                                                  "skipped": 1}
    assert _compiled_step(restored_model, restored)(X, Y)["step"] == 4
    assert int(restored.optimizer.iterations) == 3
