"""Does diagnose name the op where each variable's path to the loss ends, and the line that ran it?"""
import numpy as np
import pytest
import tensorflow as tf

from tapelab.diagnose import diagnose
from tapelab.diagnose.breaks import ROUNDING

X = tf.constant([1.0, 2.0, 3.0])
Y = tf.constant([2.0, 4.0, 6.0])


def _stop(w):
    h = w * X
    g = tf.stop_gradient(h)  # break
    return tf.reduce_sum(g)


def _int_cast(w):
    h = w * X
    k = tf.cast(h, tf.int32)  # break
    return tf.reduce_sum(tf.cast(k, tf.float32))


def _argmax(w):
    i = tf.argmax(w * X)  # break
    return tf.cast(i, tf.float32)


def _round(w):
    r = tf.round(w * X)  # break
    return tf.reduce_sum(r)


def _comparison(w):
    above = w > 0.3  # break
    return tf.reduce_sum(tf.cast(above, tf.float32))


@pytest.mark.parametrize("loss, op, code", [
    (_stop, "StopGradient", "stop-gradient"), (_int_cast, "Cast", "non-differentiable"),
    (_argmax, "ArgMax", "non-differentiable"), (_round, "Round", "non-differentiable"),
    (_comparison, "Greater", "non-differentiable")])
def test_break_names_the_op_and_its_line(loss, op, code, line_of):
    """Is the op that cuts the path named with the line that ran it (the int cast, not the later float cast)?"""
    w = tf.Variable([0.2, 0.9, 0.4])
    entry = diagnose(lambda: loss(w), {"w": w})["w"]
    assert (entry.status, entry.cause, entry.op) == ("None", code, op)
    assert entry.where.lineno == line_of(loss, "# break") and f"line {entry.where.lineno}" in entry.explanation


def test_dot_numpy_names_the_line_that_left_tensorflow(line_of):
    """Is `.numpy()` on the path named at the line that called it?"""
    w = tf.Variable(0.5)

    def loss_fn():
        pred = w * X
        values = pred.numpy()  # leaves
        return tf.reduce_mean((values - Y) ** 2)

    entry = diagnose(loss_fn, [w])["w"]
    assert entry.cause == "numpy-in-path"
    assert entry.where.lineno == line_of(loss_fn, "# leaves")


def test_numpy_function_names_its_call_and_the_last_tensorflow_op(line_of):
    """Is `np.mean` on a tensor (read through the buffer protocol) named at its line, after the last TensorFlow op?"""
    w = tf.Variable(0.5)

    def loss_fn():
        squared = (w * X - Y) ** 2  # last op
        return tf.constant(np.mean(squared))  # leaves

    entry = diagnose(loss_fn, [w])["w"]
    assert (entry.cause, entry.op) == ("numpy-in-path", "Pow") and "`np.mean(squared)`" in entry.explanation
    assert entry.where.lineno == line_of(loss_fn, "# leaves")
    assert f"line {line_of(loss_fn, '# last op')}" in entry.explanation


def _to_host(tensor):
    return tensor.numpy()  # helper leaves


def _forward(w):
    return w * X  # helper op


def test_dot_numpy_in_a_helper_the_loss_calls_is_named_in_the_helper(line_of):
    """Is `.numpy()` inside a helper function the loss calls named at the helper's line?"""
    w = tf.Variable(0.5)

    def loss_fn():
        pred = w * X
        values = _to_host(pred)
        return tf.reduce_mean((values - Y) ** 2)

    entry = diagnose(loss_fn, [w])["w"]
    assert (entry.cause, entry.op) == ("numpy-in-path", "Mul") and "`tensor.numpy()`" in entry.explanation
    assert entry.where.lineno == line_of(_to_host, "# helper leaves")


def test_dot_numpy_on_a_value_a_helper_made_is_named_in_the_loss(line_of):
    """When the last op ran inside a helper, is the loss's own `.numpy()` on its result named?"""
    w = tf.Variable(0.5)

    def loss_fn():
        pred = _forward(w)
        return tf.reduce_mean((pred.numpy() - Y) ** 2)  # leaves

    entry = diagnose(loss_fn, [w])["w"]
    assert (entry.cause, entry.op) == ("numpy-in-path", "Mul")
    assert entry.where.lineno == line_of(loss_fn, "# leaves")
    assert f"line {line_of(_forward, '# helper op')}" in entry.explanation


def test_a_printed_numpy_value_beside_an_unconnected_loss_is_not_blamed():
    """Is `print(h.numpy())` not named when the loss simply does not use `h`?"""
    w = tf.Variable(0.5)

    def loss_fn():
        h = w * X
        print(h.numpy())
        return tf.reduce_sum(Y * 2.0)

    entry = diagnose(loss_fn, [w])["w"]
    assert entry.cause == "not-connected"


def test_assignment_names_the_assign_op(line_of):
    """Is a value routed through `assign_add` named at the assignment?"""
    w, total = tf.Variable(0.5), tf.Variable(0.0)

    def loss_fn():
        total.assign_add(tf.reduce_sum(w * X))  # state
        return total * 2.0

    entry = diagnose(loss_fn, [w])["w"]
    assert (entry.cause, entry.op) == ("state-change", "AssignAddVariableOp")
    assert entry.where.lineno == line_of(loss_fn, "# state")


def test_loss_after_the_with_block_names_the_first_unrecorded_op(line_of):
    """With `tape=True`, is the first op run after the `with` block named as outside the tape?"""
    w = tf.Variable(0.5)

    def step(tape):
        with tape:
            pred = w * X
        loss = tf.reduce_mean((pred - Y) ** 2)  # outside
        return loss

    entry = diagnose(step, [w], tape=True)["w"]
    assert (entry.cause, entry.op) == ("outside-tape", "Sub")
    assert entry.where.lineno == line_of(step, "# outside")


def test_inner_gradient_outside_the_outer_tape(line_of):
    """Is a first derivative computed after the outer tape's block named as unrecorded, at its line?"""
    x = tf.Variable(1.0)

    def second_derivative(outer):
        with outer:
            with tf.GradientTape() as inner:
                y = x**3
        return inner.gradient(y, x)  # inner gradient

    entry = diagnose(second_derivative, [x], tape=tf.GradientTape())["x"]
    assert entry.cause == "unrecorded-gradient"
    assert entry.where.lineno == line_of(second_derivative, "# inner gradient")


def _before_the_tape():
    w = tf.Variable(0.5)
    pred = w * X  # before
    return diagnose(lambda: tf.reduce_mean((pred - Y) ** 2), [w])["w"]


def test_tensor_computed_before_the_tape_is_named_with_its_line(line_of):
    """Is a free tensor of the loss function, computed from the variable before the tape, named?"""
    entry = _before_the_tape()
    assert entry.cause == "outside-tape"
    assert "`pred`" in entry.explanation and f"line {line_of(_before_the_tape, '# before')}" in entry.explanation


def _closure_loss(w):
    pred = w * X  # in the closure
    return lambda: tf.reduce_mean((pred - Y) ** 2)


def test_tensor_in_the_loss_closure_computed_before_the_tape_is_named(line_of):
    """Is a closure tensor of the loss, computed from the variable in the enclosing function, named?"""
    w = tf.Variable(0.5)
    entry = diagnose(_closure_loss(w), [w])["w"]
    assert (entry.cause, "`pred`" in entry.explanation) == ("outside-tape", True)
    assert f"line {line_of(_closure_loss, '# in the closure')}" in entry.explanation


def test_unread_variable_beside_free_data_is_not_connected():
    """Is a variable the loss never reads "not connected", though the loss reads data made before the tape?"""
    w, unused = tf.Variable(0.5), tf.Variable(1.0)
    entry = diagnose(lambda: tf.reduce_mean((w * X - Y) ** 2), [w, unused])["unused"]
    assert entry.cause == "not-connected"


def test_result_not_used_names_the_last_use(line_of):
    """Is a variable whose value is computed but dropped named at the op that last used it?"""
    w, b = tf.Variable(0.5), tf.Variable(0.1)

    def loss_fn():
        scaled = w * X  # dropped
        return tf.reduce_mean((b * X - Y) ** 2) + 0.0 * tf.reduce_sum(X)

    entry = diagnose(loss_fn, [w, b])["w"]
    assert entry.cause == "not-connected" and entry.op == "Mul"
    assert entry.where.lineno == line_of(loss_fn, "# dropped")


def _rebound():
    w = tf.Variable(0.5)
    w = w - 0.1  # rebound
    return diagnose(lambda: tf.reduce_mean((w * X - Y) ** 2), [w])["w"]


def test_variable_rebound_to_a_tensor_names_the_rebinding_line(line_of):
    """Is `w = w - 0.1` after `w = tf.Variable(...)` named with the rebinding line?"""
    entry = _rebound()
    assert entry.cause == "replaced-by-tensor"
    assert f"line {line_of(_rebound, '# rebound')}" in entry.explanation


def test_a_rebound_constant_is_not_blamed_as_a_replaced_variable():
    """Is a constant rebound to itself (`k = k + 1.0`, never a variable) reported as not watched?"""
    k = tf.constant(1.0)
    k = k + 1.0
    assert diagnose(lambda: k * 2.0, [k])["k"].cause == "not-watched"


def test_no_registered_gradient_names_the_op_and_line(line_of):
    """Is the op without a registered gradient named with the line that ran it?"""
    w = tf.Variable(1.0)

    def loss_fn():
        image = tf.ones([2, 2, 3]) * w
        return tf.reduce_sum(tf.image.adjust_contrast(image, 2.0))  # no gradient

    entry = diagnose(loss_fn, [w])["w"]
    assert (entry.cause, entry.op) == ("no-gradient-registered", "AdjustContrastv2")
    assert entry.where.lineno == line_of(loss_fn, "# no gradient")


def test_rounding_ops_have_no_gradient_and_sign_and_top_k_do():
    """Does TensorFlow give None through the rounding ops diagnose treats as cuts, zeros through sign,
    and a gradient through top_k's values (so diagnose does not list those two as cuts)?"""
    w = tf.Variable([0.2, 0.9, 0.4])
    ops = {"Round": tf.round, "Floor": tf.floor, "Ceil": tf.math.ceil, "Rint": tf.math.rint}
    assert set(ops) == ROUNDING
    with tf.GradientTape(persistent=True) as tape:
        rounded = {name: tf.reduce_sum(op(w * 3.0)) for name, op in ops.items()}
        signed = tf.reduce_sum(tf.sign(w))
        top = tf.reduce_sum(tf.math.top_k(w, 2).values)
    assert all(tape.gradient(value, w) is None for value in rounded.values())
    assert not tape.gradient(signed, w).numpy().any() and tape.gradient(top, w).numpy().any()
    assert diagnose(lambda: tf.reduce_sum(tf.sign(w)), [w])["w"].status == "zero"
    assert diagnose(lambda: tf.reduce_sum(tf.math.top_k(w, 2).values), [w]).ok
