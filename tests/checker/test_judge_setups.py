"""What the grader's judge builds: `Exercise.given` inputs, which only the student's code reads (so the judge, served
those reads from the kernel's record, never makes them), and `replay.once_in_judge` set-ups, made once per case in
the judge and afresh in a kernel. Whether the judge still decides as the kernel did is test_replay.py's sweep."""
import keras
import pytest

from answers import variant_reference
from mutation.inprocess import exercises, grade_twice
from tapelab.checker import expected, replay
from tapelab.checker.exercise import Exercise


def _counting():
    made = []

    def setup(*args):
        made.append(args)
        return [len(made)]
    return made, setup


def _judging():
    return replay.judged(replay.Record())


def test_a_set_up_is_made_once_per_arguments_in_the_judge_and_afresh_elsewhere():
    """Outside the judge every call makes the set-up anew; while judging, each distinct argument list is made once
    and the same result served again."""
    made, setup = _counting()
    once = replay.once_in_judge(setup)
    first, second = once((1, 2)), once((1, 2))
    assert first is not second and len(made) == 2
    with _judging():
        judged = [once((1, 2)), once((1, 2)), once((3, 4), "mse"), once((3, 4), "mse")]
    assert judged[0] is judged[1] and judged[2] is judged[3] and judged[0] is not judged[2]
    assert made[2:] == [((1, 2),), ((3, 4), "mse")]


def test_a_given_input_is_made_in_a_kernel_and_never_in_the_judge():
    made, setup = _counting()
    exercise = Exercise()
    assert exercise.given(setup) == [1]
    with _judging():
        assert exercise.given(setup) is None
    assert made == [()]


CASES = [*(("02_model_variables", f"ex2_{n}") for n in (1, 3, 4, 6, 7)), ("04_persistent_tapes", "ex4_6"),
         ("06_fit_vs_custom", "ex6_4"), ("06_fit_vs_custom", "ex6_6")]


@pytest.mark.parametrize("notebook, name", CASES, ids=[name for _, name in CASES])
def test_the_judge_builds_no_keras_model_for_a_later_students_right_answer(notebook, name, monkeypatch):
    """The judge of a whole class (expected values computed once, as `judge.serve` sets it): does a second right
    answer, judged like the first, make no Keras model at all in the judge, while its kernel still builds the
    models the student's code is called on?"""
    monkeypatch.setattr(expected, "_ONCE", {})
    built = {"judge": 0, "kernel": 0}
    real = keras.Sequential.__init__

    def counted(self, *args, **kwargs):
        built["judge" if replay.judging() else "kernel"] += 1
        real(self, *args, **kwargs)
    monkeypatch.setattr(keras.Sequential, "__init__", counted)
    exercise = next(e for e in exercises(notebook) if e.answer_id == f"{name}_answer")
    code = variant_reference(notebook, exercise.answer_id, None)
    grade_twice(exercise, code, "first student")
    built.update(judge=0, kernel=0)
    live, judged = grade_twice(exercise, code, "second student")
    assert (live.outcome, judged.outcome) == ("passed", "passed")
    assert built["kernel"] > 0 and built["judge"] == 0, built
