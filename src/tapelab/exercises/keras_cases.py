"""The Keras models, losses and data that the checkers of notebook 02_model_variables build: the worked
example, a zero-initialised Dense model (optionally with a layer loss) and a seeded
Dense-BatchNormalization-Dense model, whose output depends on `training`."""
from __future__ import annotations

from typing import Callable

import keras
import numpy as np
import tensorflow as tf

__all__ = ["LOSSES", "worked_example", "dense_model", "bn_case", "short_path", "train_step_fn"]

LOSSES: dict[str, Callable[[], keras.losses.Loss]] = {
    "mse": keras.losses.MeanSquaredError,
    "bce": keras.losses.BinaryCrossentropy,
    "mape": keras.losses.MeanAbsolutePercentageError,
}


def worked_example() -> tuple[tf.Tensor, tf.Tensor]:
    """The notebook's data: X = [1, 2, 3, 4] as a column, Y = 2X + 1."""
    x = tf.constant([[1.0], [2.0], [3.0], [4.0]])
    return x, 2.0 * x + 1.0


def dense_model(n_in: int = 1, n_out: int = 1, regularizer: str = "") -> keras.Model:
    """A zero-initialised Dense layer; `regularizer` "kernel" or "activity" adds a layer loss."""
    kwargs = {}
    if regularizer == "kernel":
        kwargs["kernel_regularizer"] = keras.regularizers.L2(0.1)
    elif regularizer == "activity":
        kwargs["activity_regularizer"] = keras.regularizers.L2(0.1)
    return keras.Sequential([keras.Input((n_in,)),
                             keras.layers.Dense(n_out, kernel_initializer="zeros", **kwargs)])


def short_path(variable) -> str:
    """`dense/kernel` for `sequential_3/dense_7/kernel`: what a student recognises."""
    layer, name = variable.path.split("/")[-2:]
    return f"{layer.rstrip('_0123456789')}/{name}"


def bn_case(loss: str, seed: int):
    """A Dense-BatchNorm-Dense model with seeded weights, a batch and targets suited to `loss`."""
    rng = np.random.default_rng(seed)
    activation = "sigmoid" if loss == "bce" else None

    def build() -> keras.Model:
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.BatchNormalization(),
                                  keras.layers.Dense(1, activation=activation)])
        weights = np.random.default_rng(seed + 1000)
        for v in model.variables:
            if "moving_variance" in v.path:
                v.assign(weights.uniform(0.5, 1.5, size=v.shape))
            else:
                v.assign(weights.normal(scale=0.7, size=v.shape))
        return model

    x = rng.normal(size=(8, 3))
    if loss == "bce":
        y = rng.integers(0, 2, size=(8, 1)).astype(float)
    else:
        y = rng.uniform(1.0, 3.0, size=(8, 1))
    return build, tf.constant(x, tf.float32), tf.constant(y, tf.float32)


def train_step_fn(model: keras.Model, optimizer: keras.optimizers.Optimizer,
                  loss_fn: keras.losses.Loss) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
    """An eager training step for `model`, the notebook's `make_train_step` without `tf.function`
    (a checker calls it a handful of times, too few to repay tracing)."""
    def step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        optimizer.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        return loss

    return step
