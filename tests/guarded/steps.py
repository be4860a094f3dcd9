"""Shared pieces of the guard's tests: the worked example's data, a Dense(1) model and an eager step."""
import keras
import numpy as np
import tensorflow as tf

X = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
Y = 2 * X + 1


def make_model() -> keras.Model:
    inputs = keras.Input((1,))
    return keras.Model(inputs, keras.layers.Dense(1, kernel_initializer="zeros", name="dense")(inputs))


def eager_step(model, guard, x, y, disconnect=False, **kwargs):
    """One guarded step on `model` (a disconnected loss forgets to use the model's output)."""
    def loss_fn():
        y_pred = model(x, training=True)
        return tf.reduce_mean(tf.square(y if disconnect else y - y_pred))

    with tf.GradientTape() as tape:
        loss = loss_fn()
    return guard(tape.gradient(loss, model.trainable_variables), model.trainable_variables, loss_fn=loss_fn,
                 **kwargs)


def weights(model):
    return [v.numpy().copy() for v in model.trainable_variables]
