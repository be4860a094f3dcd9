"""The cost on good steps of the flight recorder and of the gradient statistics, against the same step without them.

    python bench/flight.py [--layers 8] [--width 256] [--batch 256] [--repeats 30] [--jit 0|1] [--epochs 3] [--rounds 6]

Five compiled steps of one MLP, each a `tf.function` (XLA with `--jit 1`) on the same batch: the plain step
(`optimizer.apply`), the same plain step again as a control (its ratio to the first is the noise of the
machine), the guarded step (`GuardedApply`), the guarded step with a `FlightRecorder` (its batch copy sits in
an untaken `tf.cond` branch), and the plain step with `GradientStats` at its default schedule, polled after
every call as a loop polls it. Each step is timed in blocks of 10 calls, the five alternating `--repeats`
times in a rotating order after a warm-up. Then `fit` on the same model and data, `--epochs` epochs of 50
steps without `GradientStatsCallback`, with it (default schedule: every 100 steps), and without again as a
control (`--rounds` fits each, in a rotating order; the first epoch of each fit, which traces, is left out,
and so are epoch boundaries). Each ratio is the median of the ratios measured side by side (one repeat, one
round), so that a slow change of the machine's load cancels. The budget (issue 54): the recorder and the
statistics each cost under 5% of a step when nothing goes wrong.
"""
from __future__ import annotations

import argparse
import itertools
import os
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import keras
import tensorflow as tf

from tapelab.guarded import (
    FlightRecorder,
    GradientStats,
    GradientStatsCallback,
    GuardedApply,
)

BUDGET = 1.05
BLOCK = 10
FIT_STEPS = 50  # steps per epoch of the fit comparison


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
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    x = tf.random.stateless_normal((args.batch, args.width), seed=(1, 2))
    y = tf.random.stateless_normal((args.batch, 1), seed=(3, 4))
    steps = {}
    plain_model, plain_opt = mlp(args.layers, args.width), keras.optimizers.SGD(1e-4)
    plain_opt.build(plain_model.trainable_variables)
    steps["plain optimizer.apply"] = make_step(
        plain_model, lambda g, loss, b: plain_opt.apply(g, plain_model.trainable_variables), bool(args.jit))
    again_model, again_opt = mlp(args.layers, args.width), keras.optimizers.SGD(1e-4)
    again_opt.build(again_model.trainable_variables)
    steps["plain again (A/A)"] = make_step(
        again_model, lambda g, loss, b: again_opt.apply(g, again_model.trainable_variables), bool(args.jit))
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
    stats_model, stats_opt = mlp(args.layers, args.width), keras.optimizers.SGD(1e-4)
    stats_opt.build(stats_model.trainable_variables)
    stats = GradientStats(tempfile.mkdtemp())  # the default schedule

    def measured(g, loss, b):
        stats(g, stats_model.trainable_variables)
        return stats_opt.apply(g, stats_model.trainable_variables)

    steps["plain + gradient stats"] = make_step(stats_model, measured, bool(args.jit))
    polls = {"plain + gradient stats": stats.poll}

    def block(step, poll):
        def run():
            for _ in range(BLOCK):
                out = step(x, y)
                poll()
            tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, out)
        return run

    runs = [block(step, polls.get(name, lambda: None)) for name, step in steps.items()]
    for run in runs:
        run()  # trace and warm up
    times: list[list[float]] = [[] for _ in runs]
    for repeat in range(args.repeats):
        for index in (*range(repeat % len(runs), len(runs)), *range(repeat % len(runs))):  # rotated: no fixed order
            start = time.perf_counter()
            runs[index]()
            times[index].append((time.perf_counter() - start) / BLOCK)
    timed = dict(zip(steps, times))
    medians = {name: statistics.median(t) for name, t in timed.items()}

    def paired(name: str, base: str) -> float:
        """The median over repeats of the two steps' time ratio within a repeat (slow load drift cancels)."""
        return statistics.median(a / b for a, b in zip(timed[name], timed[base]))

    assert guard.counters["skipped"] == recorded.counters["skipped"] == 0 and not recorder.saved
    print(f"{args.layers}-layer MLP, width {args.width}, batch {args.batch}, jit_compile={bool(args.jit)}, "
          f"median of {args.repeats} blocks of {BLOCK} steps:")
    for name, seconds in medians.items():
        print(f"  {name:28s} {seconds * 1e3:8.3f} ms/step")
    print("ratios, the median of the ratios within each repeat:")
    print(f"  plain again / plain          {paired('plain again (A/A)', 'plain optimizer.apply'):8.3f}x  "
          "(the same step twice: the noise of this machine)")
    report("recorder / guarded", paired("guarded + flight recorder", "guarded"))
    print(f"  recorder / plain             {paired('guarded + flight recorder', 'plain optimizer.apply'):8.3f}x")
    report("stats / plain", paired("plain + gradient stats", "plain optimizer.apply"))
    print(f"  ({len(stats.written)} of {int(stats.steps.numpy())} steps written, every {stats.every})")
    fit_stats(args, x, y)


def report(name: str, ratio: float) -> None:
    print(f"  {name:28s} {ratio:8.3f}x  (budget {BUDGET:.2f}x: {'within' if ratio <= BUDGET else 'OVER'})")


def fit_stats(args, x, y) -> None:
    """`fit` without and with `GradientStatsCallback` at its default schedule: seconds per step."""
    xs, ys = tf.tile(x, [FIT_STEPS, 1]), tf.tile(y, [FIT_STEPS, 1])
    model = mlp(args.layers, args.width)
    model.compile(keras.optimizers.SGD(1e-4), loss="mse", jit_compile=bool(args.jit))
    written, counted = 0, 0
    per_fit: dict[str, list[float]] = {"fit": [], "fit again (A/A)": [], "fit + GradientStatsCallback": []}
    names = list(per_fit)
    # Untimed: the first write imports tensorboard and opens an event file, and the process runs slower for a
    # while after it (a one-time cost, not a per-step one).
    model.fit(xs, ys, batch_size=args.batch, epochs=1, verbose=0,
              callbacks=[GradientStatsCallback(GradientStats(tempfile.mkdtemp()))])
    for turn in range(len(names) * args.rounds):  # rotating order: no variant always follows another
        name = names[(turn + turn // len(names)) % len(names)]
        begins: list[list[float]] = []  # per epoch, when each step began
        timer = keras.callbacks.LambdaCallback(
            on_epoch_begin=lambda epoch, logs, begins=begins: begins.append([]),
            on_train_batch_begin=lambda batch, logs, begins=begins: begins[-1].append(time.perf_counter()))
        # A new count per fit: both step functions of the callback are traced in its first epoch (step 0 is
        # measured, step 1 is not), which is not timed; a fit's first measured step otherwise compiles later.
        stats = GradientStats(tempfile.mkdtemp())
        extra = [GradientStatsCallback(stats)] if name.startswith("fit +") else []
        model.fit(xs, ys, batch_size=args.batch, epochs=args.epochs, shuffle=False, verbose=0,
                  callbacks=[*extra, timer])
        steps = [b - a for epoch in begins[1:] for a, b in itertools.pairwise(epoch)]  # epoch 1 traces
        per_fit[name].append(statistics.fmean(steps))
        written, counted = written + len(stats.written), counted + int(stats.steps.numpy())
    print(f"fit, {FIT_STEPS} steps per epoch, {args.rounds} fits each of {args.epochs} epochs; a fit's time per step "
          "is the mean from one step's start to the next's, within its epochs after the first (which traces):")
    for name, seconds in per_fit.items():
        print(f"  {name:28s} {statistics.median(seconds) * 1e3:8.3f} ms/step (median of the fits)")
    print(f"  ({written} of {counted} steps written, every {stats.every})")

    def paired(name: str) -> float:
        return statistics.median(a / b for a, b in zip(per_fit[name], per_fit["fit"]))

    print("ratios, the median over rounds of the ratio of two fits' times per step:")
    print(f"  fit again / fit              {paired('fit again (A/A)'):8.3f}x  (the same fit twice: the noise)")
    report("callback / fit", paired("fit + GradientStatsCallback"))


if __name__ == "__main__":
    main()
