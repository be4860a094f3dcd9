"""Notebook 04's "predict, then run" questions: the notebook's model prediction is Correct against what TensorFlow
computes (the same computation as the reveal cell), and each misconception explains the guess its belief gives,
which TensorFlow computes too where the belief is a different program, and not the right answer."""
from __future__ import annotations

import gc
import os
import weakref
from pathlib import Path

import nbformat
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from tapelab.checker import predictions
from tapelab.exercises.questions import persistent_tapes as questions
from tapelab.exercises.questions.persistent_tapes import U8, V8, W4, X5, Y5
from tapelab.tf_log import tf_log_messages




def _judge(question, guess, truth):
    """Show the message `question` gives `guess` once `truth` is revealed (the module's question records nothing)."""
    predictions.show(question.judge(guess, truth))


def _plain(values):
    return [None if v is None else float(v) for v in values]


# what each reveal cell computes, and what the programs the beliefs describe compute

def second_call_outcome():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = tf.sin(y)
    tape.gradient(z, y)
    try:
        dy_dx = tape.gradient(y, x)
        return "None" if dy_dx is None else "a number"
    except RuntimeError:
        return "RuntimeError"


def gradient_of_inner_gradient(inside=True):
    w = tf.Variable(W4)
    with tf_log_messages():
        with tf.GradientTape(persistent=True) as tape:
            y = w**3
            if inside:
                dy_dw = tape.gradient(y, w)
        if not inside:
            dy_dw = tape.gradient(y, w)
    return tape.gradient(dy_dw, w), dy_dw


def paused_gradients(pause=True):
    x, y = tf.Variable(X5), tf.Variable(Y5)
    with tf.GradientTape() as tape:
        if pause:
            with tape.stop_recording():
                s = x * y
        else:
            s = x * y
        z = s * y + x**2
    return _plain(tape.gradient(z, [x, y]))


def game(target):
    u, v = tf.Variable(U8), tf.Variable(V8)
    with tf.GradientTape(persistent=True) as tape:
        loss_u = u**2 * v
        loss_v = v**2 - u * v
    if target == "list":
        return _plain(tape.gradient([loss_u, loss_v], [u, v]))
    if target == "own":
        return _plain([tape.gradient(loss_u, u), tape.gradient(loss_v, v)])
    return _plain(tape.gradient(loss_u, [u, v]))


def _critic_and_points():
    keras.utils.set_random_seed(0)
    critic = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)])
    return critic, tf.random.normal((16, 2))


def nested_penalty_nones():
    """Section 9's own nesting: the inner `gradient` call inside the outer block."""
    critic, x_hat = _critic_and_points()
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x_hat)
            d_hat = critic(x_hat)
        dd_dx = inner.gradient(d_hat, x_hat)
        penalty = tf.reduce_mean((tf.norm(dd_dx, axis=1) - 1.0) ** 2)
    return sum(g is None for g in outer.gradient(penalty, critic.trainable_variables))


def detached_penalty_nones():
    """The question's case: the slope computed before the outer tape opens."""
    critic, x_hat = _critic_and_points()
    with tf.GradientTape() as inner:
        inner.watch(x_hat)
        d_hat = critic(x_hat)
    dd_dx = inner.gradient(d_hat, x_hat)
    with tf.GradientTape() as outer:
        penalty = tf.reduce_mean((tf.norm(dd_dx, axis=1) - 1.0) ** 2)
    return sum(g is None for g in outer.gradient(penalty, critic.trainable_variables))


def alive_after_gradient(persistent=True, steps=10):
    x = tf.Variable(tf.fill([10_000], 0.5))
    refs = []
    with tf.GradientTape(persistent=persistent) as tape:
        h = x
        for _ in range(steps):
            h = tf.sin(h)
            refs.append(weakref.ref(h))
        loss = tf.reduce_sum(h)
    del h
    tape.gradient(loss, x)
    gc.collect()
    alive = sum(ref() is not None for ref in refs)
    del tape
    return alive


def zero_of_derivative(order):
    """The x in (0.5, 2.5) where the `order`-th derivative of x**4/4 - x**2 is zero, from nested tapes on a grid
    (order 2 is the question's truth; 1 and 0 are what the beliefs look for)."""
    xs = tf.linspace(0.5, 2.5, 2001)
    with tf.GradientTape() as outer:
        outer.watch(xs)
        with tf.GradientTape() as inner:
            inner.watch(xs)
            values = [xs**4 / 4 - xs**2]
        values.append(inner.gradient(values[0], xs))
    values.append(outer.gradient(values[1], xs))
    return float(xs[tf.argmin(tf.abs(values[order]))])


# question -> (the notebook's model prediction, the truth, [(belief's guess, its cause), ...])
def cases():
    d2y, _ = gradient_of_inner_gradient()
    unrecorded, dy_dw = gradient_of_inner_gradient(inside=False)
    return {
        "4.1": (questions.q4_1, "RuntimeError", second_call_outcome(),
                [("a number", "tape-used-twice"), ("None", "tape-used-twice")]),
        "4.4": (questions.q4_4, 18.0, d2y,
                [(unrecorded, "gradient-recorded"), (float(dy_dw), "first-derivative")]),
        "4.5": (questions.q4_5, [4.0, 6.0], paused_gradients(),
                [(paused_gradients(pause=False), "recording-paused"), ([None, None], "recording-paused")]),
        "4.8": (questions.q4_8, [2.0, 4.0], game("list"),
                [(game("own"), "targets-summed"), (game("first"), "targets-summed")]),
        "4.9": (questions.q4_9, 4, detached_penalty_nones(),
                [(nested_penalty_nones(), "unrecorded-gradient"), (0, "unrecorded-gradient")]),
        "4.10": (questions.q4_10, 10, alive_after_gradient(),
                 [(alive_after_gradient(persistent=False), "tape-not-released")]),
        "4.10b": (questions.q4_10b, 0.82, zero_of_derivative(2),
                  [(round(zero_of_derivative(1), 2), "first-derivative"), (round(zero_of_derivative(0), 2), "value-for-slope")]),
    }


@pytest.fixture(scope="module")
def computed():
    return cases()


NUMBERS = ["4.1", "4.4", "4.5", "4.8", "4.9", "4.10", "4.10b"]


def test_every_question_of_the_module_is_tested(computed):
    assert sorted(q.number for q in map(questions.__dict__.get, questions.__all__)) == sorted(NUMBERS)
    assert sorted(computed) == sorted(NUMBERS)


@pytest.mark.parametrize("number", NUMBERS)
def test_the_model_prediction_is_correct(computed, shown, number):
    question, model, truth, _ = computed[number]
    _judge(question, model, truth)
    assert shown[-1].kind == "correct", shown[-1].text


@pytest.mark.parametrize("number", NUMBERS)
def test_each_belief_is_explained_with_its_cause(computed, shown, number):
    question, _, truth, beliefs = computed[number]
    for guess, cause in beliefs:
        _judge(question, guess, truth)
        assert (shown[-1].kind, shown[-1].cause) == ("incorrect", cause), (guess, shown[-1].text)
        assert shown[-1].expected is not None and shown[-1].actual is not None


@pytest.mark.parametrize("number", NUMBERS)
def test_no_misconception_explains_the_right_answer(computed, number):
    question, model, truth, _ = computed[number]
    plain = truth if question.kind == "choice" else predictions._plain(truth)
    for mistake in question.misconceptions:
        assert not mistake.explains(model, plain), mistake.belief
        assert not mistake.explains(plain, plain), mistake.belief


def test_every_misconception_is_reached_by_some_belief(computed):
    for question, _, truth, beliefs in computed.values():
        plain = truth if question.kind == "choice" else predictions._plain(truth)
        for mistake in question.misconceptions:
            assert any(_explains(mistake, guess, plain) for guess, _ in beliefs), mistake.belief


def _explains(mistake, guess, truth):
    try:
        return mistake.explains(guess, truth)
    except (TypeError, ValueError, IndexError):
        return False


@pytest.mark.parametrize("number, guess", [("4.4", 5.0), ("4.4", 0.0), ("4.5", [1.0, 1.0]), ("4.5", [4.0, None]),
                                           ("4.8", [0.0, 0.0]),
                                           ("4.9", 7), ("4.10", 3), ("4.10b", 0.5)])
def test_a_wrong_guess_no_belief_gives_names_no_cause(computed, shown, number, guess):
    question, _, truth, _ = computed[number]  # 4.1 has a belief for each wrong choice
    _judge(question, guess, truth)
    assert (shown[-1].kind, shown[-1].cause) == ("incorrect", None)
    assert "You predicted" in shown[-1].text


def test_the_beliefs_use_the_values_the_notebook_asks_about():
    """The misconceptions test their beliefs at the module's constants: are they the notebook's reveal values?"""
    path = Path(__file__).resolve().parents[2] / "solutions" / "04_persistent_tapes.ipynb"
    reveals = {cell.get("id"): cell.source for cell in nbformat.read(str(path), as_version=4).cells}
    assert f"w = tf.Variable({W4})" in reveals["q4-4-reveal"]
    assert f"x = tf.Variable({X5})" in reveals["q4-5-reveal"] and f"y = tf.Variable({Y5})" in reveals["q4-5-reveal"]
    assert f"u, v = tf.Variable({U8}), tf.Variable({V8})" in reveals["q4-8-reveal"]
