"""The flight recorder: a refused step under fit (XLA or not) or a custom loop is saved, diagnosed, replayable
by a one-line command, and the disk it takes stays within its bounds."""
import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from guarded.flight_models import build

from tapelab.diagnose.replay import (
    BATCH_FILE,
    OPTIMIZER_FILE,
    STEP_FILE,
    WEIGHTS_FILE,
    load_step,
    replay,
)
from tapelab.guarded import FlightRecorder, GuardCallback, GuardedApply

HERE = Path(__file__).parent
XS = np.linspace(-1.0, 1.0, 36, dtype=np.float32).reshape(12, 3)
YS = XS.sum(axis=1, keepdims=True)


def poisoned(rows=(5,)):
    xs = XS.copy()
    for row in rows:
        xs[row, 1] = np.nan
    return xs


def fit_with_recorder(tmp_path, xs, jit_compile=False, **kwargs):
    records = []
    recorder = FlightRecorder(tmp_path / "flights", build="flight_models:build", **kwargs)
    guard = GuardedApply(keras.optimizers.SGD(0.01), on_bad="skip", max_skips=5, log=records.append,
                         recorder=recorder, run_id="run1")
    model = build(guard, jit_compile=jit_compile)
    recorder.model = model
    model.fit(xs, YS, batch_size=4, shuffle=False, verbose=0, callbacks=[GuardCallback(guard)])
    return model, recorder, records


@pytest.mark.parametrize("jit_compile", [False, True])
def test_fit_with_a_poisoned_batch_saves_the_step_and_its_diagnosis(tmp_path, jit_compile, keras_may_compile_with_xla):
    """Under fit (compiled, XLA or not), is the refused step saved with its batch and weights, does its log
    record name the op where the NaN entered, and does the saved step replay to the same NaN?"""
    _, _, records = fit_with_recorder(tmp_path, poisoned(), jit_compile=jit_compile)
    assert [r["outcome"] for r in records] == ["applied", "skipped", "applied"]
    flight = records[1]["flight"]
    assert flight["saved"] and Path(flight["dir"]).name == "step-000002"
    problems = flight["diagnosis"]["problems"]
    assert [p["name"] for p in problems] == ["hidden/kernel", "hidden/bias", "out/kernel", "out/bias"]
    assert {p["op"] for p in problems} == {"MatMul"}
    assert {p["cause"] for p in problems} == {"non-finite-input"}
    json.loads(json.dumps(records[1], allow_nan=False))  # the record stays strict JSON
    assert sorted(f.name for f in Path(flight["dir"]).iterdir()) == \
           sorted([STEP_FILE, BATCH_FILE, WEIGHTS_FILE, OPTIMIZER_FILE])
    step = load_step(flight["dir"])
    assert np.array_equal(step.batch[0], poisoned()[4:8], equal_nan=True) and np.array_equal(step.batch[1], YS[4:8])
    assert step.meta["jit_compile"] is jit_compile and step.meta["record"]["reason"] == "non_finite+non_finite_loss"
    fresh = build()
    again = replay(flight["dir"], fresh)
    assert [(e.name, e.status, e.cause, e.op) for e in again.problems] == \
           [(p["name"], p["status"], p["cause"], p["op"]) for p in problems]
    assert sorted(step.weights) == ["hidden/bias", "hidden/kernel", "out/bias", "out/kernel"]


def test_the_replay_command_runs_as_written(tmp_path):
    """Does the one-line command in step.json (`python -m tapelab.diagnose.replay STEP_DIR --model ...`)
    print the diagnosis of the saved step and exit 1 for a step that is not ok?"""
    _, _, records = fit_with_recorder(tmp_path, poisoned())
    command = records[1]["flight"]["replay"].split()
    assert command[1:3] == ["-m", "tapelab.diagnose.replay"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, *command[1:]], capture_output=True, text=True, env=env, cwd=HERE,
                          timeout=300, check=False)
    assert done.returncode == 1, done.stderr
    assert "non-finite-input" in done.stdout and "MatMul" in done.stdout


def test_a_changed_weights_file_is_refused(tmp_path):
    """Is a saved step whose weights no longer match the digest refused, not replayed on wrong weights?"""
    _, _, records = fit_with_recorder(tmp_path, poisoned())
    folder = Path(records[1]["flight"]["dir"])
    with np.load(folder / "weights.npz") as data:
        arrays = {name: data[name] + 1.0 for name in data.files}
    np.savez(folder / "weights.npz", **arrays)
    with pytest.raises(ValueError, match="does not match the digest"):
        load_step(folder)


def test_keep_bounds_the_steps_saved_per_run(tmp_path):
    """With three poisoned batches and keep=2, are exactly two steps saved, the third's record saying why?"""
    _, _, records = fit_with_recorder(tmp_path, poisoned(rows=(1, 5, 9)), keep=2)
    flights = [r["flight"] for r in records]
    assert [f["saved"] for f in flights] == [True, True, False] and "keep=2" in flights[2]["why"]
    assert sorted(p.name for p in (tmp_path / "flights" / "run1").iterdir()) == ["step-000001", "step-000002"]


def test_max_bytes_bounds_the_disk_used(tmp_path):
    """With room for one step only, is the second refused step not written, and the folder within max_bytes?"""
    _, probe, _ = fit_with_recorder(tmp_path / "probe", poisoned(rows=(1,)))
    one = probe.used
    _, _, records = fit_with_recorder(tmp_path, poisoned(rows=(1, 5)), max_bytes=one + one // 2)
    flights = [r["flight"] for r in records if "flight" in r]
    assert [f["saved"] for f in flights] == [True, False] and "max_bytes" in flights[1]["why"]
    on_disk = sum(f.stat().st_size for f in (tmp_path / "flights").rglob("*") if f.is_file())
    assert on_disk <= one + one // 2


def test_a_custom_loop_in_tf_function_saves_its_refused_step(tmp_path):
    """In a custom loop traced into tf.function (no model given: the step's variables are saved), is the
    refused step kept with its batch and the record pointing at it?"""
    keras.utils.set_random_seed(0)
    w = tf.Variable(tf.ones((3, 1)), name="w")
    records = []
    recorder = FlightRecorder(tmp_path / "flights", diagnose=False)
    guard = GuardedApply(keras.optimizers.SGD(0.01), on_bad="skip", log=records.append, recorder=recorder)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((x @ w - y) ** 2)
        return guard(tape.gradient(loss, [w]), [w], loss=loss, batch=(x, y))

    for start in (0, 4):
        train_step(poisoned()[start:start + 4], YS[start:start + 4])
        guard.poll()
    flight = records[-1]["flight"]
    step = load_step(flight["dir"])
    assert np.isnan(step.batch[0]).any() and list(step.weights) == ["w"] and "diagnosis" not in flight


def test_mixed_precision_records_a_bad_batch_but_not_the_loss_scale_settling(tmp_path):
    """Under mixed_float16 with a LossScaleOptimizer, are the scale's own overflow skips left unrecorded,
    and is a poisoned batch (a NaN loss) saved with its float16 model's weights and diagnosed?"""
    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, name="hidden"),
                                  keras.layers.Dense(1, name="out")], name="mixed")
        optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.01))
        records = []
        recorder = FlightRecorder(tmp_path, model, loss_fn=lambda m, b: tf.reduce_mean(
            tf.square(b[1] - tf.cast(m(b[0], training=True), tf.float32))))
        guard = GuardedApply(optimizer, on_bad="skip", log=records.append, recorder=recorder)
        for xs in (XS[:4] * 1e3, XS[:4] * 1e3, poisoned()[4:8]):
            ys = xs.sum(axis=1, keepdims=True)
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(ys - tf.cast(model(xs, training=True), tf.float32)))
                scaled = optimizer.scale_loss(loss)
            guard(tape.gradient(scaled, model.trainable_variables), model.trainable_variables, loss=loss,
                  batch=(xs, ys))
    finally:
        keras.config.set_dtype_policy(policy)
    scale_skips = [r for r in records if r["reason"] == "non_finite"]
    assert scale_skips and all("flight" not in r for r in scale_skips)
    bad = records[-1]
    assert bad["reason"] == "non_finite+non_finite_loss" and bad["flight"]["saved"]
    assert {p["cause"] for p in bad["flight"]["diagnosis"]["problems"]} == {"non-finite-input"}
