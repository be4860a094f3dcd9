"""The questions of 01_basic_tape: the model prediction is what TensorFlow computes, each misconception names the
prediction its belief gives and not the right one, and a wrong prediction no belief explains gets no cause."""
from __future__ import annotations

import math

import pytest
import tensorflow as tf

from tapelab.exercises.questions import basic_tape as q




def chain() -> tf.Tensor:
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = (x**2 + 1.0) ** 3
    return tape.gradient(y, x)


def branch() -> list:
    x, v0, v1 = tf.constant(-1.0), tf.Variable(2.0), tf.Variable(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        result = v0 if x > 0.0 else v1**2
    return tape.gradient(result, [v0, v1, x])


def two_targets() -> tf.Tensor:
    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y, z = x**2, x**3
    return tape.gradient([y, z], x)


def flat_point() -> tf.Tensor:
    xs = tf.linspace(0.0, 3.0, 3001)
    with tf.GradientTape() as tape:
        tape.watch(xs)
        ys = xs**3 - 3.0 * xs
    return xs[tf.argmin(tf.abs(tape.gradient(ys, xs)))]


# question, how the notebook computes the truth, the model prediction, [(a belief's guess, its cause)], a guess no
# belief explains
CASES = [
    (q.q1_2, chain, 300.0, [(75.0, "missing-local-derivative")], 79.0),
    (q.q1_5, branch, [None, 4.0, None], [([2.0, 4.0, None], "not-connected"), ([None, 4.0, 0.0], "not-connected")],
     [None, 2.0, None]),
    (q.q1_7, two_targets, 33.0, [([6.0, 27.0], "targets-summed")], 27.0),
    (q.q1_8, flat_point, 1.0, [(math.sqrt(3.0), "value-for-slope")], 2.0),
]


@pytest.mark.parametrize("question, truth, model, beliefs, other", CASES, ids=[c[0].number for c in CASES])
def test_each_question(question, truth, model, beliefs, other):
    right = question.judge(model, truth())
    assert right.kind == "correct", right.text
    for guess, cause in beliefs:
        wrong = question.judge(guess, truth())
        assert (wrong.kind, wrong.cause) == ("incorrect", cause), (guess, wrong.text)
    plain = question.judge(other, truth())
    assert (plain.kind, plain.cause) == ("incorrect", None), (other, plain.text)
