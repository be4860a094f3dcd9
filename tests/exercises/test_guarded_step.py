"""Exercise 6.5's reference step writes the zero `Dense(1)` out as two variables: on every row of the visible
and the hidden test matrix it must give what one SGD step of the layer itself gives."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from tapelab.exercises.guarded_step import LEARNING_RATE, _model, _reference, matrix

ROWS = [(features, row) for features, seed in ((2, 0), (3, 7)) for row in matrix(features, seed) if not row.raises]


@pytest.mark.parametrize("features,row", ROWS, ids=[f"{f} features, {row.name}" for f, row in ROWS])
def test_reference_is_one_sgd_step_of_the_layer(features, row):
    model = _model(features)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(row.y - model(row.x, training=True)))
    grads = tape.gradient(loss, model.trainable_variables)
    finite = [bool(np.all(np.isfinite(g.numpy()))) for g in grads]
    if all(finite):
        keras.optimizers.SGD(LEARNING_RATE).apply(grads, model.trainable_variables)
    stepped, got_loss, non_finite = _reference(features, row)
    np.testing.assert_array_equal(got_loss, float(loss))
    assert [not kind for kind in non_finite] == finite
    assert [kind for kind in non_finite if kind] == [
        "NaN" if np.isnan(g.numpy()).any() else "Inf" for g in grads if not np.all(np.isfinite(g.numpy()))]
    if all(finite):  # a step the guard applies: the reference weights are the layer's after SGD
        for got, want in zip(stepped, model.trainable_variables):
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-6, atol=1e-7)


def test_the_check_traces_a_step_once_for_every_good_row():
    """Does the check trace the student's step once per case for all its rows (the batch size left open), and once
    more for the malformed batch, whose error must come from a trace of its own shapes?"""
    from tapelab.exercises.fit_vs_custom import ex6_5

    traced = []

    def safe_step(model, optimizer, x, y):
        traced.append(tuple(x.shape))  # Python runs only while tf.function traces
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        ok = tf.math.is_finite(loss)
        for g in grads:
            ok = ok & tf.reduce_all(tf.math.is_finite(g))
        return tf.cond(ok, lambda: (optimizer.apply(grads, model.trainable_variables), tf.constant(True))[1],
                       lambda: tf.constant(False))

    ex6_5.check(safe_step)
    malformed = next(row for row in matrix(2, 0) if row.raises)
    assert traced == [(None, 2), malformed.x.shape]
