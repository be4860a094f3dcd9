"""The exercise framework's parts: comparisons, the gradient oracle, code facts, feedback display."""
import numpy as np
import pytest

from answers import define
from tapelab.codeinfo import CodeFacts
from tapelab.compare import allclose, fmt, mismatch
from tapelab.feedback import Message
from tapelab.mistakes import factor_cause, none_cause
from tapelab.oracle import numeric_gradient, relative_error


@pytest.mark.parametrize("expected,actual,says", [
    (2.0, None, "`g` is `None`, but should be 2.0."),
    (np.array([1.0, 2.0]), np.zeros(3), "`g` has shape (3,), but should have shape (2,)."),
    (np.array([1.0, 2.0]), [1.0, 2.5], "`g` is a list, but should be a single tensor."),
    (np.array([1.0, 2.0]), np.array([1.0, 2.5]), "`g` is [1. , 2.5], but should be [1., 2.]."),
    ([1.0], ["a"], "dtype `<U1`, but should be a number."),
    ({"w": 1.0}, {"b": 1.0}, "keys ['b'], but should have keys ['w']"),
    ([np.ones(1), np.ones(2)], [np.ones(1)], "has 1 items, but should have 2"),
    ([np.ones(1), np.ones(2)], [np.ones(1), None], "`g[1]` is `None`"),
])
def test_mismatch_names_what_differs(expected, actual, says):
    """Does `mismatch` say in one sentence how a value differs: None, shape, dtype, keys, length, values?"""
    assert says in mismatch(expected, actual, "g")


def test_mismatch_accepts_tensors_within_tolerance():
    """Is a float32 tensor equal to the float64 oracle within tolerance accepted?"""
    import tensorflow as tf

    assert mismatch(np.array([0.1, 1e3]), tf.constant([0.1, 1e3 + 1e-2]), "g") is None
    assert allclose([1.0, 2.0], tf.constant([1.0, 2.0])) and not allclose([1.0], object())


def test_fmt_rounds_and_hides_negative_zero():
    """Are values shown rounded, with -0.0 printed as 0.0?"""
    assert fmt(np.array([-0.0, 1.234567])) == "[0.    , 1.2346]"
    assert fmt(None) == "None" and fmt(3.0) == "3.0"


def test_numeric_gradient_matches_calculus():
    """Does the float64 central difference recover d/dx sum(x^3) = 3x^2 to many digits?"""
    x = np.array([[-1.5, 0.0], [2.0, 3.0]])
    assert relative_error(numeric_gradient(lambda v: np.sum(v**3), x), 3 * x**2) < 1e-8
    assert relative_error(numeric_gradient(np.sin, 0.5), np.cos(0.5)) < 1e-9


def test_code_facts_see_the_with_block():
    """Do code facts tell what is computed inside the tape, what outside, and which calls are made?"""
    code = (
        "def f(x):\n"
        "    y = x * x\n"
        "    with tf.GradientTape() as tape:\n"
        "        tape.watch(x)\n"
        "        z = y + 1\n"
        "    return tape.gradient(z, x)\n"
    )
    facts = CodeFacts.of(define(code, "facts", {})["f"])
    assert facts.found and facts.tapes == 1
    assert facts.computed_outside_tape("y") and not facts.computed_outside_tape("z")
    assert facts.calls_to("watch") == 1 and facts.calls_to("gradient") == 1
    assert not CodeFacts.of(len).found


def test_none_cause_prefers_the_specific_mistake():
    """Does the None explanation name a missing watch before a generic "no path"?"""
    unwatched = CodeFacts.of(define(
        "def f(x):\n    with tf.GradientTape() as tape:\n        y = x * x\n    return tape.gradient(y, x)\n",
        "unwatched", {})["f"])
    assert "tape.watch(x)" in none_cause(unwatched, "y", "x", source_is_constant=True)
    assert "no path" in none_cause(unwatched, "y", "x", source_is_constant=False)
    assert "times the right ones" in factor_cause([1.0, 2.0], [2.0, 4.0])
    assert factor_cause([1.0, 2.0], [1.0, 3.0]) is None


def test_messages_have_plain_text_and_html():
    """Does a feedback box print as plain text and render `code` spans as HTML?"""
    message = Message("hint", "Use `tape.watch(x)`.", code="x = 1")
    assert repr(message) == "Hint: Use `tape.watch(x)`.\n\nx = 1"
    assert "<code>tape.watch(x)</code>" in message._repr_html_()
