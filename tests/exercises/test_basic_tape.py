"""Checker tests for 01_basic_tape: reference passes, each mistake is named, stubs are not attempted."""
import pytest

from answers import define, mistakes, reference_answers
from tapelab.feedback import Incorrect, NotAttempted

import tensorflow as tf  # noqa: E402
from tapelab.exercises import basic_tape  # noqa: E402 - after TensorFlow's log settings

NOTEBOOK = "01_basic_tape"
EXERCISES = {f"ex1_{i}_answer": getattr(basic_tape, f"ex1_{i}") for i in range(1, 5)}
HIDDEN = {
    "ex1_1_answer": [-1.5, 0.0, 3.25],
    "ex1_2_answer": [(4, 5, 3, 11), (1, 1, 1, 12)],
    "ex1_3_answer": [(-3.0, 0.5, 4.0)],
    "ex1_4_answer": [("sin", 0.7, 1e-3), ("exp", -1.0, 1e-4)],
}
CATALOGUE = mistakes(NOTEBOOK)


def _answer(code, label):
    namespace = define(code, label, {"tf": tf})
    return next(v for k, v in namespace.items() if callable(v) and not k.startswith("__") and k != "tf")


@pytest.mark.parametrize("grade_id", sorted(EXERCISES))
def test_reference_passes_visible_and_hidden(grade_id):
    """Does the solution notebook's own answer pass the visible and the hidden cases?"""
    answer = _answer(reference_answers(NOTEBOOK)[grade_id], grade_id)
    EXERCISES[grade_id].check(answer)
    EXERCISES[grade_id].check(answer, cases=HIDDEN[grade_id])


@pytest.mark.parametrize(
    "grade_id,mistake",
    [(g, m) for g, ms in sorted(CATALOGUE.items()) for m in ms],
    ids=lambda v: getattr(v, "name", v),
)
def test_each_mistake_fails_with_its_cause(grade_id, mistake):
    """Is each catalogued mistake rejected with a message naming it?"""
    answer = _answer(mistake.code, mistake.name)
    with pytest.raises(Incorrect) as failure:
        EXERCISES[grade_id].check(answer)
    assert mistake.says in str(failure.value)


@pytest.mark.parametrize("grade_id", sorted(EXERCISES))
def test_untouched_stub_is_not_attempted(grade_id):
    """Does the generated stub (raise NotImplementedError) report "not attempted" rather than crash?"""
    signature = reference_answers(NOTEBOOK)[grade_id].strip().splitlines()[0]
    stub = f"{signature}\n    # YOUR CODE HERE\n    raise NotImplementedError()\n"
    with pytest.raises(NotAttempted, match="replace `raise NotImplementedError"):
        EXERCISES[grade_id].check(_answer(stub, "stub"))


def test_undefined_answer_is_not_attempted():
    """Is a never-defined answer name reported as not attempted, naming the function to write?"""
    with pytest.raises(NotAttempted, match="`cubic_slope` is not defined yet"):
        basic_tape.ex1_1.check()


def test_analytic_answer_without_tape_is_rejected():
    """Is a hand-derived formula refused, since the exercise is about the tape?"""
    answer = _answer("def cubic_slope(x):\n    return 9 * x**2 - 4 * x + 1\n", "by-hand")
    with pytest.raises(Incorrect, match="about the tape"):
        basic_tape.ex1_1.check(answer)


def test_hints_are_tiered_and_solution_explains(capsys):
    """Do hints come in increasing tiers, and does the solution come with a reason?"""
    basic_tape.ex1_2.hint()
    basic_tape.ex1_2.hint(3)
    basic_tape.ex1_2.solution()
    out = capsys.readouterr().out
    assert "Hint: 1/3" in out and "Hint: 3/3" in out
    assert "Solution:" in out and "tape.gradient(loss, [w, b])" in out
