"""A `tf.Variable` made, on the way to the loss, from a value computed from the variable asked about: the new
variable starts from a copy of that value, and its creation is no operation the tape can run backwards. diagnose
names the line (cause state-change) with the sentence and fix the exercise checker gives for the same code (one
rule, `tapelab.explained`), in eager code and inside a `tf.function` (replayed eagerly), and never when the copy
does not carry the variable's value to the loss."""
import tensorflow as tf

from answers import define
from tapelab.checker.code_facts import CodeFacts
from tapelab.checker.explanations import explain_none
from tapelab.diagnose import diagnose

X = tf.constant([0.5, -1.0, 3.0])
_FIX = "Keep `err` a tensor: `err = w * X - 2.0`"


def _checker_says(code: str):
    facts = CodeFacts.of(define(code, "variable copy", {"X": X})["f"])
    return explain_none(facts, facts.returned_call(), {"w": "variable"})


def test_eager_copy_is_named_at_its_line(line_of):
    """Is the copy named with its line and the fix, not called "not connected" with a question?"""
    w = tf.Variable(1.25)

    def loss_fn():
        err = tf.Variable(w * X - 2.0)  # copy
        return tf.reduce_mean(tf.square(err))

    entry = diagnose(loss_fn, [w])["w"]
    assert entry.cause == "state-change", entry
    assert entry.where is not None and entry.where.lineno == line_of(loss_fn, "# copy")
    assert "`err = tf.Variable(w * X - 2.0)`" in entry.explanation and _FIX in entry.explanation
    assert "?" not in entry.explanation


def test_copy_inside_a_tf_function_is_named(line_of):
    """Inside a `tf.function` (which diagnose replays eagerly), the same line and fix."""
    w = tf.Variable(1.25)

    @tf.function
    def loss_fn():
        err = tf.Variable(w * X - 2.0)  # copy
        return tf.reduce_mean(tf.square(err))

    entry = diagnose(loss_fn, [w])["w"]
    assert entry.cause == "state-change", entry
    assert entry.where is not None and entry.where.lineno == line_of(loss_fn.python_function, "# copy")
    assert _FIX in entry.explanation


def test_checker_and_diagnose_say_the_same():
    """One truth across surfaces: the checker's explanation of the same code has the same cause and fix."""
    why = _checker_says('''
def f(w):
    with tf.GradientTape() as tape:
        err = tf.Variable(w * X - 2.0)
        loss = tf.reduce_mean(tf.square(err))
    return tape.gradient(loss, w)
''')
    w = tf.Variable(1.25)

    def loss_fn():
        err = tf.Variable(w * X - 2.0)
        return tf.reduce_mean(tf.square(err))

    entry = diagnose(loss_fn, [w])["w"]
    assert why.cause == entry.cause == "state-change"
    assert _FIX in why.text and _FIX in entry.explanation


def test_a_copy_the_loss_does_not_read_is_not_blamed():
    """The copy is made from `w`, but the loss is computed without it: `w` is simply not connected."""
    w = tf.Variable(1.25)

    def loss_fn():
        kept = tf.Variable(w * X)
        return tf.reduce_mean(X ** 2)

    entry = diagnose(loss_fn, [w])["w"]
    assert entry.cause != "state-change" and "new variable" not in entry.explanation, entry


def test_a_copy_of_something_else_is_not_blamed():
    """The loss reads a new variable made from `X` alone, and `w` only through a cut elsewhere."""
    w = tf.Variable(1.25)

    def loss_fn():
        err = tf.Variable(X - 2.0)
        return tf.reduce_mean(tf.square(err)) + tf.stop_gradient(w * 2.0)

    entry = diagnose(loss_fn, [w])["w"]
    assert entry.cause == "stop-gradient", entry
    assert "new variable" not in entry.explanation
