"""Are the verdicts right: non-finite gradients traced to the op that made them, norms, slices,
BatchNorm statistics, untracked variables?"""
import keras
import numpy as np
import pytest
import tensorflow as tf

from tapelab.diagnose import diagnose

X = tf.constant([1.0, 2.0, 3.0])


def _log_of_zero(v):
    return tf.reduce_sum(tf.math.log(v))  # origin


def _sqrt_at_zero(v):
    return tf.reduce_sum(tf.sqrt(v))  # origin


def _where_trap(v):
    logs = tf.math.log(v)
    return tf.reduce_sum(tf.where(v > 0, logs, 0.0))  # origin


def _norm_at_zero(v):
    return tf.norm(v * 0.0)  # origin


def _overflow(v):
    return tf.reduce_sum(tf.exp(v * 200.0))  # origin


@pytest.mark.parametrize("loss, code, op", [
    (_log_of_zero, "non-finite-value", "Log"), (_sqrt_at_zero, "infinite-derivative", "Sqrt"),
    (_where_trap, "where-nan-trap", "tf.where"), (_norm_at_zero, "infinite-derivative", "Sqrt"),
    (_overflow, "non-finite-value", "Exp")])
def test_non_finite_gradient_is_traced_to_the_op_that_made_it(loss, code, op, line_of):
    """Is a NaN/Inf gradient its own status, traced to the op (and line) where it starts?"""
    v = tf.Variable([0.0, 1.0])
    entry = diagnose(lambda: loss(v), {"v": v})["v"]
    assert (entry.status, entry.cause, entry.op) == ("non_finite", code, op)
    assert entry.where.lineno == line_of(loss, "# origin")
    assert not np.isfinite(entry.norm)


def test_a_nan_off_the_loss_path_is_not_blamed():
    """Is a NaN made by an op whose result never reaches the loss left out of the explanation?"""
    v = tf.Variable([0.0, 1.0])

    def loss_fn():
        logged = tf.math.log(v)  # -inf, but never part of the loss
        del logged
        return tf.reduce_sum(tf.sqrt(v))

    entry = diagnose(loss_fn, [v])["v"]
    assert entry.status == "non_finite" and entry.op == "Sqrt"


def test_nan_in_the_data_is_named_as_the_input():
    """Is a NaN that was in the data before the run named as the input, not as an op's doing?"""
    w = tf.Variable(1.0)
    data = tf.constant([1.0, float("nan")])
    entry = diagnose(lambda: tf.reduce_sum(w * data), [w])["w"]
    assert (entry.status, entry.cause, entry.op) == ("non_finite", "non-finite-input", "Mul")


def test_a_dead_relu_is_named_for_a_zero_gradient(line_of):
    """Is an all-zero gradient traced to the relu that outputs 0 for the whole batch, with its line?"""
    w = tf.Variable([[-1.0]])
    x = tf.constant([[1.0], [2.0]])

    def loss_fn():
        hidden = tf.nn.relu(x @ w)  # dead
        return tf.reduce_sum(hidden)

    entry = diagnose(loss_fn, [w])["w"]
    assert (entry.status, entry.cause, entry.op) == ("zero", "zero-gradient", "Relu")
    assert entry.where.lineno == line_of(loss_fn, "# dead")


def test_a_zero_gradient_without_a_dead_relu_names_no_relu():
    """Is an all-zero gradient through `sign` reported without blaming a relu?"""
    w = tf.Variable([0.5, -0.2])
    entry = diagnose(lambda: tf.reduce_sum(tf.sign(w)), [w])["w"]
    assert entry.status == "zero" and entry.op is None and "relu" not in entry.explanation


def test_ok_entries_carry_the_gradient_norm_so_vanishing_shows():
    """Does each ok entry hold its gradient's norm, printed in the report, tiny for a saturated sigmoid?"""
    w, deep = tf.Variable(0.5), tf.Variable(15.0)
    report = diagnose(lambda: tf.reduce_sum(w * X) + tf.sigmoid(deep), [w, deep])
    assert report.ok
    assert report["w"].norm == pytest.approx(float(tf.reduce_sum(X)))
    assert 0 < report["deep"].norm < 1e-5
    assert f"{report['deep'].norm:.3g}" in str(report) and "norm" in report._repr_html_()


def test_a_slice_of_a_variable_as_source_says_to_index_the_gradient():
    """Is `w[0]` given as the source named as a slice, with the fix to differentiate `w` and index?"""
    w = tf.Variable([0.5, 0.2, 0.1])
    entry = diagnose(lambda: tf.reduce_sum(w * X), [w[0]])["w[0]"]
    assert entry.cause == "sliced-source"
    assert "tape.gradient(loss, w)" in entry.explanation


def test_moving_statistics_from_model_variables_point_to_trainable_variables():
    """Are BatchNorm's moving statistics, passed through `model.variables`, told to use trainable_variables?"""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.BatchNormalization()])
    x = tf.constant([[1.0, 2.0, 3.0], [0.0, -1.0, 2.0]])
    report = diagnose(lambda: tf.reduce_sum(model(x, training=True) ** 2), model.variables, model=model)
    stats = [e for e in report.entries if "moving" in e.name]
    assert len(stats) == 2 and all(e.cause == "all-variables" for e in stats)
    assert all("trainable_variables" in e.explanation for e in stats)


class _Scaled(keras.layers.Layer):
    def __init__(self):
        super().__init__(name="scaled")
        self.scale = tf.Variable(2.0, name="scale")
        self.dense = keras.layers.Dense(1)

    def call(self, x):
        return self.dense(x) * self.scale


def test_untracked_variable_has_its_own_status():
    """Is a plain tf.Variable on a Keras 3 layer reported with status "untracked", not as a None gradient?"""
    model = keras.Sequential([keras.Input((1,)), _Scaled()])
    report = diagnose(lambda: tf.reduce_mean(model(tf.constant([[1.0]])) ** 2), model=model)
    entry = report["scaled.scale"]
    assert (entry.status, entry.cause) == ("untracked", "untracked-variable") and not report.ok


def test_a_read_the_recording_missed_is_not_called_unread():
    """When the tape saw a variable read but no recorded op shows it (argmax on the variable itself, or
    `X * w`, run by TensorFlow's fast path), is the variable reported None with no cause, never as
    "the loss never reads it"; and is a variable the loss really never reads still `not-connected`?"""
    v, w, unused, other = tf.Variable([1.0, 3.0, 2.0]), tf.Variable([1.0, 2.0]), tf.Variable(1.0), tf.Variable(2.0)
    direct = diagnose(lambda: tf.cast(tf.argmax(v), tf.float32), [v]).entries[0]
    product = diagnose(lambda: tf.reduce_sum(tf.cast(tf.argmax(X[:2] * w), tf.float32)), [w]).entries[0]
    for entry in (direct, product):
        assert (entry.status, entry.cause) == ("None", None), entry
        assert "never reads" not in entry.explanation and "saw" in entry.explanation, entry
    missing = diagnose(lambda: other * 3.0, [unused]).entries[0]
    assert (missing.status, missing.cause) == ("None", "not-connected"), missing
