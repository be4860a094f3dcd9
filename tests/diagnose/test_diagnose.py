"""Behaviours of tapelab.diagnose: one broken step per cause in the checklist, named correctly."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from tapelab.diagnose import CAUSES, Report, diagnose

X = tf.constant([1.0, 2.0, 3.0])
Y = tf.constant([2.0, 4.0, 6.0])


def test_healthy_step_is_ok_and_says_so():
    """Does a correct step give status ok for every variable and a report that says so?"""
    w, b = tf.Variable(0.5), tf.Variable(0.1)
    report = diagnose(lambda: tf.reduce_mean((w * X + b - Y) ** 2), [w, b])
    assert report.ok and [e.status for e in report.entries] == ["ok", "ok"]
    assert [e.name for e in report.entries] == ["w", "b"]
    assert "Every gradient is fine" in str(report) and report.loss is not None


def test_not_trainable_variable():
    """Is a `trainable=False` variable named as not trainable?"""
    w, frozen = tf.Variable(0.5), tf.Variable(2.0, trainable=False)
    report = diagnose(lambda: tf.reduce_mean((w * frozen * X - Y) ** 2), [w, frozen])
    assert report["w"].ok
    assert report["frozen"].cause == "not-trainable" and report["frozen"].status == "None"
    assert "trainable=False" in report["frozen"].explanation


def test_constant_not_watched_and_watch_fixes_it():
    """Is an unwatched constant named, and does passing it in `watch` fix it?"""
    c = tf.constant(2.0)
    assert diagnose(lambda: c * c, [c])["c"].cause == "not-watched"
    assert diagnose(lambda: c * c, [c], watch=[c]).ok


def test_loss_not_connected():
    """Is a variable the loss never reads named as not connected?"""
    w, unused = tf.Variable(0.5), tf.Variable(1.0)
    report = diagnose(lambda: tf.reduce_mean((w * X - Y) ** 2), [w, unused])
    assert report["unused"].cause == "not-connected" and "never reads `unused`" in report["unused"].explanation


def test_stop_gradient_on_the_path():
    """Is only the variable behind `tf.stop_gradient` blamed on it?"""
    w, b = tf.Variable(0.5), tf.Variable(0.1)

    def loss_fn():
        pred = tf.stop_gradient(w * X) + b
        return tf.reduce_mean((pred - Y) ** 2)

    report = diagnose(loss_fn, [w, b])
    assert report["w"].cause == "stop-gradient" and report["b"].ok
    assert "tf.stop_gradient(w * X)" in report["w"].explanation


@pytest.mark.parametrize("op", ["argmax", "round", "cast"])
def test_non_differentiable_ops(op):
    """Are argmax, round and a cast to int each named as having no gradient?"""
    w = tf.Variable([0.2, 0.9, 0.4])

    def argmax_loss():
        return tf.cast(tf.argmax(w * X), tf.float32)

    def round_loss():
        return tf.reduce_sum(tf.round(w * X))

    def cast_loss():
        return tf.cast(tf.reduce_sum(tf.cast(w * X, tf.int32)), tf.float32)

    fn = {"argmax": argmax_loss, "round": round_loss, "cast": cast_loss}[op]
    entry = diagnose(fn, [w])["w"]
    assert entry.cause == "non-differentiable" and op in entry.explanation


@pytest.mark.parametrize("style", ["np.mean", ".numpy()"])
def test_numpy_in_the_path(style):
    """Is NumPy on the path (a NumPy function, or `.numpy()`) named?"""
    w = tf.Variable(0.5)

    def np_loss():
        return tf.constant(np.mean((w * X - Y) ** 2))

    def dot_numpy_loss():
        pred = (w * X).numpy()
        return tf.reduce_mean((pred - Y) ** 2)

    entry = diagnose(np_loss if style == "np.mean" else dot_numpy_loss, [w])["w"]
    assert entry.cause == "numpy-in-path" and "NumPy" in entry.explanation


def test_variable_replaced_by_a_tensor():
    """Is `w = w - 0.1` (a tensor now, not a variable) named, with `assign_sub` as the fix?"""
    w = tf.Variable(0.5)
    w = w - 0.1

    def loss_fn():
        return tf.reduce_mean((w * X - Y) ** 2)

    entry = diagnose(loss_fn, [w])["w"]
    assert entry.cause == "replaced-by-tensor" and "assign_sub" in entry.explanation


def test_state_change_inside_the_step():
    """Is a value routed through `assign_add` named as a state change?"""
    w, total = tf.Variable(0.5), tf.Variable(0.0)

    def loss_fn():
        total.assign_add(tf.reduce_sum(w * X))
        return total * 2.0

    entry = diagnose(loss_fn, [w])["w"]
    assert entry.cause == "state-change" and "assign_add" in entry.explanation


def test_int_dtype():
    """Is an integer variable named by its dtype?"""
    n = tf.Variable(3)
    entry = diagnose(lambda: tf.cast(n * 2, tf.float32), [n])["n"]
    assert entry.cause == "int-dtype" and "int32" in entry.explanation


def test_loss_computed_outside_the_tape():
    """Is a loss computed before the tape (returned as a ready value) named?"""
    w = tf.Variable(0.5)
    loss = tf.reduce_mean((w * X - Y) ** 2)
    assert diagnose(lambda: loss, [w])["w"].cause == "outside-tape"


def test_loss_computed_after_the_with_block_of_a_handed_tape():
    """With a step that enters the tape it is handed, is a loss computed after the block named?"""
    w = tf.Variable(0.5)

    def step(tape):
        with tape:
            pred = w * X
        loss = tf.reduce_mean((pred - Y) ** 2)
        return loss

    assert diagnose(step, [w], tape=True)["w"].cause == "outside-tape"


def test_handed_tape_healthy_step():
    """Does a step that computes the loss inside the tape it is handed pass?"""
    w = tf.Variable(0.5)

    def step(tape):
        with tape:
            loss = tf.reduce_mean((w * X - Y) ** 2)
        return loss

    assert diagnose(step, [w], tape=True).ok


def test_no_registered_gradient_is_caught_and_named():
    """Is the LookupError caught and the op named (for every variable: the backward pass stops there)?"""
    w, b = tf.Variable(1.0), tf.Variable(0.5)

    def loss_fn():
        image = tf.ones([2, 2, 3]) * w
        return tf.reduce_sum(tf.image.adjust_contrast(image, 2.0)) + b

    report = diagnose(loss_fn, [w, b])
    assert report["w"].cause == "no-gradient-registered" and "AdjustContrastv2" in report["w"].explanation
    assert report["b"].cause == "no-gradient-registered"


class _Scaled(keras.layers.Layer):
    def __init__(self):
        super().__init__(name="scaled")
        self.scale = tf.Variable(2.0, name="scale")
        self.dense = keras.layers.Dense(1)

    def call(self, x):
        return self.dense(x) * self.scale


def test_untracked_tf_variable_on_a_keras_layer():
    """Is a plain tf.Variable on a Keras 3 layer reported although it is not in trainable_variables?"""
    model = keras.Sequential([keras.Input((1,)), _Scaled()])
    x = tf.constant([[1.0], [2.0]])
    report = diagnose(lambda: tf.reduce_mean(model(x) ** 2), model=model)
    untracked = [e for e in report.entries if e.cause == "untracked-variable"]
    assert len(untracked) == 1 and untracked[0].name == "scaled.scale"
    assert "add_weight" in untracked[0].explanation
    assert all(e.ok for e in report.entries if e is not untracked[0])


def test_all_zero_gradient_of_a_dead_relu():
    """Is a gradient that exists but is all zero reported as zero, not None?"""
    w = tf.Variable([[-1.0]])
    x = tf.constant([[1.0], [2.0]])
    entry = diagnose(lambda: tf.reduce_sum(tf.nn.relu(x @ w)), [w])["w"]
    assert entry.status == "zero" and entry.cause == "zero-gradient" and "relu" in entry.explanation


def test_layer_trainable_false_is_not_none():
    """Does a frozen Keras layer's kernel still get a gradient when asked for explicitly?"""
    layer = keras.layers.Dense(1, kernel_initializer="ones")
    layer.build((None, 1))
    layer.trainable = False
    x = tf.constant([[1.0], [2.0]])
    assert diagnose(lambda: tf.reduce_sum(layer(x)), {"kernel": layer.kernel}).ok


def test_every_cause_id_is_documented_and_reports_render():
    """Has every cause a description, and do problem reports render as text and HTML?"""
    assert all(CAUSES.values())
    w = tf.Variable(0.5)
    report = diagnose(lambda: tf.stop_gradient(w) * 2.0, {"my w": w})
    assert isinstance(report, Report) and not report.ok and report.problems
    assert "my w" in str(report) and "<table>" in report._repr_html_() and "#c53030" in report._repr_html_()


def test_diagnose_writes_nothing(capfd):
    """Does diagnosing an int variable (which TensorFlow warns about) keep stderr clean?"""
    n = tf.Variable(3)
    diagnose(lambda: tf.cast(n * 2, tf.float32), [n])
    assert capfd.readouterr() == ("", "")


def test_missing_variables_and_model_is_a_clear_error():
    """Does calling diagnose without variables or model raise ValueError naming the fix?"""
    with pytest.raises(ValueError, match="variables="):
        diagnose(lambda: tf.constant(1.0))
