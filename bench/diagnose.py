"""`tapelab.diagnose` against one plain `tape.gradient` on a 40-layer MLP, measured in the same run.

    python bench/diagnose.py [--layers 40] [--width 64] [--batch 64] [--repeats 30]

The plain side is what a training step does: the forward pass under a `tf.GradientTape`, then one
`tape.gradient` for every trainable variable. The diagnose side is `diagnose(loss_fn, model=model)`
on the same healthy step: the forward pass with every op recorded, one gradient call, the norms and
the verdicts. They alternate `--repeats` times after a warm-up; the medians and their ratio are printed
(the budget, issue 18: diagnose within 2x of the plain step).

Compiled (issue 54): the same loss as a `tf.function(jit_compile=True)`, its plain compiled step against
`diagnose` on it (the compiled run, then the eager replay op by op, compared), and against the eager
diagnose above: what replaying compiled code costs over diagnosing eager code.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from tapelab.diagnose import diagnose  # noqa: E402

BUDGET = 2.0


def mlp(layers: int, width: int) -> keras.Model:
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((width,))] + [keras.layers.Dense(width, activation="relu")
                                                        for _ in range(layers)] + [keras.layers.Dense(1)])


def medians(steps: list, repeats: int) -> list[float]:
    """Each step's median wall time; the steps alternate, so a change in the machine's load hits both."""
    times: list[list[float]] = [[] for _ in steps]
    for step in steps:
        step()  # warm-up
    for _ in range(repeats):
        for step, taken in zip(steps, times):
            start = time.perf_counter()
            step()
            taken.append(time.perf_counter() - start)
    return [statistics.median(taken) for taken in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=40)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    model = mlp(args.layers, args.width)
    x = tf.random.stateless_normal((args.batch, args.width), seed=(1, 2))
    y = tf.random.stateless_normal((args.batch, 1), seed=(3, 4))

    def loss_fn():
        return tf.reduce_mean((model(x) - y) ** 2)

    def plain():
        with tf.GradientTape() as tape:
            loss = loss_fn()
        return tape.gradient(loss, model.trainable_variables)

    def diagnosed():
        report = diagnose(loss_fn, model=model)
        assert report.ok, report
        return report

    compiled_loss = tf.function(loss_fn, jit_compile=True)

    def compiled_plain():
        with tf.GradientTape() as tape:
            loss = compiled_loss()
        return tape.gradient(loss, model.trainable_variables)

    def compiled_diagnosed():
        report = diagnose(compiled_loss, model=model)
        assert report.entries and report.compiled is not None
        return report

    plain_s, diagnose_s, xla_s, xla_diagnose_s = medians([plain, diagnosed, compiled_plain, compiled_diagnosed],
                                                         args.repeats)
    ratio = diagnose_s / plain_s
    print(f"{args.layers}-layer MLP ({len(model.trainable_variables)} variables, width {args.width}, "
          f"batch {args.batch}), median of {args.repeats}:")
    print(f"  plain tape.gradient  {plain_s * 1e3:8.2f} ms")
    print(f"  diagnose             {diagnose_s * 1e3:8.2f} ms")
    print(f"  ratio                {ratio:8.2f}x  (budget {BUDGET:.0f}x: {'within' if ratio <= BUDGET else 'OVER'})")
    print("the same loss as tf.function(jit_compile=True):")
    print(f"  compiled tape.gradient       {xla_s * 1e3:8.2f} ms")
    print(f"  diagnose (compiled + replay) {xla_diagnose_s * 1e3:8.2f} ms")
    print(f"  ratio to the compiled step   {xla_diagnose_s / xla_s:8.2f}x")
    print(f"  ratio to eager diagnose      {xla_diagnose_s / diagnose_s:8.2f}x")


if __name__ == "__main__":
    main()
