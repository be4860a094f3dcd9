"""Gradient statistics for TensorBoard: written on schedule, read back with TensorBoard's own event reader, and
equal to the norms computed independently from the weights and the batch of the step they belong to."""
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from tapelab.guarded import GradientStats, GradientStatsCallback
from tapelab.guarded.stats import histogram

BATCH = 4


def read_events(logdir) -> dict[int, dict[str, np.ndarray]]:
    """step -> tag -> value, from every event file under `logdir`, read by TensorBoard's loader."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    found: dict[int, dict[str, np.ndarray]] = {}
    for path in sorted(logdir.glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                kind = value.metadata.plugin_data.plugin_name
                assert kind == ("scalars" if value.tag.startswith("grad_norm/") else "histograms"), value.tag
                found.setdefault(event.step, {})[value.tag] = tf.make_ndarray(value.tensor)
    return found


def small_model(jit_compile=False) -> keras.Model:
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(5, activation="tanh", name="hidden"),
                              keras.layers.Dense(1, name="out")], name="net")
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", jit_compile=jit_compile)
    return model


def data(rows=28):
    x = np.random.default_rng(0).normal(size=(rows, 3)).astype(np.float32)
    return x, np.sin(x).sum(axis=1, keepdims=True)


def independent_grads(model, weights, x, y) -> dict[str, np.ndarray]:
    """The step's gradients, recomputed eagerly on a copy of the model set to the weights the step started from."""
    twin = small_model()
    twin.set_weights(weights)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((twin(x, training=True) - y) ** 2)
    grads = tape.gradient(loss, twin.trainable_variables)
    return {v.path: g.numpy() for v, g in zip(twin.trainable_variables, grads)}


def check_step(written: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
    """Are the step's norms those of `grads` (one per variable, and the global one), and do its histograms count
    every value of each gradient between its minimum and maximum?"""
    assert set(written) == {"grad_norm/global"} | {f"grad_{kind}/{path}" for path in grads
                                                    for kind in ("norm", "histogram")}
    for path, grad in grads.items():
        np.testing.assert_allclose(written[f"grad_norm/{path}"], np.linalg.norm(grad), rtol=1e-5)
        buckets = written[f"grad_histogram/{path}"]
        assert buckets.shape == (30, 3) and buckets[:, 2].sum() == grad.size
        np.testing.assert_allclose([buckets[0, 0], buckets[-1, 1]], [grad.min(), grad.max()], rtol=1e-5)
    np.testing.assert_allclose(written["grad_norm/global"],
                               np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in grads.values())), rtol=1e-5)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_fit_writes_the_norms_of_each_scheduled_step(tmp_path, jit_compile, keras_may_compile_with_xla):
    """Under `fit` (XLA on and off), are steps 0, 3 and 6 of 7 written, each variable's norm equal to the one
    recomputed from the weights and batch of that step, and is the optimizer its own again after `fit`?"""
    x, y = data()
    model = small_model(jit_compile)
    stats = GradientStats(tmp_path, every=3)
    starts = []  # the weights each step starts from
    snapshot = keras.callbacks.LambdaCallback(on_train_batch_begin=lambda batch, logs: starts.append(model.get_weights()))
    model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0,
              callbacks=[snapshot, GradientStatsCallback(stats)])
    assert model.jit_compile is jit_compile
    events = read_events(tmp_path)
    assert sorted(events) == [0, 3, 6] == list(stats.written)
    for step, written in events.items():
        rows = slice(step * BATCH, (step + 1) * BATCH)
        check_step(written, independent_grads(model, starts[step], x[rows], y[rows]))
    assert "apply" not in vars(model.optimizer)
    model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)  # without the callback: not measured
    assert int(stats.steps.numpy()) == 7


def test_several_steps_per_execution_write_on_schedule(tmp_path):
    """With `steps_per_execution=2` (one step function; `stats` decides in it), are steps 0, 3 and 6 of 7 written,
    one of them from the middle of an execution?"""
    x, y = data()
    model = small_model()
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", steps_per_execution=2)
    stats = GradientStats(tmp_path, every=3)
    model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0, callbacks=[GradientStatsCallback(stats)])
    events = read_events(tmp_path)
    assert sorted(events) == [0, 3, 6] and int(stats.steps.numpy()) == 7
    assert all(len(written) == 1 + 2 * len(model.trainable_variables) for written in events.values())


def test_a_custom_loop_under_xla_writes_on_schedule(tmp_path, keras_may_compile_with_xla):
    """In a custom loop whose step is `tf.function(jit_compile=True)`, are steps 0, 2 and 4 of 5 written with the
    norms of the gradients that step applied?"""
    x, y = data(20)
    model = small_model()
    stats = GradientStats(tmp_path, every=2)

    @tf.function(jit_compile=True)
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb, training=True) - yb) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        stats(grads, model.trainable_variables)
        model.optimizer.apply(grads, model.trainable_variables)

    expected = {}
    for index in range(5):
        rows = slice(index * BATCH, (index + 1) * BATCH)
        expected[index] = independent_grads(model, model.get_weights(), x[rows], y[rows])
        step(x[rows], y[rows])
        stats.poll()
    stats.close()
    events = read_events(tmp_path)
    assert sorted(events) == [0, 2, 4]
    for index, written in events.items():
        check_step(written, expected[index])


def test_histogram_counts_finite_values_as_numpy_does():
    """Do the buckets match NumPy's histogram over the same range, leaving NaN and Inf out?"""
    values = np.random.default_rng(1).normal(size=1000)
    values[[3, 500]] = np.nan, np.inf
    buckets = histogram(tf.constant(values), 30).numpy()
    finite = values[np.isfinite(values)]
    counts, edges = np.histogram(finite, bins=30, range=(finite.min(), finite.max()))
    np.testing.assert_array_equal(buckets[:, 2], counts)
    np.testing.assert_allclose(buckets[:, 0], edges[:-1])
    np.testing.assert_allclose(buckets[:, 1], edges[1:])


def test_a_single_value_fills_one_bucket_and_no_finite_value_none():
    """Does a constant gradient land in one bucket of zero width, and one without finite values count nothing?"""
    constant = histogram(tf.fill([7], 2.5), 4).numpy()
    assert constant[:, 2].tolist() == [7, 0, 0, 0] and set(constant[:, :2].ravel()) == {2.5}
    assert histogram(tf.constant([np.nan, np.inf]), 4).numpy()[:, 2].sum() == 0


def test_a_different_list_of_variables_is_refused(tmp_path):
    """Does one GradientStats refuse a second step function's variables instead of writing them under the first's
    names?"""
    stats = GradientStats(tmp_path)
    a, b = tf.Variable(1.0, name="a"), tf.Variable(2.0, name="b")
    stats([tf.constant(1.0)], [a])
    with pytest.raises(ValueError, match="one list of variables"):
        stats([tf.constant(1.0)], [b])


def test_nothing_is_written_between_scheduled_steps(tmp_path):
    """Does a poll after an unscheduled step write nothing new (no event file before the first write either)?"""
    stats = GradientStats(tmp_path, every=10)
    variable = tf.Variable([1.0, -2.0], name="w")
    assert stats.poll() is None
    stats([tf.constant([3.0, 4.0])], [variable])
    assert stats.poll() == 0 and stats.poll() is None
    stats([tf.constant([1.0, 1.0])], [variable])
    assert stats.poll() is None
    stats.close()
    assert list(read_events(tmp_path)) == [0] and read_events(tmp_path)[0]["grad_norm/w"] == pytest.approx(5.0)


def test_polls_drifting_from_steps_write_each_record_once_at_its_step(tmp_path):
    """Polls that skip the device between scheduled steps: with one poll per step, two polls after a step,
    bursts of steps between polls and a count assigned (a restore), is every record a poll could see written
    exactly once (perhaps a few polls later), at its step (the gradient is the step + 1)?"""
    stats = GradientStats(tmp_path, every=3)
    variable = tf.Variable([0.0], name="w")
    count, returned = 0, []

    def step(times=1):
        nonlocal count
        for _ in range(times):
            stats([tf.constant([count + 1.0])], [variable])
            count += 1

    def poll():
        returned.extend(step for step in [stats.poll()] if step is not None)

    for _ in range(8):  # one poll per step: 0, 3 and 6
        step(), poll()
    poll(), poll()      # two more polls without a step
    for _ in range(2):
        step(), poll()  # 9
    step(2), poll()     # 12 lands within a burst
    step(), poll(), step(), poll(), step(2), poll()  # 15
    count = 30
    stats.steps.assign(count)  # a restored count
    for _ in range(5):
        step(), poll()  # 30 and 33
    step(3), poll()     # 36
    for _ in range(4):
        step(), poll()  # 39
    stats.close()
    assert returned == list(stats.written) == [0, 3, 6, 9, 12, 15, 30, 33, 36, 39]
    events = read_events(tmp_path)
    assert sorted(events) == returned
    for at, written in events.items():
        assert written["grad_norm/w"] == pytest.approx(at + 1.0)


def test_importing_guarded_does_not_import_tensorboard():
    """Is TensorBoard imported only when statistics are written (not by `import tapelab.guarded`)?"""
    code = "import sys, tapelab.guarded; print(sorted(m for m in sys.modules if m.startswith('tensorboard')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_mixed_precision_writes_the_unscaled_gradients(tmp_path):
    """Under mixed_float16 (a LossScaleOptimizer scaling the loss by 32768), are the norms written those of the
    unscaled gradients the inner optimizer applies?"""
    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        x, y = data(8)
        model = small_model()
        assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
        start = model.get_weights()
        stats = GradientStats(tmp_path, every=5)
        model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0, callbacks=[GradientStatsCallback(stats)])
        twin = small_model()
        twin.set_weights(start)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.cast(twin(x[:BATCH], training=True), tf.float32) - y[:BATCH]) ** 2)
        grads = tape.gradient(loss, twin.trainable_variables)
    finally:
        keras.config.set_dtype_policy(policy)
    written = read_events(tmp_path)[0]
    for variable, grad in zip(twin.trainable_variables, grads):
        np.testing.assert_allclose(written[f"grad_norm/{variable.path}"], np.linalg.norm(grad.numpy()), rtol=1e-2)
    assert "apply" not in vars(model.optimizer.inner_optimizer)
