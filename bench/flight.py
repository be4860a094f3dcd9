"""The flight recorder's cost on good steps: a guarded training step with and without it, in the same run.

    python bench/flight.py [--layers 8] [--width 256] [--batch 256] [--repeats 30] [--jit 0|1]

Three compiled steps of one MLP, each a `tf.function` (XLA with `--jit 1`) on the same batch: the plain
step (`optimizer.apply`), the guarded step (`GuardedApply`), and the guarded step with a `FlightRecorder`
(its batch copy sits in an untaken `tf.cond` branch). Each step is timed in blocks of 10 calls, the three
alternating `--repeats` times after a warm-up; the medians and the ratios are printed. The budget
(issue 54): the recorder costs under 5% of a guarded step when nothing goes wrong.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import keras
import tensorflow as tf

from tapelab.guarded import FlightRecorder, GuardedApply

BUDGET = 1.05
BLOCK = 10


def mlp(layers: int, width: int) -> keras.Model:
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((width,))] + [keras.layers.Dense(width, activation="relu")
                                                        for _ in range(layers)] + [keras.layers.Dense(1)])


def make_step(model, apply, jit: bool):
    @tf.function(jit_compile=jit)
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
        return apply(tape.gradient(loss, model.trainable_variables), loss, (x, y))
    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--jit", type=int, default=1)
    args = parser.parse_args()
    x = tf.random.stateless_normal((args.batch, args.width), seed=(1, 2))
    y = tf.random.stateless_normal((args.batch, 1), seed=(3, 4))
    steps = {}
    plain_model, plain_opt = mlp(args.layers, args.width), keras.optimizers.SGD(1e-4)
    plain_opt.build(plain_model.trainable_variables)
    steps["plain optimizer.apply"] = make_step(
        plain_model, lambda g, loss, b: plain_opt.apply(g, plain_model.trainable_variables), bool(args.jit))
    guarded_model = mlp(args.layers, args.width)
    guard = GuardedApply(keras.optimizers.SGD(1e-4), on_bad="skip")
    steps["guarded"] = make_step(
        guarded_model, lambda g, loss, b: guard(g, guarded_model.trainable_variables, loss=loss, batch=b),
        bool(args.jit))
    recorded_model = mlp(args.layers, args.width)
    recorder = FlightRecorder(tempfile.mkdtemp(), recorded_model)
    recorded = GuardedApply(keras.optimizers.SGD(1e-4), on_bad="skip", recorder=recorder)
    steps["guarded + flight recorder"] = make_step(
        recorded_model, lambda g, loss, b: recorded(g, recorded_model.trainable_variables, loss=loss, batch=b),
        bool(args.jit))

    def block(step):
        def run():
            for _ in range(BLOCK):
                out = step(x, y)
            tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, out)
        return run

    runs = [block(step) for step in steps.values()]
    for run in runs:
        run()  # trace and warm up
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(args.repeats):
        for run, taken in zip(runs, times):
            start = time.perf_counter()
            run()
            taken.append((time.perf_counter() - start) / BLOCK)
    medians = dict(zip(steps, (statistics.median(t) for t in times)))
    assert guard.counters["skipped"] == recorded.counters["skipped"] == 0 and not recorder.saved
    print(f"{args.layers}-layer MLP, width {args.width}, batch {args.batch}, jit_compile={bool(args.jit)}, "
          f"median of {args.repeats} blocks of {BLOCK} steps:")
    for name, seconds in medians.items():
        print(f"  {name:28s} {seconds * 1e3:8.3f} ms/step")
    ratio = medians["guarded + flight recorder"] / medians["guarded"]
    print(f"  recorder / guarded           {ratio:8.3f}x  (budget {BUDGET:.2f}x: {'within' if ratio <= BUDGET else 'OVER'})")
    print(f"  recorder / plain             {medians['guarded + flight recorder'] / medians['plain optimizer.apply']:8.3f}x")


if __name__ == "__main__":
    main()
