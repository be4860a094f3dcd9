"""The "predict, then run" questions of 05_debugging_none: the solution notebook's model prediction is Correct
against what TensorFlow computes (computed here as the notebook's reveal cell computes it), and each
misconception explains the guess its belief gives, names its cause, and does not explain the right answer."""
from __future__ import annotations

import ast
import json
import os
import warnings
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from tapelab.checker.predictions import _plain  # noqa: E402
from tapelab.exercises.questions import debugging_none as questions  # noqa: E402

NOTEBOOK = Path(__file__).resolve().parents[2] / "solutions" / "05_debugging_none.ipynb"




def model_predictions() -> dict[str, object]:
    """`qN_M` -> the argument of its `.predict(...)` call in the solution notebook."""
    found = {}
    for cell in json.loads(NOTEBOOK.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse("".join(cell["source"]))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "predict"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id.startswith("q5_")):
                found[node.func.value.id] = ast.literal_eval(node.args[0])
    return found


# What each reveal cell computes, computed the same way.

def truth_5_1():
    w = tf.Variable([0.3, 0.9])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.cast(w > 0.5, tf.float32) * w)
    return tape.gradient(loss, w)


def truth_5_2():
    p = tf.Variable(3.0, trainable=False)
    q = tf.Variable(3.0)
    q.assign(q * 2.0)
    r = tf.Variable(3.0)
    r = r * 2.0  # tapelab: ignore[replaced-by-tensor]
    with tf.GradientTape() as tape:
        loss = p * q * r
    return tape.gradient(loss, [p, q, r])  # tapelab: ignore[not-watched]


def truth_5_3():
    x3, seen, w = tf.constant([1.0, 2.0, 3.0]), tf.Variable(0.0), tf.Variable(1.5)
    target = 2.0 * x3 + 1.0
    with tf.GradientTape(persistent=True) as tape:
        out = w * x3 + 1.0
        seen.assign_add(tf.reduce_sum(out))
        options = {"A": tf.reduce_mean((out - target) ** 2), "B": tf.reduce_mean((x3 - target) ** 2),
                   "C": seen * tf.reduce_mean(out)}
    gives_none = [letter for letter, option in options.items() if tape.gradient(option, w) is None]
    del tape
    (culprit,) = gives_none
    return culprit


def truth_5_5():
    w, b, c = (tf.Variable(v) for v in questions.START_5)
    with tf.GradientTape() as tape:
        step_loss = (2.0 * w + b - 1.0) ** 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        keras.optimizers.SGD(learning_rate=0.1).apply_gradients(zip(tape.gradient(step_loss, [w, b, c]), [w, b, c]))
    return [w, b, c]


def truth_5_6():
    root = tf.Variable([0.0, 4.0])
    first_op = "none: every value was finite"
    tf.debugging.enable_check_numerics()
    try:
        with tf.GradientTape() as tape:
            log_loss = tf.reduce_sum(tf.math.log(root))
        tape.gradient(log_loss, root)
    except tf.errors.InvalidArgumentError as error:
        first_op = error.message.split('op "')[1].split('"')[0]
    finally:
        tf.debugging.disable_check_numerics()
    return first_op


def truth_5_9():
    @tf.custom_gradient
    def log1pexp_typo(x):
        e = tf.exp(x)

        def grad(upstream):
            return upstream * (1.0 - 1.0 / e)

        return tf.math.log(1.0 + e), grad

    x0 = tf.constant(questions.X_9)
    with tf.GradientTape() as tape:
        tape.watch(x0)
        y0 = log1pexp_typo(x0)
    return tape.gradient(y0, x0)


def truth_5_11():
    from tapelab.widgets.none_map import NoneMapModel

    rows = NoneMapModel().rows("stop_gradient on the hidden layer")
    return ", ".join(row.name for row in rows if row.status == "None") or "none"


TRUTHS = {"q5_1": truth_5_1, "q5_2": truth_5_2, "q5_3": truth_5_3, "q5_5": truth_5_5, "q5_6": truth_5_6,
          "q5_9": truth_5_9, "q5_11": truth_5_11}


def _judge(name: str, guess, truth, shown):
    return getattr(questions, name).judge(guess, truth)


def test_the_notebook_predicts_and_reveals_every_question():
    """Does the solution notebook hold one model prediction for each question the module declares?"""
    assert sorted(model_predictions()) == sorted(questions.__all__) == sorted(TRUTHS)


@pytest.mark.parametrize("name", sorted(TRUTHS))
def test_the_model_prediction_is_correct(name, shown):
    """Is the notebook's model prediction Correct against what TensorFlow computes?"""
    message = _judge(name, model_predictions()[name], TRUTHS[name](), shown)
    assert message.kind == "correct", message.text


def _truth_value(name):
    """The truth as the question compares it (nested lists of floats, None kept) for a value question."""
    truth = TRUTHS[name]()
    return _plain(truth) if getattr(questions, name).kind == "value" else truth


def _with(values, index, new):
    changed = list(values)
    changed[index] = new
    return changed


def belief_guesses():
    """(question, misconception index, the guess that belief gives, computed from the truth)."""
    t1, t2 = _truth_value("q5_1"), _truth_value("q5_2")
    return [
        ("q5_1", 0, None),  # the comparison cuts every path
        ("q5_1", 1, [None if v == 0 else v for v in t1]),  # a zero slope is None
        ("q5_2", 0, _with(t2, 0, t2[1] * 2)),  # p watched: dp = q * r = 6 * 6, twice dq = p * r
        ("q5_2", 1, _with(t2, 1, None)),  # assign replaces the variable
        ("q5_2", 2, _with(t2, 2, t2[1])),  # r still the variable: dr = p * q = 3 * 6, as dq = p * r
        ("q5_3", 0, "A"),  # the target computed outside the tape breaks it
        ("q5_3", 1, "C"),  # reading a variable updated by assign_add breaks it
        ("q5_5", 0, list(questions.START_5)),  # one None stops the whole step
        ("q5_6", 0, "Reciprocal"),  # the first Inf is in the backward pass, as with sqrt
        ("q5_9", 0, float(tf.math.sigmoid(questions.X_9))),  # the true slope, as if the tape ignored grad
        ("q5_11", 0, "w1, b1, w2, b2"),  # the stop silences the whole network
        ("q5_11", 1, "w2, b2"),  # the layer after the stop loses its gradients
    ]


@pytest.mark.parametrize("name, index, guess", belief_guesses())
def test_each_misconception_explains_its_beliefs_guess_and_names_its_cause(name, index, guess, shown):
    """Does the belief's guess get that misconception's message and cause, and the right answer not?"""
    question = getattr(questions, name)
    mistake = question.misconceptions[index]
    truth = _truth_value(name)
    assert mistake.explains(guess, truth)
    assert not mistake.explains(model_predictions()[name], truth)
    assert not mistake.explains(truth, truth)
    message = _judge(name, guess, TRUTHS[name](), shown)
    assert (message.kind, message.cause, message.text) == ("incorrect", mistake.cause, mistake.belief)


def test_every_misconception_is_exercised():
    """Does the list above give a guess for every misconception of every question?"""
    covered = {(name, index) for name, index, _ in belief_guesses()}
    declared = {(name, i) for name in questions.__all__ for i in range(len(getattr(questions, name).misconceptions))}
    assert covered == declared


def test_a_wrong_guess_no_belief_gives_gets_no_cause(shown):
    """Is a guess no misconception explains answered with both values and no cause?"""
    truth = TRUTHS["q5_2"]()
    message = _judge("q5_2", [None, -1.0, None], truth, shown)
    assert (message.kind, message.cause) == ("incorrect", None)
    for guess in ([19.0, 18.0, None], [None, 18.0, 19.0]):  # a number for p or r that no reading of them gives
        assert _judge("q5_2", guess, truth, shown).cause is None
    assert "-1" in message.text and "None" in message.text
    message = _judge("q5_6", "Sum", truth_5_6(), shown)
    assert (message.kind, message.cause) == ("incorrect", None)
    assert "'Sum'" in message.text and repr(truth_5_6()) in message.text
    message = _judge("q5_11", "none", truth_5_11(), shown)
    assert (message.kind, message.cause) == ("incorrect", None)
