"""The departure from the task's formula (tapelab.checker.op_trace): by the operations both execute, named
only inside the formula, with the student's line when the alignment points to one."""
import tensorflow as tf

from answers import define
from tapelab.checker.departure import function_node
from tapelab.checker.op_trace import executed_ops, first_departure


def _student(code: str):
    return define(code, "op trace", {"tf": tf})["f"]


def _formula(v):
    return 3 * v**3 - 2 * v**2 + v


def test_a_multiplication_where_the_formula_raises_to_a_power():
    fn = _student("def f(x):\n    x = tf.Variable(x)\n    with tf.GradientTape() as tape:\n"
                  "        y = 3 * x**3 - 2 * x*2 + x\n    return tape.gradient(y, x)\n")
    expected = executed_ops(lambda: _formula(tf.Variable(2.0)))
    found = first_departure(expected, executed_ops(lambda: fn(2.0)), function_node(fn),
                            ["def f(x):\n", "", "", "        y = 3 * x**3 - 2 * x*2 + x\n"])
    assert (found.expected, found.actual) == ("Pow", "Mul")
    assert found.line == (4, "y = 3 * x**3 - 2 * x*2 + x")
    assert "raises to a power" in found.sentence() and "multiplies" in found.sentence()


def test_the_whole_formula_then_a_wrong_source_is_no_departure():
    """A mistake after the formula (here the gradient of the wrong source) leaves the formula intact: silence."""
    fn = _student("def f(x):\n    x = tf.Variable(x)\n    c = tf.Variable(1.0)\n    with tf.GradientTape() as tape:\n"
                  "        y = 3 * x**3 - 2 * x**2 + x\n    return tape.gradient(y, [c])\n")
    expected = executed_ops(lambda: _formula(tf.Variable(2.0)))
    assert first_departure(expected, executed_ops(lambda: fn(2.0))) is None


def test_a_function_that_raises_has_no_trace():
    assert executed_ops(lambda: 1 / 0) is None
