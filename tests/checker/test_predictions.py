"""Predict, then run (tapelab.checker.predictions) and the release that empties predictions."""
from __future__ import annotations

import nbformat
import pytest

from tapelab.checker.predictions import Misconception, Question
from tapelab.release_predictions import empty_predictions




SUMMED = Misconception("not-reduced", lambda guess, truth: isinstance(guess, list) and sum(guess) == truth,
                       "The tape differentiates the sum of a vector target, so one number comes back.")


def test_nothing_is_revealed_before_a_prediction(shown):
    question = Question("1.4")
    question.reveal(7.0)
    assert shown[-1].kind == "not-attempted" and "7" not in shown[-1].text


def test_the_untouched_cell_is_not_attempted_and_records_nothing(shown):
    question = Question("1.4")
    question.predict(...)
    question.reveal(7.0)
    assert [m.kind for m in shown] == ["not-attempted", "not-attempted"]


def test_answer_records_and_reveals_at_once_and_only_once(shown):
    question = Question("1.4", misconceptions=[SUMMED])
    question.answer([3.0, 4.0], 7.0)
    question.answer(7.0, 7.0)  # the answer has been seen: the first prediction stays
    assert [(m.kind, m.cause) for m in shown] == [("incorrect", "not-reduced"), ("task", None)]
    assert "stays [3, 4]" in shown[-1].text


def test_a_right_prediction_is_correct_within_the_tolerance(shown):
    question = Question("1.4")
    question.predict(7)
    question.reveal(7.0000001)
    assert shown[-1].kind == "correct" and "7" in shown[-1].text


def test_a_misconception_names_its_cause_and_shows_both_values(shown):
    question = Question("1.4", misconceptions=[SUMMED])
    question.predict([3.0, 4.0])
    question.reveal(7.0)
    assert (shown[-1].kind, shown[-1].cause) == ("incorrect", "not-reduced")
    assert (shown[-1].expected, shown[-1].actual) == ("7", "[3, 4]")


def test_a_wrong_prediction_no_misconception_explains_gets_no_cause(shown):
    question = Question("1.4", misconceptions=[SUMMED])
    question.predict(12.0)
    question.reveal(7.0)
    assert (shown[-1].kind, shown[-1].cause) == ("incorrect", None)
    assert "12" in shown[-1].text and "7" in shown[-1].text


def test_a_misconception_that_cannot_read_the_guess_is_passed_over(shown):
    question = Question("1.4", misconceptions=[Misconception("not-reduced", lambda g, t: g[0] > t, "x")])
    question.predict(None)  # g[0] raises TypeError: not this belief
    question.reveal(7.0)
    assert shown[-1].cause is None


def test_none_equals_only_none_inside_lists_of_tensors(shown):
    tf = pytest.importorskip("tensorflow")
    question = Question("1.5")
    question.predict([2.0, None])
    question.reveal([tf.constant(2.0), None])
    assert shown[-1].kind == "correct"
    again = Question("1.5")
    again.predict([2.0, 0.0])
    again.reveal([tf.constant(2.0), None])
    assert shown[-1].kind == "incorrect"


def test_the_first_prediction_stays_once_the_answer_is_seen(shown):
    question = Question("1.4")
    question.predict(3.0)
    question.reveal(7.0)
    question.predict(7.0)
    question.reveal(7.0)
    assert shown[-1].kind == "incorrect"


def test_shapes_and_choices(shown):
    shape = Question("3.10", kind="shape")
    shape.predict((3, 2))
    shape.reveal(pytest.importorskip("tensorflow").zeros([3, 2]).shape)
    assert shown[-1].kind == "correct"
    choice = Question("5.3", kind="choice", choices=("A", "B", "C"))
    choice.predict("D")
    assert shown[-1].kind == "not-attempted" and "A, B" not in shown[-1].text and "'A'" in shown[-1].text
    choice.predict("B")
    choice.reveal("C")
    assert shown[-1].kind == "incorrect"


def test_an_unknown_cause_code_fails_when_the_question_is_written():
    with pytest.raises(KeyError):
        Misconception("no-such-cause", lambda g, t: True, "x")


def test_the_release_empties_predictions_and_nothing_else():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("q1_5.predict([2.0, None])  # [dv0, dv1]: a number or None each\n"
                                  "y = model.predict(x)\n"),
        nbformat.v4.new_code_cell("q1_6.predict(\"é\"); q1_7.predict((3, 2))"),
        nbformat.v4.new_code_cell("q1_8.predict(1.0)"),
    ]
    nb.cells[2].metadata["nbgrader"] = {"solution": True, "grade_id": "ex1_1_answer"}
    assert empty_predictions(nb) == 3
    assert nb.cells[0].source == ("q1_5.predict(...)  # [dv0, dv1]: a number or None each\n"
                                  "y = model.predict(x)\n")
    assert nb.cells[1].source == "q1_6.predict(...); q1_7.predict(...)"
    assert nb.cells[2].source == "q1_8.predict(1.0)"  # an nbgrader cell is nbgrader's


def test_a_prediction_over_several_lines_stops_the_release():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("q1_5.predict([2.0,\n              None])")]
    with pytest.raises(ValueError, match="one line"):
        empty_predictions(nb)
