"""Code facts and None explanations drawn from the student's own gradient call."""

import pytest

from answers import define
from tapelab.checker.code_facts import CodeFacts
from tapelab.checker.error_causes import error_cause
from tapelab.checker.explanations import explain_none


def _facts(code: str) -> CodeFacts:
    return CodeFacts.of(define(code, "codeinfo", {})["f"])


NESTED = (
    "def f(x):\n"
    "    x = tf.constant(x)\n"
    "    with tf.GradientTape() as outer:\n"
    "        with tf.GradientTape() as inner:\n"
    "            inner.watch(x)\n"
    "            y = x ** 3\n"
    "        dy_dx = inner.gradient(y, x)\n"
    "    return outer.gradient(dy_dx, x)\n"
)


def test_facts_record_tapes_watches_and_calls():
    """Do the facts see both tapes, their nesting, the watch call and which gradient call is returned?"""
    facts = _facts(NESTED)
    assert [t.name for t in facts.tape_blocks] == ["outer", "inner"] and facts.tape("inner").parent == "outer"
    assert facts.tape("inner").watch_line("x") is not None and facts.tape("outer").watch_line("x") is None
    call = facts.returned_call()
    assert (call.tape, call.target, call.sources) == ("outer", "dy_dx", ("x",))


def test_unwatched_source_is_named_even_when_another_tape_watches_it():
    """Is a constant watched only by the inner tape reported as unwatched by the outer one, by name?"""
    facts = _facts(NESTED)
    why = explain_none(facts, facts.returned_call())
    assert why.cause == "not-watched" and "`outer.watch(x)`" in why.text


def test_nothing_is_asserted_without_a_cause():
    """Does a None with no established cause come back with no code and no text?"""
    facts = _facts("def f(x, g):\n    with tf.GradientTape() as tape:\n        y = g(x)\n    return tape.gradient(y, x)\n")
    why = explain_none(facts, facts.returned_call())
    assert why.cause is None and why.text == ""


def test_swapped_arguments_use_the_students_names():
    """Is `tape.gradient(a, b)` with b computed from a reported as swapped, naming `a` and `b`?"""
    facts = _facts("def f(a):\n    with tf.GradientTape() as tape:\n        tape.watch(a)\n        b = a * a\n"
                   "    return tape.gradient(a, b)\n")
    why = explain_none(facts, facts.returned_call(), {"a": "constant"})
    assert why.cause == "swapped-arguments" and "`tape.gradient(b, a)`" in why.text


def test_numpy_source_is_not_called_numpy_in_the_block():
    """Is a NumPy array as the *source* explained as such, not as NumPy on the path inside the tape?"""
    facts = _facts("def f(x):\n    a = np.array(x)\n    with tf.GradientTape() as tape:\n        y = tf.constant(2.0)\n"
                   "    return tape.gradient(y, a)\n")
    why = error_cause(AttributeError("'numpy.ndarray' object has no attribute '_id'"), facts)
    assert why.cause == "numpy-source"


def test_second_use_of_a_nested_inner_tape_points_to_the_outer_tape():
    """Does a second call on a nested inner tape suggest the outer tape rather than persistent=True?"""
    facts = _facts("def f(x):\n    with tf.GradientTape() as outer:\n        with tf.GradientTape() as inner:\n"
                   "            y = x ** 3\n        g = inner.gradient(y, x)\n        h = inner.gradient(g, x)\n"
                   "    return h\n")
    why = error_cause(RuntimeError("A non-persistent GradientTape can only be used to compute one set of gradients"),
                      facts)
    assert why.cause == "wrong-tape" and "outer.gradient(g, x)" in why.text


POSITIONAL_COMPUTE_LOSS = '''
def f(self, x, y):
    y_pred = self(x, training=True)
    return self.compute_loss(y, y_pred)
'''


@pytest.mark.parametrize("text", ["None values not supported.",  # in a graph, as `fit` compiles a step
                                  "Attempt to convert a value (None) with an unsupported type "
                                  "(<class 'NoneType'>) to a Tensor."])  # eagerly, `run_eagerly=True`
def test_positional_compute_loss_is_named_from_either_none_error(text):
    """`self.compute_loss(y, y_pred)` leaves `y_pred` None: compiled or eager, the error is read as that call,
    not as a None gradient."""
    why = error_cause(ValueError(text), _facts(POSITIONAL_COMPUTE_LOSS))
    assert why.cause == "compute-loss-positional" and "keyword arguments" in why.text


PREDICTED_THEN_SQUASHED = '''
def f(model, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sigmoid(model.predict(x, verbose=0))
    return x * tape.gradient(y, x)
'''


RAISERS = '''
class Tape:
    def gradient(self, target, source):
        return None


def gradient_times(x):
    return x * Tape().gradient(x, x)


def own_none_times(x):
    scale = None
    return scale * x
'''


@pytest.mark.parametrize("raiser,cause", [("gradient_times", "predict-in-tape"), ("own_none_times", None)])
def test_a_none_gradient_met_by_an_operator_is_explained_from_the_code(raiser, cause):
    """Is `x * None` read as a None gradient when the line that raised reads a gradient, and is a `predict` on the
    target's path then named even though a TensorFlow op made a tensor of its result? A None of the line's own
    is left unexplained."""
    with pytest.raises(TypeError) as raised:
        define(RAISERS, "raisers", {})[raiser](2.0)
    why = error_cause(raised.value, _facts(PREDICTED_THEN_SQUASHED))
    assert (why and why.cause) == cause
    assert cause is None or "A gradient was `None`" in why.text
