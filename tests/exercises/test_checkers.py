"""Every exercise checker, three ways: the reference passes (visible and hidden tests), each
catalogued mistake fails naming its cause, and the untouched stub reports "not attempted".

Each answer goes through the same in-process path as the mutation harness: the notebook's setup
cell, the answer cell, then the exercise's whole test cell, as nbgrader runs them; a test cell
that writes to stderr counts as failed, as it does in nbgrader.
"""
import pytest

from answers import mistakes
from mutation.inprocess import exercises, grade
from tapelab.paths import assignment_names

EXERCISES = {(e.notebook, e.answer_id): e for nb in assignment_names() for e in exercises(nb)}
MISTAKES = [(nb, gid, m) for nb in assignment_names() for gid, ms in sorted(mistakes(nb).items()) for m in ms]


@pytest.mark.parametrize("notebook,answer_id", sorted(EXERCISES))
def test_reference_passes_visible_and_hidden_tests(notebook, answer_id):
    """Does the solution notebook's own answer pass the whole test cell, silently?"""
    exercise = EXERCISES[notebook, answer_id]
    verdict = grade(exercise, exercise.reference, "reference")
    assert verdict.passed, verdict


@pytest.mark.parametrize("notebook,answer_id", sorted(EXERCISES))
def test_every_exercise_has_two_catalogued_mistakes(notebook, answer_id):
    """Is every exercise proven against at least two realistic mistakes?"""
    assert len(mistakes(notebook).get(answer_id, [])) >= 2


@pytest.mark.parametrize(
    "notebook,answer_id,mistake", MISTAKES, ids=[f"{nb}-{gid}-{m.name}" for nb, gid, m in MISTAKES]
)
def test_each_mistake_fails_naming_its_cause(notebook, answer_id, mistake):
    """Is each catalogued mistake rejected as incorrect by the student's own `check()` (the visible part,
    so that "Correct" in the notebook means full marks), with a message that names it?"""
    verdict = grade(EXERCISES[notebook, answer_id], mistake.code, mistake.name)
    assert verdict.outcome == "incorrect", verdict
    assert verdict.part == "visible", f"the student's check says Correct, the hidden tests fail: {verdict}"
    assert mistake.says in verdict.message


@pytest.mark.parametrize("notebook,answer_id", sorted(EXERCISES))
def test_untouched_stub_is_not_attempted(notebook, answer_id):
    """Does the stub nbgrader generates (`raise NotImplementedError()`) report "not attempted"?"""
    header = EXERCISES[notebook, answer_id].reference.strip().splitlines()[0]
    stub = (f"{header}\n    # YOUR CODE HERE\n    raise NotImplementedError()\n" if header.startswith("def ")
            else "# YOUR CODE HERE\n")
    verdict = grade(EXERCISES[notebook, answer_id], stub, "stub")
    assert verdict.outcome == "not_attempted" and verdict.part == "visible", verdict
