"""The checkers' static facts (tapelab.checker.lint_facts): `tapelab lint` on the student's function, beside the
runtime facts. A finding names a failure's cause only when the runtime found none and the finding is tied
to that failure; on a passed check every finding is a note that leaves the grade alone.

Answers go through the notebook's setup cell and the whole test cell in-process (tests/mutation/inprocess.py),
as in test_checkers.py; a few tests call `check` on the function directly to read the box it raises or shows.
"""
import pytest

import tapelab.checker.exercise
from answers import define
from mutation.inprocess import exercises, grade
from tapelab.checker.messages import MIME, Incorrect, NotAttempted
from tapelab.lint import lint_source
from tapelab.paths import assignment_names
from tapelab.checker.lint_facts import StaticFacts

EXERCISES = {e.answer_id: e for nb in assignment_names() for e in exercises(nb)}

_STOPPED_SLOPE = '''
def cubic_slope(x):
    x = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = tf.stop_gradient(3 * x**3 - 2 * x**2 + x)
    return tape.gradient(y, x)
'''
_TAPES_KEPT = '''
def two_steps(w, x, y, lr):
    grads, tapes = [], []
    for _ in range(2):
        with tf.GradientTape(persistent=True) as tape:
            loss = tf.reduce_mean((w * x - y) ** 2)
        tapes.append(tape)
        grad = tape.gradient(loss, w)
        grads.append(grad)
        w.assign_sub(lr * grad)
    return grads
'''


def _line_of(code: str, text: str) -> int:
    """The line of `code` (as the answer cell numbers it) holding `text`."""
    return next(number for number, line in enumerate(code.splitlines(), start=1) if text in line)


def _function(answer_id: str, code: str, label: str):
    """The exercise object and the student's function, defined as the answer cell defines it."""
    exercise = EXERCISES[answer_id]
    namespace = {"__name__": "__main__"}
    exec(compile(exercise.setup, f"<setup {exercise.notebook}>", "exec"), namespace)
    define(code, f"{exercise.notebook}:{answer_id}:{label}", namespace)
    checker = namespace[answer_id.removesuffix("_answer")]
    return checker, namespace[checker.answer]


@pytest.mark.parametrize("answer_id", sorted(EXERCISES))
def test_no_reference_answer_draws_a_lint_note(answer_id):
    """Does lint read every exercise's reference answer (all six notebooks) and find nothing, so that no
    Correct box of a right answer carries a note?"""
    _, fn = _function(answer_id, EXERCISES[answer_id].reference, "reference")
    static = StaticFacts.of(fn)
    assert static.tree is not None, "lint could not read the reference's source"
    assert static.findings == ()


def test_a_none_from_a_gradient_lint_cut_names_the_rule_and_its_line():
    """Is a `None` returned by a gradient call whose path lint found cut explained by that rule, at the line
    of the call in the answer cell, when the runtime names no cause?"""
    verdict = grade(EXERCISES["ex1_1_answer"], _STOPPED_SLOPE, "stopped slope")
    assert (verdict.outcome, verdict.part, verdict.cause) == ("incorrect", "visible", "stop-gradient")
    assert f"at line {_line_of(_STOPPED_SLOPE, 'tape.gradient')} (TPL107 `stop-gradient`)" in verdict.message


def test_a_none_with_no_return_is_not_blamed_on_a_lint_finding():
    """When the function returns nothing, is its `None` left unexplained even though lint finds a constant
    that is never watched (the finding is true, but it is not why this value is None)?"""
    code = '''
def cubic_slope(x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        y = 3 * x**3 - 2 * x**2 + x
    tape.gradient(y, x)
'''
    verdict = grade(EXERCISES["ex1_1_answer"], code, "no return")
    assert verdict.outcome == "incorrect" and verdict.cause is None
    assert "tapelab lint" not in verdict.message


def test_the_returned_element_the_failure_names_is_the_one_traced():
    """When only item 1 is None, is the rule that cut item 1's call named, although item 0's call is fine?"""
    code = '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape(persistent=True) as tape:
        losses = (w * xs - ts) ** 2
        first = losses[0]
        second = tf.round(losses[1])
        third = losses[2]
    g0 = tape.gradient(first, w)
    g1 = tape.gradient(second, w)
    g2 = tape.gradient(third, w)
    del tape
    return [g0, g1, g2]
'''
    verdict = grade(EXERCISES["ex4_1_answer"], code, "rounded second loss")
    assert verdict.cause == "non-differentiable" and "`g1` is `None`" in verdict.message


def test_a_returned_none_that_no_gradient_call_made_is_not_explained():
    """Is a `None` the function writes out itself left unexplained, although another call lint cut exists?"""
    code = '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape(persistent=True) as tape:
        losses = (w * xs - ts) ** 2
        first = losses[0]
        second = losses[1]
        third = losses[2]
    g0 = tape.gradient(first, w)
    g1 = tape.gradient(tf.stop_gradient(second), w)
    g2 = tape.gradient(third, w)
    del tape
    return [g0, None, g2]
'''
    verdict = grade(EXERCISES["ex4_1_answer"], code, "None written out")
    assert verdict.outcome == "incorrect" and verdict.cause is None


def test_an_error_at_a_line_reading_a_cut_gradient_names_the_rule():
    """Is a `NoneType` error raised by the student's line that uses a gradient lint found cut explained?"""
    code = '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        loss = tf.stop_gradient(loss_fn(y, preds) + sum(model.losses))
    grads = tape.gradient(loss, model.trainable_variables)
    for v, g in zip(model.trainable_variables, grads):
        v.assign_sub(0.1 * g)
    return loss
'''
    verdict = grade(EXERCISES["ex2_3_answer"], code, "stopped loss, update by hand")
    assert verdict.cause == "stop-gradient" and "NoneType" in verdict.message


def test_an_error_from_a_none_the_gradients_did_not_make_is_not_explained():
    """When the line that raised reads the variables but not the cut gradients (the None is its own), is the
    error left unexplained?"""
    code = '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        loss = loss_fn(y, preds) + sum(model.losses)
    grads = tape.gradient(tf.stop_gradient(loss), model.trainable_variables)
    scale = None
    for v, g in zip(model.trainable_variables, grads):
        v.assign_sub(scale * 0.1)
    return loss
'''
    verdict = grade(EXERCISES["ex2_3_answer"], code, "None of its own")
    assert verdict.outcome == "incorrect" and verdict.cause is None


def test_a_keras2_idiom_that_raised_at_its_line_is_named():
    """Is the AttributeError Keras 3 raises for `optimizer.get_gradients` explained by the Keras 2 rule?"""
    code = '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True)) + sum(model.losses)
    grads = optimizer.get_gradients(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
'''
    verdict = grade(EXERCISES["ex2_3_answer"], code, "get_gradients")
    assert verdict.cause == "keras2-get-gradients" and "TPL203" in verdict.message


def test_an_error_elsewhere_is_not_blamed_on_a_keras2_idiom():
    """Is an AttributeError raised at another line, about another name, left alone by the Keras 2 rule that
    fired on a line that never ran?"""
    code = '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True)) + sum(model.losses)
    if not model.trainable_variables:
        return optimizer.get_gradients(loss, model.trainable_variables)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradient(zip(grads, model.trainable_variables))
    return loss
'''
    verdict = grade(EXERCISES["ex2_3_answer"], code, "typo elsewhere")
    assert verdict.outcome == "incorrect" and "apply_gradient" in verdict.message and verdict.cause is None


def test_a_cause_the_runtime_established_is_kept():
    """When the runtime names `numpy-in-path` for `float()` on the path, does lint's own code for it
    (`python-number-in-path`) stay out of the feedback?"""
    code = '''
def cubic_slope(x):
    x = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = tf.constant(float(3 * x**3 - 2 * x**2 + x))
    return tape.gradient(y, x)
'''
    _, fn = _function("ex1_1_answer", code, "float")
    assert [f.code for f in StaticFacts.of(fn).findings] == ["python-number-in-path"]
    verdict = grade(EXERCISES["ex1_1_answer"], code, "float")
    assert verdict.cause == "numpy-in-path" and "tapelab lint" not in verdict.message


def test_not_attempted_is_never_explained():
    """Does a Not attempted outcome pass through unchanged, even with findings on the function?"""
    _, fn = _function("ex1_1_answer", _STOPPED_SLOPE, "stopped slope")
    stub = NotAttempted("stub")
    assert StaticFacts.of(fn).explain(stub, tapelab.checker.exercise.CodeFacts.of(fn)) is stub


def test_an_explained_failure_carries_the_rule_in_its_text_and_json():
    """Does the box of a failure lint explained name the rule in plain text and list the finding in the JSON?"""
    checker, fn = _function("ex1_1_answer", _STOPPED_SLOPE, "stopped slope")
    with pytest.raises(Incorrect) as failure:
        checker.check(fn)
    box = failure.value.box()
    data = box._repr_mimebundle_()[MIME]
    assert "TPL107 `stop-gradient`" in repr(box) and data["cause"] == "stop-gradient"
    assert [(f["rule"], f["code"]) for f in data["lint"]] == [("TPL107", "stop-gradient")]


def test_a_passing_answer_with_a_pitfall_gets_a_note_and_keeps_its_grade(monkeypatch):
    """Does a right answer with a persistent tape never released in its loop pass the whole test cell, and
    does its Correct box say "Correct, but:" with the rule and the fix, say the grade is unchanged, and carry
    the finding in its JSON?"""
    shown = []
    monkeypatch.setattr(tapelab.checker.exercise, "show", shown.append)
    verdict = grade(EXERCISES["ex5_3_answer"], _TAPES_KEPT, "persistent tapes kept in a list")
    assert verdict.passed, verdict
    box = shown[0]
    text = repr(box)
    line = _line_of(_TAPES_KEPT, "tapes.append")
    assert box.kind == "correct" and f"Correct, but: TPL111 `tape-not-released` at line {line}:" in text
    assert "grade is unchanged" in text and "Correct, but:" in box._repr_html_()
    assert [f["code"] for f in box._repr_mimebundle_()[MIME]["lint"]] == ["tape-not-released"]


def test_a_pitfall_outside_the_function_is_not_its_note():
    """Is a finding elsewhere in the answer cell (a tape at module level) kept out of the function's notes?"""
    cell = EXERCISES["ex5_3_answer"].reference + '''
with tf.GradientTape(persistent=True) as scratch:
    probe = tf.Variable(1.0) * 2.0
print(scratch.gradient(probe, []))
for _ in range(3):
    probe = probe * 2.0
'''
    assert [f.code for f in lint_source(cell)] == ["tape-not-released"]
    _, fn = _function("ex5_3_answer", cell, "scratch tape")
    assert StaticFacts.of(fn).tree is not None and StaticFacts.of(fn).findings == ()
