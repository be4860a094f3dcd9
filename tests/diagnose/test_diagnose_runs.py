"""Does diagnose leave no trace on the model, ask for the gradients once, and work on the user's own tape?"""
import keras
import numpy as np
import pytest
import tensorflow as tf

from tapelab.diagnose import diagnose

X = tf.constant([1.0, 2.0, 3.0])
Y = tf.constant([2.0, 4.0, 6.0])


def test_batchnorm_statistics_and_dropout_seed_are_restored():
    """After a training-mode run, are BatchNorm's statistics and dropout's seed state what they were?"""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.BatchNormalization(),
                              keras.layers.Dropout(0.5), keras.layers.Dense(1)])
    x = tf.constant([[1.0, 2.0, 3.0], [0.0, -1.0, 2.0], [4.0, 1.0, 0.5]])
    before = [v.numpy().copy() for v in model.non_trainable_variables]
    report = diagnose(lambda: tf.reduce_mean(model(x, training=True) ** 2), model=model)
    assert report.ok and len(report.restored) == len(before) == 3
    assert all(np.array_equal(a, v.numpy()) for a, v in zip(before, model.non_trainable_variables))


def test_a_counter_the_loss_bumps_is_restored():
    """Is a variable the loss function assigns (a step counter) put back after the run?"""
    w, steps = tf.Variable(0.5), tf.Variable(0.0)

    def loss_fn():
        steps.assign_add(1.0)
        return tf.reduce_mean((w * X - Y) ** 2)

    assert diagnose(loss_fn, [w]).ok and steps.numpy() == 0.0


def _counting(monkeypatch) -> list:
    calls = []
    original = tf.GradientTape.gradient

    def gradient(self, target, sources, *args, **kwargs):
        calls.append(sources)
        return original(self, target, sources, *args, **kwargs)

    monkeypatch.setattr(tf.GradientTape, "gradient", gradient)
    return calls


def test_every_gradient_is_asked_for_in_one_call(monkeypatch):
    """Does a healthy model's diagnosis ask the tape for all its gradients in a single call?"""
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    calls = _counting(monkeypatch)
    assert diagnose(lambda: tf.reduce_sum(model(tf.ones((2, 2)))), model=model).ok
    assert len(calls) == 1 and len(calls[0]) == 4


def test_a_lookup_error_falls_back_to_one_call_per_variable(monkeypatch):
    """After a LookupError, is each variable asked for separately, so the others still get their verdict?"""
    w, b = tf.Variable(1.0), tf.Variable(0.5)
    calls = _counting(monkeypatch)
    report = diagnose(lambda: tf.reduce_sum(tf.image.adjust_contrast(tf.ones([2, 2, 3]) * w, 2.0)) + b, [w, b])
    assert len(calls) == 3 and report["w"].cause == "no-gradient-registered"


def test_users_tape_without_watching_accessed_variables():
    """On a tape opened with `watch_accessed_variables=False`, is the unwatched variable named and the watched ok?"""
    w, b = tf.Variable(0.5), tf.Variable(0.1)

    def step(tape):
        with tape:
            tape.watch(b)
            loss = tf.reduce_mean((w * X + b - Y) ** 2)
        return loss

    report = diagnose(step, [w, b], tape=tf.GradientTape(watch_accessed_variables=False))
    assert report["b"].ok and report["w"].cause == "not-watched"
    assert "watch_accessed_variables=False" in report["w"].explanation


def test_users_tape_already_used_is_named_not_raised():
    """When the step already spent its non-persistent tape, is that reported instead of a RuntimeError?"""
    w = tf.Variable(0.5)

    def step(tape):
        with tape:
            loss = tf.reduce_mean((w * X - Y) ** 2)
        tape.gradient(loss, w)
        return loss

    entry = diagnose(step, [w], tape=tf.GradientTape())["w"]
    assert entry.cause == "tape-used-twice"


def test_users_persistent_tape_healthy_step():
    """Does a healthy step on the user's own persistent tape come back ok?"""
    w = tf.Variable(0.5)

    def step(tape):
        with tape:
            loss = tf.reduce_mean((w * X - Y) ** 2)
        return loss

    assert diagnose(step, [w], tape=tf.GradientTape(persistent=True)).ok


def test_a_loss_function_with_a_parameter_needs_the_tape_argument():
    """Is a loss function that takes an argument refused without `tape=`, instead of guessed?"""
    with pytest.raises(ValueError, match="tape=True"):
        diagnose(lambda tape: tf.constant(1.0), [tf.Variable(1.0)])


@pytest.mark.parametrize("returned, code", [(lambda t: float(t), "numpy-in-path"), (lambda t: t.numpy().sum(), "numpy-in-path"),
                                             (lambda t: None, "none-target")])
def test_a_loss_that_is_not_a_tensor_is_named(returned, code):
    """Is a loss function returning a Python number, a NumPy value or None named for that, not as unconnected?"""
    w = tf.Variable(0.5)
    entry = diagnose(lambda: returned(tf.reduce_sum(w * X)), [w])["w"]
    assert (entry.status, entry.cause) == ("None", code) and "returned" in entry.explanation
