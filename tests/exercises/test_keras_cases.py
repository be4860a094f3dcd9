"""`keras_cases.tanh_mse`, which checks 2.6 and 2.7 use instead of building a model per call, gives the numbers
the Keras model itself gives: the same loss and tape gradients, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from tapelab.exercises.keras_cases import seeded_tanh_model, tanh_mse


@pytest.mark.parametrize(("seed", "rows", "features"), [(0, 1, 1), (3, 4, 2), (11, 7, 3), (29, 5, 5)])
def test_tanh_mse_is_the_models_loss_and_gradients(seed, rows, features):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, features)).astype(np.float32)
    y = rng.uniform(-1.0, 2.0, size=(rows, 1)).astype(np.float32)
    model = seeded_tanh_model(seed, features)
    for v in model.trainable_variables:  # weights away from the seeded start, as after a few steps
        v.assign(v.numpy() + rng.normal(scale=0.1, size=v.shape).astype(np.float32))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
    grads = tape.gradient(loss, model.trainable_variables)

    got_loss, got_grads = tanh_mse([v.numpy() for v in model.trainable_variables], x, y)

    assert got_loss == float(loss)
    assert len(got_grads) == len(grads)
    for got, want in zip(got_grads, grads):
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want.numpy())
