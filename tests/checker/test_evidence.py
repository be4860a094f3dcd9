"""Causes named from what the code and the values show, where a stock sentence would mislead: a variable the function
was given copied to a constant, a `None` handed from one tape's gradient to another tape's call, a generic fix the
task rules out, the sample weights a `train_step` never takes out, and a guard that tests with `is_nan` alone."""
import numpy as np
import pytest
import tensorflow as tf

from answers import define
from tapelab.checker.code_facts import CodeFacts
from tapelab.checker.explanations import explain_none
from tapelab.checker.messages import Incorrect
from tapelab.checker.none_errors import none_error
from tapelab.checker.premises import vetted


def _function(code: str, label: str):
    namespace = define(code, f"evidence {label}", {"tf": tf})
    return next(v for k, v in namespace.items() if callable(v) and k not in ("tf",) and not k.startswith("__"))


_COPIED = '''
def f(x, w):
    w = tf.convert_to_tensor(w)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(x * w)
    return tape.gradient(y, w)
'''


def test_a_given_variable_copied_to_a_constant_is_named_by_its_line():
    """When the caller passed a variable, is the line that replaced it by a constant copy named, not a bare watch?"""
    facts = CodeFacts.of(_function(_COPIED, "copied"))
    why = explain_none(facts, facts.returned_call(), {"x": "constant", "w": "variable"})
    assert why.cause == "not-watched"
    assert "`w = tf.convert_to_tensor(w)` replaces the variable `w` you were given" in why.text
    assert "tape.watch(w)" in why.text


def test_a_constant_given_as_a_constant_is_not_called_a_copied_variable():
    """Near miss: the caller passed a constant, so converting it copies no variable, and the plain watch question
    stays."""
    facts = CodeFacts.of(_function(_COPIED, "copied constant"))
    why = explain_none(facts, facts.returned_call(), {"x": "constant", "w": "constant"})
    assert why.cause == "not-watched" and "you were given" not in why.text
    assert "Did you call `tape.watch(w)`" in why.text


_HESSIAN = '''
def f(x):
    x = tf.constant(x)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = tf.reduce_sum(x ** 3)
        g = inner.gradient(y, x)
    return outer.jacobian(g, x)
'''


def test_a_none_handed_to_the_outer_tape_is_traced_to_the_inner_call():
    """Is the error of `outer.jacobian(g, x)` on a None `g` traced to the inner call that returned it, with a watch
    for every tape, rather than to the outer tape alone?"""
    fn = _function(_HESSIAN, "hessian")
    with pytest.raises(AttributeError) as raised:
        fn(np.array([1.0, 2.0], np.float32))
    why = none_error(raised.value, CodeFacts.of(fn), {}, "    return outer.jacobian(g, x)")
    assert why is not None and why.cause == "not-watched"
    assert "`g` comes from `inner.gradient(y, x)`, which returned `None`" in why.text
    assert "`inner.watch(x)`" in why.text and "every tape" in why.text


def test_a_none_error_on_a_line_without_a_gradient_call_names_no_chain():
    """Near miss: the same AttributeError raised by a line that only reads the gradient is not said to come from a
    call on that line."""
    fn = _function(_HESSIAN, "hessian read")
    error = AttributeError("'NoneType' object has no attribute 'shape'")
    assert none_error(error, CodeFacts.of(fn), {}, "    return g.shape") is None


_STOPPED = ("`dl_dw` is `None`: `tf.stop_gradient(tf.round(z))` is still on the path from `w` to the loss, and "
            "`tf.stop_gradient` blocks gradients by design. Did you mean to remove it?")


def test_removing_stop_gradient_gives_way_where_the_task_needs_it():
    """Is "did you mean to remove it?" replaced in 5.4, whose straight-through estimator needs `tf.stop_gradient`,
    and kept in 5.2, whose task does not?"""
    from tapelab.exercises.debugging_none import ex5_2, ex5_4

    failure = Incorrect(_STOPPED, cause="stop-gradient")
    shown = vetted(failure, CodeFacts(), ex5_4.remedies)
    assert "remove it" not in str(shown) and "tf.stop_gradient(rounded - z)" in str(shown)
    assert shown.cause == "stop-gradient"
    assert vetted(failure, CodeFacts(), ex5_2.remedies) is failure


_STEP = '''
def train_step(self, data):
    {unpack}
    return x, y
'''


@pytest.mark.parametrize("unpack,taken", [
    ("x, y = data[0], data[1]", False),
    ("x, y = data[:2]", False),
    ("x, y, sample_weight = data", True),
    ("x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)", True),
    ("x, y, w = data[0], data[1], data[2]", True),
])
def test_sample_weights_never_taken_out_are_said_so(unpack, taken):
    """Is a step said to never take the weights out of `data` only when no unpacking of a third element shows?"""
    from tapelab.exercises.fit_match import _weights_taken

    said = _weights_taken(_function(_STEP.format(unpack=unpack), unpack))
    assert ("never takes out the third element" in said) is not taken
    assert ("unpacked" not in said)


_MODEL = '''
def make_custom_model(n_features=1):
    class StudentModel(keras.Model):
        def train_step(self, data):
            {unpack}
            return {{}}

        def test_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            return {{}}

    return StudentModel
'''


@pytest.mark.parametrize("unpack,taken", [("x, y = data[0], data[1]", False), ("w = data[-1]", True)])
def test_only_the_train_step_says_whether_the_weights_are_taken_out(unpack, taken):
    """Does a test_step that unpacks the weights leave a train_step that never takes them out still said so (the
    code read is train_step's alone), and is an index -1 a third element taken?"""
    from tapelab.exercises.fit_match import _weights_taken

    said = _weights_taken(_function(_MODEL.format(unpack=unpack), unpack))
    assert ("never takes out the third element" in said) is not taken


_GUARD = '''
def safe_step(model, optimizer, x, y):
    loss = compute(x, y)
    grads = gradients(loss)
    ok = {test}
    return ok
'''


@pytest.mark.parametrize("test,says,cause", [
    ("tf.logical_not(tf.math.is_nan(loss))", "`tf.math.is_nan`, which is False for an infinity", "loss-not-checked"),
    ("tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])", "did you check only the gradients?",
     "loss-not-checked"),
    ("tf.math.is_finite(grads[0]) & ~tf.math.is_nan(loss)", "NaN or Inf?", None),
])
def test_an_infinite_loss_let_through_is_told_from_the_tests_the_code_makes(test, says, cause):
    """With the loss inf and the gradients finite: is `is_nan` alone named, a guard of the gradients only asked
    about, and a mix of tests (which value each guards unknown) left with the plain question?"""
    from tapelab.exercises.fit_vs_custom import ex6_5

    facts = CodeFacts.of(_function(_GUARD.format(test=test), test))
    problem = ex6_5._wrongly_applied("a batch", float("inf"), ["", ""], True, facts)
    assert says in str(problem) and problem.cause == cause


def test_an_infinite_gradient_let_through_by_is_nan_names_the_gradient():
    """With a finite loss and an infinite gradient, and `is_nan` the only test: is the gradient named?"""
    from tapelab.exercises.fit_vs_custom import ex6_5

    facts = CodeFacts.of(_function(_GUARD.format(test="tf.math.is_nan(loss)"), "is_nan gradient"))
    problem = ex6_5._wrongly_applied("a batch", 3.0, ["Inf", ""], True, facts)
    assert "gradient of `kernel` holds Inf" in str(problem) and problem.cause == "gradients-not-checked"


_RUNNING = '''
def make_running_mean():
    total = tf.Variable(0.0)
    count = tf.Variable(0.0)

    @tf.function
    def update(value):
        {body}
        return total / count
    return update
'''


@pytest.mark.parametrize("body,cause,says", [
    ("nonlocal total, count\n        total = total + value\n        count = count + 1.0", "replaced-by-tensor",
     "`total = total + value` and `count = count + 1.0` rebind the variables' names"),
    ("total.assign_add(value)\n        count.assign_add(1.0)", "trace-time-state", "The Python code that keeps"),
])
def test_each_value_returned_is_told_from_the_code_that_keeps_it(body, cause, says):
    """Means that are each value given come from Python state or from variables whose names are rebound: is the
    rebinding named only where the code rebinds a variable's name?"""
    from tapelab.exercises.compiled_state import RunningMean, _rebound_variables

    facts = CodeFacts.of(_function(_RUNNING.format(body=body), body))
    with pytest.raises(Incorrect) as raised:
        RunningMean()._compare([2.0, 4.0, 9.0], [2.0, 4.0, 9.0], _rebound_variables(facts))
    assert raised.value.cause == cause and says in str(raised.value)


@pytest.mark.parametrize("exercise,message,gone,kept", [
    ("ex1_3", "Its gradient is `None`. Differentiate `y` itself (or slice inside the block).",
     "(or slice inside the block)", "Differentiate `y` itself."),
    ("ex1_3", "One value per output (a Jacobian). Reduce over those axes, or differentiate the scalar sum with "
              "`gradient`.", "Reduce over those axes", "instead of `jacobian`"),
    ("ex1_3", "The full Jacobian. Its diagonal blocks are the right values: use `tape.batch_jacobian(y, x)`.",
     "batch_jacobian", "one `tape.gradient(lengths, X)` call"),
    ("ex5_4", "`dl_dw` is `None`: `tf.cast(z, tf.int32)` has no gradient. Did you keep that op without a "
              "straight-through estimator?", "Did you keep that op", "as `tf.round` does"),
])
def test_a_generic_fix_the_task_rules_out_gives_way_to_the_exercises(exercise, message, gone, kept):
    """1.3 asks for one `gradient` call (no slice per row, no Jacobian to reduce, no `batch_jacobian`); 5.4 fixes the
    rounding to `tf.round`'s: the engine's generic fix is replaced by the exercise's own."""
    import tapelab.exercises.basic_tape
    import tapelab.exercises.debugging_none

    checker = getattr(tapelab.exercises.basic_tape, exercise, None) or getattr(tapelab.exercises.debugging_none, exercise)
    out = str(vetted(Incorrect(message), CodeFacts(), checker.remedies))
    assert gone not in out and kept in out, out


@pytest.mark.parametrize("ratio,says", [(2.0, "`2` (or `0.5`)"), (4.0, "multiplies your result by 4: a sum"),
                                        (0.3, "multiplies your result by 0.3.")])
def test_a_factor_is_told_only_what_it_can_be(ratio, says):
    """A constant factor names a dropped `2` only when it is 2 or 1/2, a count of values summed only when whole."""
    from tapelab.checker.differential import _factor_note

    note = _factor_note(ratio, np.zeros((3, 1)))
    assert says in note and ("`2`" in note) == (ratio == 2.0)
