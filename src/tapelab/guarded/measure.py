"""Measure one step's gradients, loss and optimizer in ONE float64 vector, in eager mode or in a graph.

Everything the guard decides on and logs is stacked into a single tensor, so an eager step reads it back
with one device-to-host copy, and a graph step can keep it in a variable for the host to read later.
Squared norms are summed in float64: a finite float32 or float16 gradient can never overflow there, so a
non-finite squared norm means the gradient holds NaN or Inf. (A float64 gradient above about 1e154 also
reads as non-finite; its norm is not representable either.) An `IndexedSlices` gradient is measured from
its values, summed per index first (repeated indices add up in the dense gradient), and stays sparse.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import tensorflow as tf

# Layout of the vector after the per-variable squared norms:
LOSS, LOSS_SIZE, BATCH_ROWS, LEARNING_RATE, ITERATIONS, LOSS_SCALE = range(6)
EXTRA = 6


@dataclass(frozen=True)
class Layout:
    """What is known when the step is written (or traced): names, which gradients exist, what was passed."""

    names: tuple[str, ...]
    present: tuple[int, ...]  # positions of the gradients that exist, in the order of the norms
    none: tuple[str, ...]  # None gradients that make the step bad
    dropped: tuple[str, ...]  # None gradients that `allow_none` accepts
    has_loss: bool
    loss_scaled: bool  # the optimizer is a LossScaleOptimizer

    @property
    def size(self) -> int:
        return len(self.present) + EXTRA


def squared_norm(grad: Any) -> tf.Tensor:
    """The squared L2 norm of a dense or IndexedSlices gradient, in float64."""
    if isinstance(grad, tf.IndexedSlices):
        unique, position = tf.unique(grad.indices)
        values = tf.math.unsorted_segment_sum(tf.cast(grad.values, tf.float64), position, tf.shape(unique)[0])
        return tf.reduce_sum(tf.square(values))
    return tf.reduce_sum(tf.square(tf.cast(grad, tf.float64)))


def batch_rows(batch: Any) -> tf.Tensor:
    """The number of rows of the first tensor in `batch` (any nest), or -1 when no batch was passed."""
    if batch is None:
        return tf.constant(-1.0, tf.float64)
    first = tf.nest.flatten(batch)[0]
    return tf.cast(tf.shape(first)[0], tf.float64)


def measure(grads: Sequence[Any], layout: Layout, optimizer: Any, loss: Any, batch: Any) -> tf.Tensor:
    """[squared norm of each present gradient (unscaled), loss mean, loss size, batch rows, lr, iterations, scale]."""
    scale = tf.cast(optimizer.dynamic_scale, tf.float64) if layout.loss_scaled else tf.constant(1.0, tf.float64)
    norms = [squared_norm(grads[i]) / tf.square(scale) for i in layout.present]
    if loss is None:
        loss_mean, loss_size = tf.constant(0.0, tf.float64), tf.constant(1.0, tf.float64)
    else:
        loss = tf.cast(loss, tf.float64)
        loss_mean, loss_size = tf.reduce_mean(loss), tf.cast(tf.size(loss), tf.float64)
    lr = tf.cast(optimizer.learning_rate, tf.float64)
    iterations = tf.cast(optimizer.iterations, tf.float64)
    return tf.stack(norms + [loss_mean, loss_size, batch_rows(batch), lr, iterations, scale])
