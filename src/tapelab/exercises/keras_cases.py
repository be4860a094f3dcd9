"""The Keras models, losses and data that the checkers build: for notebook 02_model_variables the worked
example, a zero-initialised Dense model (optionally with a layer loss) and a seeded
Dense-BatchNormalization-Dense model, whose output depends on `training`; for exercise 6.4 the
two-optimizer cases (`TwoLayerCase`); for exercises 2.6 and 2.7 a seeded Dense-tanh-Dense model and its
mean squared error with its gradients. The 6.4 cases' reference step is in the answers distribution
(`tapelab_answers.references.two_optimizer_steps`), and its values in the stored expectations."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import keras
import numpy as np
import tensorflow as tf

__all__ = ["LOSSES", "LOSS_SCALES", "TwoLayerCase", "worked_example", "dense_model", "bn_case", "short_path",
           "train_step_fn"]

LOSSES: dict[str, Callable[[], keras.losses.Loss]] = {
    "mse": keras.losses.MeanSquaredError,
    "bce": keras.losses.BinaryCrossentropy,
    "mape": keras.losses.MeanAbsolutePercentageError,
}


def worked_example() -> tuple[tf.Tensor, tf.Tensor]:
    """The notebook's data: X = [1, 2, 3, 4] as a column, Y = 2X + 1."""
    x = tf.constant([[1.0], [2.0], [3.0], [4.0]])
    return x, 2.0 * x + 1.0


def dense_model(n_in: int = 1, n_out: int = 1, regularizer: str = "", name: str | None = None) -> keras.Model:
    """A zero-initialised Dense layer; `regularizer` "kernel" or "activity" adds a layer loss; `name` names the layer
    (Keras numbers it otherwise, from a count of every layer made so far)."""
    kwargs = {}
    if regularizer == "kernel":
        kwargs["kernel_regularizer"] = keras.regularizers.L2(0.1)
    elif regularizer == "activity":
        kwargs["activity_regularizer"] = keras.regularizers.L2(0.1)
    return keras.Sequential([keras.Input((n_in,)),
                             keras.layers.Dense(n_out, kernel_initializer="zeros", name=name, **kwargs)])


def short_path(variable) -> str:
    """`dense/kernel` for `sequential_3/dense_7/kernel`: what a student recognises."""
    layer, name = variable.path.split("/")[-2:]
    return f"{layer.rstrip('_0123456789')}/{name}"


def bn_case(loss: str, seed: int, names: tuple = (None, None, None)):
    """A Dense-BatchNorm-Dense model with seeded weights (its layers named `names`, where given), a batch and
    targets suited to `loss`."""
    rng = np.random.default_rng(seed)
    activation = "sigmoid" if loss == "bce" else None

    def build() -> keras.Model:
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, name=names[0]),
                                  keras.layers.BatchNormalization(name=names[1]),
                                  keras.layers.Dense(1, activation=activation, name=names[2])])
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


# Exercise 6.4 under mixed_float16: the initial loss scales of opt_a and opt_b. They differ, as two dynamic
# scales come to differ once one optimizer's gradients overflow (it halves its own scale and skips the step).
LOSS_SCALES = (2.0 ** 15, 2.0 ** 11)

_OPTIMIZERS: dict[str, tuple[Callable | None, Callable | None]] = {  # kind -> (as opt_a, as opt_b)
    "sgd": (lambda: keras.optimizers.SGD(0.1), lambda: keras.optimizers.SGD(0.01)),
    "momentum": (lambda: keras.optimizers.SGD(0.05, momentum=0.9), None),
    "adam": (None, lambda: keras.optimizers.Adam(0.01)),
}


@dataclass(frozen=True)
class TwoLayerCase:
    """One input of exercise 6.4: a seeded Dense(hidden, tanh) (+ BatchNormalization) + Dense(1) model, a
    batch, an optimizer kind for each layer and a number of steps. Under the "mixed_float16" policy the
    layers compute in float16 and each optimizer is a LossScaleOptimizer with its own scale (LOSS_SCALES)."""

    n_in: int
    hidden: int
    rows: int
    a: str
    b: str
    steps: int
    seed: int
    bias: bool = True  # the first layer's bias
    norm: bool = False  # a BatchNormalization (no trainable variables) between the layers
    policy: str = "float32"

    def draw(self) -> tuple[list[np.ndarray], tf.Tensor, tf.Tensor]:
        """The initial weights (trainable ones, in order), the inputs and the targets."""
        rng = np.random.default_rng(self.seed)
        weights = [rng.normal(size=(self.n_in, self.hidden)) * 0.5, rng.normal(size=self.hidden) * 0.1,
                   rng.normal(size=(self.hidden, 1)) * 0.5, rng.normal(size=1) * 0.1]
        if not self.bias:
            del weights[1]
        x = tf.constant(rng.normal(size=(self.rows, self.n_in)), tf.float32)
        y = tf.constant(rng.normal(size=(self.rows, 1)), tf.float32)
        return [w.astype(np.float32) for w in weights], x, y

    def model(self) -> keras.Model:
        """A fresh model with the initial weights (build it under the case's dtype policy)."""
        middle = [keras.layers.BatchNormalization(center=False, scale=False)] if self.norm else []
        model = keras.Sequential([keras.Input((self.n_in,)),
                                  keras.layers.Dense(self.hidden, activation="tanh", use_bias=self.bias),
                                  *middle, keras.layers.Dense(1)])
        stats = [np.zeros(self.hidden, np.float32), np.ones(self.hidden, np.float32)] if self.norm else []
        weights = self.draw()[0]
        first = 2 if self.bias else 1
        model.set_weights(weights[:first] + stats + weights[first:])  # moving mean and variance in between
        return model

    def optimizers(self) -> tuple[keras.optimizers.Optimizer, keras.optimizers.Optimizer]:
        """Fresh opt_a and opt_b, each wrapped in a LossScaleOptimizer of its own scale under mixed precision."""
        pair = _OPTIMIZERS[self.a][0](), _OPTIMIZERS[self.b][1]()
        if self.policy != "mixed_float16":
            return pair
        return tuple(keras.optimizers.LossScaleOptimizer(opt, initial_scale=scale)
                     for opt, scale in zip(pair, LOSS_SCALES))


def seeded_tanh_model(seed: int, features: int) -> keras.Model:
    """A Dense(3, tanh)-Dense(1) model with seeded weights (exercises 2.6 and 2.7): no layer that depends on the batch, so the mean of
    equal micro-batches' gradients is the full batch's gradient."""
    model = keras.Sequential([keras.Input((features,)), keras.layers.Dense(3, activation="tanh"),
                              keras.layers.Dense(1)])
    weights = np.random.default_rng(seed + 1000)
    for v in model.trainable_variables:
        v.assign(weights.normal(scale=0.7, size=v.shape))
    return model


def tanh_mse(weights: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> tuple[float, list[np.ndarray]]:
    """The mean squared error on (x, y) of a `seeded_tanh_model` holding `weights` (kernel, bias, kernel, bias),
    and its gradients: the operations of the model's own call (each Dense a matmul, then its bias; tanh between),
    so the same numbers to the bit, without building a model (a Keras build takes some 25 ms, this 1.5)."""
    weights = [tf.constant(w) for w in weights]
    with tf.GradientTape() as tape:
        tape.watch(weights)
        kernel, bias, out_kernel, out_bias = weights
        predicted = tf.add(tf.matmul(tf.tanh(tf.add(tf.matmul(x, kernel), bias)), out_kernel), out_bias)
        loss = tf.reduce_mean(tf.square(y - predicted))
    return float(loss), [g.numpy() for g in tape.gradient(loss, weights)]
