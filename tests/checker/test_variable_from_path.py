"""A `tf.Variable` created from a value computed from the source: the new variable starts from a copy of that value,
and its creation is no recorded operation the tape can run backwards, so the gradient is `None`. The feedback names
that line (inside the tape or before it), and never a variable that is not on the path from the source."""
import pytest

from answers import define
from tapelab.checker.code_facts import CodeFacts
from tapelab.checker.explanations import explain_none


def _why(code: str, values=None):
    facts = CodeFacts.of(define(code, "variable from path", {})["f"])
    return explain_none(facts, facts.returned_call(), values or {"start": "constant"})


_INSIDE = '''
def f(start):
    w = tf.Variable(start)
    x = tf.constant([0.5, -1.0, 3.0])
    with tf.GradientTape() as tape:
        err = tf.Variable(w * x - 2.0)
        loss = tf.reduce_mean(tf.square(err))
    return tape.gradient(loss, w)
'''

_BEFORE = '''
def f(start):
    w = tf.Variable(start)
    x = tf.constant([0.5, -1.0, 3.0])
    err = tf.Variable(w * x - 2.0)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(err))
    return tape.gradient(loss, w)
'''

_TWO_STEPS = '''
def f(start):
    w = tf.Variable(start)
    with tf.GradientTape() as tape:
        h = w * 3.0
        hv = tf.Variable(h, trainable=True)
        loss = hv ** 2
    return tape.gradient(loss, w)
'''


def test_a_variable_made_from_the_source_inside_the_tape_is_named():
    """Is `err = tf.Variable(w * x - 2.0)` inside the tape named as the copy that cuts the path, with the fix?"""
    why = _why(_INSIDE)
    assert why.cause == "state-change", why
    assert "`err = tf.Variable(w * x - 2.0)`" in why.text and "`err = w * x - 2.0`" in why.text
    assert "?" not in why.text


def test_a_variable_made_from_the_source_before_the_tape_is_named():
    """Made before the block, the copy is named too (moving it into the block alone would not help), and the fix
    computes the tensor inside the block."""
    why = _why(_BEFORE)
    assert why.cause == "state-change", why
    assert "`err = tf.Variable(w * x - 2.0)`" in why.text and "inside the `with` block" in why.text


def test_a_variable_made_from_a_name_computed_from_the_source_is_named():
    """The source reaches the variable's initial value through another name (`h = w * 3.0`)."""
    why = _why(_TWO_STEPS)
    assert why.cause == "state-change" and "`hv = tf.Variable(h, trainable=True)`" in why.text, why
    assert "`hv = h`" in why.text


@pytest.mark.parametrize("code,name", [
    # the variable is made from the source, but the loss does not read it: the loss never reads w at all
    ('''
def f(start):
    w = tf.Variable(start)
    x = tf.constant([0.5, -1.0, 3.0])
    with tf.GradientTape() as tape:
        kept = tf.Variable(w * x)
        loss = tf.reduce_mean(x ** 2)
    return tape.gradient(loss, w)
''', "kept"),
    # the variable on the path takes only the source's shape (zeros_like), not its value
    ('''
def f(start):
    w = tf.Variable(start)
    x = tf.constant([0.5, -1.0, 3.0])
    with tf.GradientTape() as tape:
        s = tf.Variable(tf.zeros_like(w))
        loss = tf.reduce_sum(s * x)
    return tape.gradient(loss, w)
''', "s"),
])
def test_a_variable_off_the_path_is_not_blamed(code, name):
    """Near misses: a new variable that does not carry the source's value to the loss is never named."""
    why = _why(code)
    assert why.cause != "state-change" and f"`{name} = tf.Variable(" not in why.text, why
