"""Per-variable gradient statistics for TensorBoard: what TF1's `write_grads` gave, compiled-safe.

In the step (eagerly, in `tf.function`, in `fit`'s compiled `train_step`, XLA included), `GradientStats` counts
steps in a variable and, on scheduled steps only (every `every`-th, from the first), computes each gradient's norm
and histogram buckets inside a `tf.cond` of its own and keeps them in variables: an unscheduled step pays a modulo
and the untaken branches (eagerly, the modulo alone). Summary ops cannot run under XLA, so the write is the
host's: `poll()` copies the kept statistics once and writes them with `tf.summary` (scalars `grad_norm/<path>` and
`grad_norm/global`, histograms `grad_histogram/<path>`, at the step they belong to) into event files.
`GradientStatsCallback` does both under `fit`: it wraps `model.optimizer.apply` while `fit` runs, so any
`train_step` that applies gradients through the optimizer (Keras's own included) is measured, and it gives `fit` a
second step function without the statistics for the unscheduled steps. TensorBoard itself (`tensorboard`, where
`tf.summary` takes its ops) is imported only when something is written.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from tapelab.guarded.records import unique_names

__all__ = ["GradientStats", "GradientStatsCallback", "histogram"]


def histogram(grad: tf.Tensor, buckets: int) -> tf.Tensor:
    """`[buckets, 3]` float64 rows (left edge, right edge, count) of the finite values of `grad`, in equal-width
    buckets from its minimum to its maximum (TensorBoard's histogram layout). XLA compiles it (no bincount)."""
    values = tf.reshape(tf.cast(grad, tf.float64), [-1])
    finite = tf.math.is_finite(values)
    low = tf.reduce_min(tf.where(finite, values, tf.constant(float("inf"), tf.float64)))
    high = tf.reduce_max(tf.where(finite, values, tf.constant(float("-inf"), tf.float64)))
    any_finite = tf.reduce_any(finite)
    low, high = tf.where(any_finite, low, 0.0), tf.where(any_finite, high, 0.0)
    width = (high - low) / buckets
    index = tf.where(width > 0, tf.math.floor((values - low) / tf.where(width > 0, width, 1.0)), 0.0)
    index = tf.clip_by_value(tf.cast(index, tf.int32), 0, buckets - 1)
    index = tf.where(finite, index, buckets)  # one segment past the last collects the non-finite values
    counts = tf.math.unsorted_segment_sum(tf.ones_like(values), index, buckets + 1)[:buckets]
    edges = low + width * tf.range(buckets + 1, dtype=tf.float64)
    return tf.stack([edges[:-1], edges[1:], counts], axis=1)


class GradientStats(tf.Module):
    """Record gradient norms and histograms every `every` steps; `poll()` writes them under `logdir`.

    Call it with each step's gradients and variables (`stats(grads, variables)`, before or after the
    update), eagerly or inside a compiled step, then `stats.poll()` after the step; or let
    `GradientStatsCallback` do both under `fit`. Steps are counted from 0 in a variable (the guard's way:
    `tf.train.Checkpoint(stats=stats)` keeps the count across a restart); step 0, `every`, `2 * every`, ...
    are recorded. None gradients are left out; a sparse gradient is measured as its dense sum. A norm of a
    gradient that holds NaN or Inf is NaN or Inf, and its histogram counts its finite values.
    """

    def __init__(self, logdir: str | Path, *, every: int = 100, buckets: int = 30):
        super().__init__(name="gradient_stats")
        if every < 1 or buckets < 1:
            raise ValueError(f"every and buckets must be 1 or more, not every={every}, buckets={buckets}")
        self.logdir, self.every, self.buckets = Path(logdir), every, buckets
        self.steps = tf.Variable(tf.constant(0, tf.int64), trainable=False, name="steps")
        self.recorded_step = tf.Variable(tf.constant(-1, tf.int64), trainable=False, name="recorded_step")
        self.names: tuple[str, ...] | None = None  # the measured variables' paths, fixed by the first call
        self.norms: tf.Variable | None = None
        self.histograms: tf.Variable | None = None
        self.written: tuple[int, ...] = ()  # the steps this process wrote, in order
        self._writer = None
        self._read: int | None = None  # the step count the last device read found
        self._polls = 0  # the polls since that read
        self._skip = 0  # the polls left that cannot find a new record while steps and polls keep pace

    def __call__(self, grads: Sequence[Any], variables: Sequence[Any]) -> None:
        """Count the step; on a scheduled one keep each gradient's norm and histogram for `poll()`."""
        grads = list(grads)
        pairs = [(name, grad) for name, grad in zip(unique_names(list(variables)), grads) if grad is not None]
        if self.names is None:
            with tf.init_scope():  # lifted out of a graph being traced
                self.norms = tf.Variable(tf.zeros([len(pairs)], tf.float64), trainable=False, name="norms")
                self.histograms = tf.Variable(tf.zeros([len(pairs), self.buckets, 3], tf.float64),
                                              trainable=False, name="histograms")
            self.names = tuple(name for name, _ in pairs)
        elif self.names != tuple(name for name, _ in pairs):
            raise ValueError(f"GradientStats measures one list of variables ({len(self.names)} gradients: "
                             f"{', '.join(self.names[:3])}, ...); make one GradientStats per step function")
        step = self.steps.read_value()
        scheduled = tf.equal(step % self.every, 0)
        if tf.executing_eagerly() and not scheduled:
            self.steps.assign_add(1)
            return
        # A tf.cond per gradient, taking that gradient alone: one tf.cond taking them all kept every gradient
        # alive until it ran, with its branch's buffers on top (under XLA, bench/flight.py's step needed 15.8 MB
        # of temporary buffers instead of the plain step's 4.5 MB, 5.8 MB this way).
        kept = [tf.cond(scheduled, lambda grad=grad: self._measure(grad), self._nothing) for _, grad in pairs]

        def keep():
            self.norms.assign(tf.stack([norm for norm, _ in kept]))
            self.histograms.assign(tf.stack([buckets for _, buckets in kept]))
            self.recorded_step.assign(step)
            return tf.constant(True)

        tf.cond(scheduled, keep, lambda: tf.constant(False))
        self.steps.assign_add(1)

    def _measure(self, grad: Any) -> tuple[tf.Tensor, tf.Tensor]:
        dense = tf.convert_to_tensor(grad)
        return tf.norm(tf.cast(dense, tf.float64)), histogram(dense, self.buckets)

    def _nothing(self) -> tuple[tf.Tensor, tf.Tensor]:
        return tf.zeros([], tf.float64), tf.zeros([self.buckets, 3], tf.float64)

    def poll(self) -> int | None:
        """Write the statistics of the latest recorded step if they are not written yet; that step, or None.

        The device keeps only the latest record: one is lost if the next scheduled step runs before a poll reads
        it, which polling after every step never lets happen. A poll skips the device where no new record can be
        there if steps and polls keep pace: while each poll has followed one step (as the last two reads found),
        the polls before the one after the next scheduled step return None without reading (a record that a burst
        of steps reaches early is written at the poll one step per poll would reach it at); once a read finds that
        steps and polls drifted apart (a poll without a step, several steps per poll, the count restored or
        assigned), every poll reads until one again follows one step.
        """
        if self.names is None:
            return None
        self._polls += 1
        if self._skip:
            self._skip -= 1
            return None
        count, step = int(self.steps.numpy()), int(self.recorded_step.numpy())
        if self._read is not None and count - self._read == self._polls:  # one step per poll since the last read
            self._skip = -count % self.every  # the polls before the one after the next scheduled step
        self._read, self._polls = count, 0
        if step < 0 or (self.written and self.written[-1] == step):
            return None
        # heavy: imported only when something is written
        from tensorboard.plugins.histogram import metadata

        norms, histograms = self.norms.numpy(), self.histograms.numpy()
        if self._writer is None:
            self._writer = tf.summary.create_file_writer(str(self.logdir))
        with self._writer.as_default():
            tf.summary.scalar("grad_norm/global", float((norms ** 2).sum() ** 0.5), step=step)
            for name, norm, buckets in zip(self.names, norms, histograms):
                tf.summary.scalar(f"grad_norm/{name}", norm, step=step)
                tf.summary.write(f"grad_histogram/{name}", buckets, step=step,
                                 metadata=metadata.create_summary_metadata(display_name=None, description=None))
        self._writer.flush()
        self.written += (step,)
        return step

    def close(self) -> None:
        """Flush and close the event file (a later `poll()` opens a new one)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class GradientStatsCallback(keras.callbacks.Callback):
    """Measure the gradients `fit` applies with `stats` on its scheduled steps, and write them.

    While `fit` runs, `model.optimizer.apply` (which `apply_gradients` and Keras's `train_step` call) first
    hands the gradients to `stats`, and the optimizer is restored when `fit` ends. `fit` gets two step
    functions, each traced (and XLA-compiled) at its first call: a measured one, run on scheduled steps, and
    the plain one, run on all others, which holds no trace of `stats`: unscheduled steps cost what they cost
    without the callback. The statistics of a scheduled step are written before the next step starts (and
    at the end of `fit`). The steps are counted on the host and handed to `stats` with each scheduled step.
    Under mixed precision the `LossScaleOptimizer`'s inner optimizer is wrapped: the gradients measured are
    unscaled, and a scheduled step whose update the loss scaling skips writes nothing.

    With `steps_per_execution` above 1, or `wrap_optimizer=False` (a `train_step` override that calls
    `stats` itself), there is one step function and `stats` decides in it (the `tf.cond`s on its own step
    count); then the latest recorded step is written after each execution.
    """

    def __init__(self, stats: GradientStats, *, wrap_optimizer: bool = True):
        super().__init__()
        self.stats, self.wrap_optimizer = stats, wrap_optimizer
        self._measure = True  # read while a step function is traced: does this one hand gradients to stats?
        self._functions: dict[bool, Any] = {}  # measured? -> step function, when fit gets two
        self._count = 0  # the steps counted on the host (two step functions only)

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._functions = {}
        if not self.wrap_optimizer:
            return
        optimizer = self._applying()
        unwrapped = optimizer.apply

        def apply(grads, trainable_variables=None):
            grads = list(grads)
            # None: the variables the optimizer was built with, as Keras's own `apply` falls back to
            variables = optimizer._trainable_variables if trainable_variables is None else list(trainable_variables)
            if self._measure:
                self.stats(grads, variables)
            return unwrapped(grads, variables)

        optimizer.apply = apply
        for measured in (False, True) if self.model.steps_per_execution == 1 else (True,):
            self.model.make_train_function(force=True)  # traced at its first call, with `_measure` as then
            self._functions[measured] = self.model.train_function
        self._count = int(self.stats.steps.numpy())

    def _applying(self) -> Any:
        """The optimizer that applies unscaled gradients: a LossScaleOptimizer's inner one, else the model's."""
        return getattr(self.model.optimizer, "inner_optimizer", self.model.optimizer)

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        if len(self._functions) < 2:
            self.stats.poll()
            return
        if self._measure:  # the step just run was a scheduled one
            self.stats.poll()
        self._measure = self._count % self.stats.every == 0
        if self._measure:
            self.stats.steps.assign(self._count)  # one write to the device per scheduled step
        function = self._functions[self._measure]
        if self.model.train_function is not function:  # set only on a change: a model's setattr is not free
            self.model.train_function = function
        self._count += 1

    def on_train_end(self, logs: dict | None = None) -> None:
        self.stats.poll()
        if self.wrap_optimizer:
            del self._applying().apply  # the class's own method again
            self.model.make_train_function(force=True)
        if len(self._functions) == 2:
            self.stats.steps.assign(self._count)
        self._functions, self._measure = {}, True
        self.stats.close()
