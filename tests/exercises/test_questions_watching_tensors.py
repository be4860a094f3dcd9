"""The "predict, then run" questions of 03_watching_tensors (tapelab.exercises.questions.watching_tensors).

Each question's truth is computed here with TensorFlow as the notebook's reveal cell computes it; its model
prediction is read from the solution notebook's predict cell. Each misconception's guess is what TensorFlow gives
in the world its belief imagines (the variable watched, the tensor made inside the tape, ...), so the test
checks that the belief's own consequence is recognised, and that the right answer is not.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tapelab.exercises.questions import watching_tensors as questions
from tapelab.tf_log import tf_log_messages

NOTEBOOK = Path(__file__).resolve().parents[2] / "solutions" / "03_watching_tensors.ipynb"
EPSILON = 0.1  # the notebook's `epsilon`, set in section 8




def _cells():
    return [("".join(c["source"]), c.get("id", "")) for c in json.loads(NOTEBOOK.read_text())["cells"]
            if c["cell_type"] == "code"]


def model_prediction(name: str):
    """The argument of `name.predict(...)` in the solution notebook."""
    for source, _ in _cells():
        for node in ast.walk(ast.parse(source)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "predict"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == name):
                return ast.literal_eval(node.args[0])
    raise AssertionError(f"no {name}.predict(...) in {NOTEBOOK.name}")


def _grads(tape, target, sources):
    return [None if g is None else float(g) for g in tape.gradient(target, sources)]


# Each `truth_*` computes what the notebook's reveal cell passes to `reveal`; `belief_*` the same computation in
# the world a misconception imagines.

def truth_3_1(watch_first=False):
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        if watch_first:
            tape.watch(x)
        a = 3 * x
        tape.watch(x)
        b = x**2
        y = a + b
    return float(tape.gradient(y, x))


def truth_3_2(watch_b=False, watch_c=False, c_inside=False):
    a = tf.Variable(1.0)
    b = tf.Variable(2.0, trainable=False)
    c = a * 2.0
    with tf.GradientTape() as tape:
        if watch_b:
            tape.watch(b)
        if watch_c:
            tape.watch(c)
        if c_inside:
            c = a * 2.0
        y = a * b + c * b
    return _grads(tape, y, [a, b, c])


def truth_3_3(n_float=False):
    n = tf.constant(2.0 if n_float else 2, dtype=tf.float64 if n_float else tf.int32)
    r = tf.constant(np.array(2.0))
    with tf_log_messages(), tf.GradientTape() as tape:
        tape.watch(n)
        tape.watch(r)
        y = tf.cast(n, tf.float64) * r**2
    return _grads(tape, y, [n, r])


def truth_3_4(default_tape=False):
    a = tf.Variable(2.0)
    b = tf.Variable(3.0)
    with tf.GradientTape(watch_accessed_variables=default_tape) as tape:
        tape.watch(a)
        y = a * b
        z = y + b
    return _grads(tape, z, [a, b])


def truth_3_6(surface="saddle", watch=True):
    """The input gradient at P6 of the saddle (the question) or the bowl (the belief that forgets the minus)."""
    point = tf.constant([questions.P6])
    with tf.GradientTape() as tape:
        if watch:
            tape.watch(point)
        sign = -1.0 if surface == "saddle" else 1.0
        f = point[:, 0] ** 2 + sign * point[:, 1] ** 2
    gradient = tape.gradient(f, point)
    return None if gradient is None else [float(v) for v in gradient[0]]


def truth_3_8(step="sign", of="loss"):
    w = tf.constant([2.0, -1.0, 0.5])
    x = tf.constant([1.0, 1.0, 1.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        output = tf.tensordot(w, x, axes=1)
        loss = (output - 3.0) ** 2
    gradient = tape.gradient(loss if of == "loss" else output, x)
    return (x + EPSILON * (tf.sign(gradient) if step == "sign" else gradient)).numpy().tolist()


def truth_3_10(how="jacobian", t_shape=()):
    t = tf.fill(t_shape, 3.0)
    with tf.GradientTape() as tape:
        tape.watch(t)
        y = t * tf.reshape(tf.range(8.0), [4, 2])
    return tuple((tape.jacobian(y, t) if how == "jacobian" else tape.gradient(y, t)).shape.as_list())


def truth_3_11(diagonal_blocks=False):
    x = tf.constant([[1.0], [2.0]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * tf.reduce_sum(x)
    if diagonal_blocks:
        full = tape.jacobian(y, x)
        return [float(full[i, 0, i, 0]) for i in range(2)]
    return tf.reshape(tape.batch_jacobian(y, x), [-1]).numpy().tolist()


def truth_3_12(count="runs"):
    calls = []

    @tf.custom_gradient
    def counted_square(x):
        def backward(upstream):
            calls.append(1)
            return 2 * x * upstream
        return x * x, backward

    x = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.reshape(counted_square(x), [2, 3]), axis=1)
    jacobian = tape.jacobian(y, x, experimental_use_pfor=False)
    del tape
    return {"runs": len(calls), "inputs": x.shape.num_elements(),
            "entries": jacobian.shape.num_elements()}[count]


TRUTHS = {"q3_1": truth_3_1, "q3_2": truth_3_2, "q3_3": truth_3_3, "q3_4": truth_3_4, "q3_6": truth_3_6,
          "q3_8": truth_3_8,
          "q3_10": truth_3_10, "q3_11": truth_3_11, "q3_12": truth_3_12}

# (question, the guess its belief gives, the cause it must name)
BELIEFS = [
    ("q3_1", lambda: truth_3_1(watch_first=True), "watched-too-late"),
    ("q3_1", lambda: None, "watched-too-late"),
    ("q3_2", lambda: truth_3_2(watch_b=True), "not-trainable"),
    ("q3_2", lambda: truth_3_2(watch_c=True), "not-watched"),
    ("q3_2", lambda: truth_3_2(c_inside=True)[:1] + truth_3_2()[1:], "outside-tape"),  # dy/da through c too
    ("q3_3", lambda: truth_3_3(n_float=True), "int-dtype"),
    ("q3_3", lambda: [None, None], "numpy-source"),
    ("q3_4", lambda: truth_3_4(default_tape=True), "not-watched"),
    ("q3_6", lambda: truth_3_6(surface="bowl"), "sign-flipped"),
    ("q3_6", lambda: truth_3_6(watch=False), "not-watched"),
    ("q3_8", lambda: truth_3_8(of="output"), "wrong-target"),
    ("q3_8", lambda: truth_3_8(step="gradient"), "gradient-not-sign"),
    ("q3_10", lambda: truth_3_10(how="gradient"), "gradient-not-jacobian"),
    ("q3_10", lambda: truth_3_10(t_shape=(1,)), "extra-axis"),
    ("q3_11", lambda: truth_3_11(diagonal_blocks=True), "batch-mixed"),
    ("q3_12", lambda: truth_3_12("inputs"), "jacobian-pass-count"),
    ("q3_12", lambda: truth_3_12("entries"), "jacobian-pass-count"),
]


def fresh(name: str):
    return getattr(questions, name)


def test_every_question_is_tested_and_asked_in_the_notebook():
    """Does the notebook predict and reveal every question of the module, and import them all in its setup?"""
    assert set(TRUTHS) == set(questions.__all__) == {name for name, _, _ in BELIEFS}
    sources = "\n".join(source for source, _ in _cells())
    setup = next(source for source, cell_id in _cells() if cell_id == "setup")
    for name in questions.__all__:
        assert f"{name}.predict(" in sources and f"{name}.reveal(" in sources and name in setup


@pytest.mark.parametrize("name", sorted(TRUTHS))
def test_the_model_prediction_is_correct(name):
    """Is the notebook's own prediction judged Correct against the value TensorFlow computes?"""
    message = fresh(name).judge(model_prediction(name), TRUTHS[name]())
    assert message.kind == "correct", message.text


@pytest.mark.parametrize("name, belief_guess, code", BELIEFS, ids=[f"{n}-{c}" for n, _, c in BELIEFS])
def test_each_belief_is_named_by_its_cause(name, belief_guess, code):
    """Does the guess a belief gives differ from the truth, get that belief's cause and show both values?"""
    question, truth, guess = fresh(name), TRUTHS[name](), belief_guess()
    ours = [m for m in question.misconceptions if m.cause == code]
    assert ours, f"{name} has no misconception with cause {code}"
    assert any(m.explains(guess, truth) for m in ours)
    message = question.judge(guess, truth)
    assert (message.kind, message.cause) == ("incorrect", code), message.text
    assert message.expected and message.actual and message.expected != message.actual
    assert any(m.belief == message.text for m in ours)


@pytest.mark.parametrize("name", sorted(TRUTHS))
def test_no_misconception_explains_the_right_answer(name):
    """Is every misconception's `explains` False on the right answer (both the truth and the model prediction)?"""
    question, truth = fresh(name), TRUTHS[name]()
    for guess in (truth, model_prediction(name)):
        for mistake in question.misconceptions:
            assert not mistake.explains(guess, truth), (mistake.cause, guess)


@pytest.mark.parametrize("name, guess", [("q3_1", 5.0), ("q3_2", [5.0, None, None]), ("q3_3", [None, 4.0]),
                                         ("q3_4", [2.0, None]), ("q3_6", [1.0, -0.5]),
                                         ("q3_8", [1.0, 1.0, 1.0]), ("q3_10", (2, 4)), ("q3_11", [3.0, 3.0]),
                                         ("q3_12", 1)])
def test_a_guess_no_belief_explains_gets_no_cause(name, guess):
    """Is a wrong guess that none of the beliefs gives answered with the two values only, no cause?"""
    message = fresh(name).judge(guess, TRUTHS[name]())
    assert (message.kind, message.cause) == ("incorrect", None), message.text
