"""Exercise 1.4 (a gradient check of the tape): right answers written other ways pass, and float32 is named
however the student's values come back."""
import pytest
import tensorflow as tf

from answers import define
from tapelab.exercises.basic_tape import ex1_4
from tapelab.checker.messages import Incorrect

_HEAD = "def gradient_check(f, x, h=1e-5):\n"


def _answer(body: str, label: str):
    return define(_HEAD + body, label, {"tf": tf})["gradient_check"]


@pytest.mark.parametrize("body", [
    # a float64 variable instead of a watched constant, NumPy results, the error relative to the tape's slope
    "    x = tf.Variable(x, dtype=tf.float64)\n    with tf.GradientTape() as tape:\n        y = f(x)\n"
    "    t = tape.gradient(y, x).numpy()\n    n = ((f(x + h) - f(x - h)) / (2 * h)).numpy()\n"
    "    return t, n, abs(t - n) / abs(t)\n",
    # Python floats, and the error relative to the larger slope
    "    x = tf.constant(x, tf.float64)\n    with tf.GradientTape() as tape:\n        tape.watch(x)\n        y = f(x)\n"
    "    t = float(tape.gradient(y, x))\n    n = float((f(x + h) - f(x - h)) / 2 / h)\n"
    "    return t, n, abs(t - n) / max(abs(t), abs(n))\n",
], ids=["variable-numpy-over-tape", "floats-over-max"])
def test_equivalent_right_answers_pass_visible_and_hidden_cases(body):
    """Is a right gradient check accepted whatever the slope it divides by and the type it returns?"""
    answer = _answer(body, "equivalent")
    ex1_4.check(answer)
    ex1_4.check(answer, cases=[("tanh", 0.5, 1e-5), ("x^3-3x", 1.2, 1e-2), ("softplus", 2.0, 1e-5)])


def test_float32_values_returned_as_python_floats_are_named_float32():
    """Is a check done in float32 named as such when its dtype is lost (the slopes returned as floats)?"""
    answer = _answer("    x = tf.constant(x)\n    with tf.GradientTape() as tape:\n        tape.watch(x)\n"
                     "        y = f(x)\n    t = float(tape.gradient(y, x))\n"
                     "    n = float((f(x + h) - f(x - h)) / (2 * h))\n    return t, n, abs(t - n) / abs(n)\n",
                     "float32-floats")
    with pytest.raises(Incorrect, match="float32") as failure:
        ex1_4.check(answer)
    assert failure.value.cause == "float32-check"


def test_wrong_numeric_slope_with_no_known_cause_names_none():
    """Is a numeric slope that matches no known wrong answer reported as a plain mismatch, with no cause?"""
    answer = _answer("    x = tf.constant(x, tf.float64)\n    with tf.GradientTape() as tape:\n        tape.watch(x)\n"
                     "        y = f(x)\n    t = tape.gradient(y, x)\n    n = (f(x + h) - f(x - h)) / (3 * h)\n"
                     "    return t, n, abs(t - n) / abs(n)\n", "unknown")
    with pytest.raises(Incorrect, match="numeric_slope") as failure:
        ex1_4.check(answer)
    assert failure.value.cause is None
