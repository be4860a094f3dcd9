"""The exercise framework's parts: comparisons, the gradient oracle, code facts, feedback display."""
import numpy as np
import pytest

from answers import define
from tapelab.checker.code_facts import CodeFacts
from tapelab.checker.compare import allclose, fmt, mismatch
from tapelab.checker.messages import Message
from tapelab.checker.explanations import explain_none
from tapelab.checker.oracle import numeric_gradient, relative_error


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


def _facts(code: str) -> CodeFacts:
    return CodeFacts.of(define(code, "facts", {})["f"])


_UNWATCHED = "def f(x):\n    with tf.GradientTape() as tape:\n        y = x * x\n    return tape.gradient(y, x)\n"


def test_none_explanation_names_the_specific_mistake():
    """Given that `x` is a constant, does the None explanation name the missing watch, not a generic "no path"?"""
    facts = _facts(_UNWATCHED)
    why = explain_none(facts, facts.returned_call(), {"x": "constant"})
    assert why.cause == "not-watched" and "tape.watch(x)" in why.text and "no path" not in why.text


def test_none_explanation_asserts_nothing_it_has_not_established():
    """When the code does not tell what `x` is, is the explanation empty with no cause (never "no path")?"""
    facts = _facts(_UNWATCHED)
    why = explain_none(facts, facts.returned_call(), {})
    assert (why.text, why.cause) == ("", None)


def test_none_explanation_names_no_path_only_when_there_is_none():
    """Is "no path" said for a target that never reads the source, and for nothing else?"""
    facts = _facts("def f(x):\n    u = tf.Variable(1.0)\n    with tf.GradientTape() as tape:\n"
                   "        tape.watch(x)\n        y = u * u\n    return tape.gradient(y, x)\n")
    why = explain_none(facts, facts.returned_call(), {"x": "constant"})
    assert why.cause == "not-connected" and "no path" in why.text


def test_messages_have_plain_text_and_html():
    """Does a feedback box print as plain text and render `code` spans as HTML?"""
    message = Message("hint", "Use `tape.watch(x)`.", code="x = 1")
    assert repr(message) == "Hint: Use `tape.watch(x)`.\n\nx = 1"
    assert "<code>tape.watch(x)</code>" in message._repr_html_()
