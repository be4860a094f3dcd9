"""The "predict, then run" questions of notebook 02 (tapelab.exercises.questions.model_variables): the model
prediction is Correct against the value TensorFlow computes the way the notebook's reveal does, and every
misconception explains the guess its belief gives, never the right answer."""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import keras  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

from tapelab.checker import predictions  # noqa: E402
from tapelab.exercises.questions import model_variables as questions  # noqa: E402
from tapelab.widgets.training import TrainingModel  # noqa: E402




def _judge(question, guess, truth, shown):
    """The message `question` gives `guess` once `truth` is revealed."""
    return question.judge(guess, truth)


def _truth_2_1():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.BatchNormalization(),
                              keras.layers.Dense(1, use_bias=False)])
    model.layers[-1].trainable = False
    return [len(model.variables), len(model.trainable_variables)]


def _truth_2_5():
    running = keras.metrics.Mean()
    results = []
    for i, group in enumerate(questions.MEAN_FEED):
        if i == len(questions.MEAN_FEED) - 1:
            running.reset_state()
        for value in group:
            running.update_state(value)
        results.append(float(running.result()))
    return results


def _truth_2_6():
    @tf.function
    def doubled(x):
        return 2 * x

    for kind, value in questions.TRACED_ARGUMENTS:
        doubled(value if kind == "python" else tf.constant(value, getattr(tf, kind)))
    return doubled.experimental_get_tracing_count()


def _truth_2_8():
    grows = [rate for rate in questions.RATES
             if (losses := TrainingModel(learning_rate=rate).step(10).losses)[-1] > losses[0]]
    return grows[0] if grows else "none"


# question, the model prediction, the truth, and the guess each misconception's belief gives (in order)
CASES = {
    "2.1": (questions.q2_1, [7, 4], _truth_2_1, [[7, 6], [7, 5], [6, 4]]),
    "2.5": (questions.q2_5, [6.0, 5.0, 10.0], _truth_2_5, [[8.0, 3.0, 10.0], [6.0, 5.0, 6.25]]),
    "2.6": (questions.q2_6, 4, _truth_2_6, [6, 2, 5]),
    "2.8": (questions.q2_8, 0.15, _truth_2_8, ["none"]),
}


@pytest.fixture(scope="module")
def truths():
    return {number: case[2]() for number, case in CASES.items()}


@pytest.mark.parametrize("number", CASES)
def test_the_model_prediction_is_correct(number, truths, shown):
    question, model_prediction, _, _ = CASES[number]
    message = _judge(question, model_prediction, truths[number], shown)
    assert message.kind == "correct", message.text


@pytest.mark.parametrize("number", CASES)
def test_each_misconception_explains_its_own_guess_and_not_the_answer(number, truths, shown):
    question, model_prediction, _, guesses = CASES[number]
    assert len(guesses) == len(question.misconceptions)
    for mistake, guess in zip(question.misconceptions, guesses):
        assert mistake.explains(guess, predictions._plain(truths[number]) if question.kind == "value"
                                else truths[number])
        assert not mistake.explains(model_prediction, truths[number])
        message = _judge(question, guess, truths[number], shown)
        assert (message.kind, message.cause, message.text) == ("incorrect", mistake.cause, mistake.belief)


def test_a_wrong_guess_no_belief_gives_has_no_cause(truths, shown):
    message = _judge(questions.q2_6, 9, truths["2.6"], shown)
    assert (message.kind, message.cause) == ("incorrect", None)
    assert "9" in message.text and str(truths["2.6"]) in message.text


def test_the_truths_are_what_the_sections_teach(truths):
    """Freezing moves the frozen kernel out of trainable_variables only; a Mean restarts after reset_state;
    a tensor retraces by dtype and shape, a Python number by value; 0.15 is above the stability limit."""
    assert truths["2.1"][0] - truths["2.1"][1] == 3  # the two moving statistics and the frozen kernel
    assert truths["2.5"][2] == questions.MEAN_FEED[2][0]
    assert truths["2.6"] < len(questions.TRACED_ARGUMENTS)
    assert truths["2.8"] == max(questions.RATES) > TrainingModel().stable_limit


def test_the_notebook_asks_what_the_module_describes():
    """The notebook's reveal cells use the values the module's misconceptions reason about."""
    import nbformat
    from pathlib import Path
    nb = nbformat.read(Path(__file__).resolve().parents[2] / "solutions" / "02_model_variables.ipynb", 4)
    reveal = {c.get("id"): c.source for c in nb.cells}
    assert "Dense(1, use_bias=False)" in reveal["q2-1-reveal"]
    assert all(f"update_state({v})" in reveal["q2-5-reveal"] for group in questions.MEAN_FEED for v in group)
    assert "(0.03, 0.1, 0.15)" in reveal["q2-8-reveal"] and questions.RATES == (0.03, 0.1, 0.15)
    for kind, value in questions.TRACED_ARGUMENTS:
        if kind != "python":
            assert f"tf.constant({value})" in reveal["q2-6-reveal"].replace("\n", "")
    assert [v for kind, v in questions.TRACED_ARGUMENTS if kind == "python"] == [2.0, 2.0]
    assert "2.0, 2.0):" in reveal["q2-6-reveal"]
