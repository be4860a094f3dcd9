"""The "predict, then run" questions of notebook 06 (tapelab.exercises.questions.fit_vs_custom): the model
prediction is Correct against the value TensorFlow computes the way the notebook's reveal does, and every
misconception explains the guess its belief gives, never the right answer."""
from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import keras  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

from tapelab.exercises.questions import fit_vs_custom as questions  # noqa: E402
from tapelab.widgets.comparison import ComparisonModel  # noqa: E402

X = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
Y = 2 * X + 1




def _judge(question, guess, truth, shown):
    """The message `question` gives `guess` once `truth` is revealed."""
    return question.judge(guess, truth)


def _model():
    inputs = keras.Input((1,))
    return keras.Model(inputs, keras.layers.Dense(1, kernel_initializer="zeros")(inputs))


def _weights_after_one_epoch(optimizer, batch_size):
    model = _model()
    model.compile(optimizer=optimizer, loss="mse", run_eagerly=True)  # as the notebook's reveal does
    model.fit(X, Y, epochs=1, batch_size=batch_size, verbose=0, shuffle=False)
    return [v.numpy() for v in model.trainable_variables]


def _truth_6_1():
    model = _model()
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", run_eagerly=True)  # as the notebook's reveal
    history = model.fit(X, questions.other_targets(X), epochs=2, batch_size=4, verbose=0, shuffle=False).history
    return history["loss"]  # both epochs: the second is the loss after the first update


def _truth_6_2():
    accumulated = _weights_after_one_epoch(keras.optimizers.SGD(0.1, gradient_accumulation_steps=2), 2)
    runs = {"A": _weights_after_one_epoch(keras.optimizers.SGD(0.1), 4),
            "B": _weights_after_one_epoch(keras.optimizers.SGD(0.1), 2),
            "C": _weights_after_one_epoch(keras.optimizers.SGD(0.2), 4)}
    matches = [label for label, weights in runs.items() if all(np.allclose(a, w) for a, w in zip(accumulated, weights))]
    assert len(matches) == 1, matches
    return matches[0]


def _truth_6_4():
    metric = keras.metrics.Mean(name="loss")
    for loss, rows in questions.BATCH_LOSSES:
        metric.update_state(loss, sample_weight=rows)
    return float(metric.result())


def _truth_6_9():
    comparison = ComparisonModel()
    keeps = []
    for mode in questions.CLIP_MODES:
        state = comparison.state(mode, 1.0)
        before, after = state.grad_before, state.grad_after
        if np.allclose(after / np.linalg.norm(after), before / np.linalg.norm(before)):
            keeps.append(mode)
    assert len(keeps) == 1, keeps
    return keeps[0]


@pytest.fixture(scope="module")
def truths():
    losses = _truth_6_1()
    return {"6.1": losses[0], "6.1 second epoch": losses[1], "6.2": _truth_6_2(), "6.4": _truth_6_4(),
            "6.9": _truth_6_9()}


def _cases(truths):
    """question, the model prediction, and the guess each misconception's belief gives (in order)."""
    return {
        "6.1": (questions.q6_1, 53.5, [truths["6.1"] * len(X), truths["6.1 second epoch"]]),
        "6.2": (questions.q6_2, "A", ["B", "C"]),
        "6.4": (questions.q6_4, 5.0, [6.0, 9.0]),
        "6.9": (questions.q6_9, "global_clipnorm", ["clipnorm", "clipvalue"]),
    }


@pytest.mark.parametrize("number", ["6.1", "6.2", "6.4", "6.9"])
def test_the_model_prediction_is_correct(number, truths, shown):
    question, model_prediction, _ = _cases(truths)[number]
    message = _judge(question, model_prediction, truths[number], shown)
    assert message.kind == "correct", message.text


@pytest.mark.parametrize("number", ["6.1", "6.2", "6.4", "6.9"])
def test_each_misconception_explains_its_own_guess_and_not_the_answer(number, truths, shown):
    question, model_prediction, guesses = _cases(truths)[number]
    assert len(guesses) == len(question.misconceptions)
    for mistake, guess in zip(question.misconceptions, guesses):
        assert mistake.explains(guess, truths[number])
        assert not mistake.explains(model_prediction, truths[number])
        message = _judge(question, guess, truths[number], shown)
        assert (message.kind, message.cause, message.text) == ("incorrect", mistake.cause, mistake.belief)


def test_the_loss_after_the_update_is_what_fit_reports_next(truths):
    """The misconception of 6.1 computes the loss after one step by hand: fit's second epoch reports it."""
    assert np.isclose(truths["6.1 second epoch"], questions._loss_after_first_step(), rtol=1e-4)


def test_a_wrong_guess_no_belief_gives_has_no_cause(truths, shown):
    message = _judge(questions.q6_4, 12.0, truths["6.4"], shown)
    assert (message.kind, message.cause) == ("incorrect", None)


def test_the_notebook_asks_what_the_module_describes():
    nb = nbformat.read(Path(__file__).resolve().parents[2] / "solutions" / "06_fit_vs_custom.ipynb", 4)
    source = {c.get("id"): c.source for c in nb.cells}
    assert "3 * X - 1" in source["q6-1-reveal"] and np.array_equal(questions.other_targets(X), 3 * X - 1)
    assert str(tuple(questions.BATCH_LOSSES)) in source["q6-4-reveal"]
    assert str(questions.CLIP_MODES) in source["q6-9-reveal"].replace('"', "'")
    assert tf.__version__.startswith("2.21")
