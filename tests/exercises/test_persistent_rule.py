"""Exercises 4.3 to 4.5 of 04_persistent_tapes ask for nested tapes where one persistent tape gives the same
value: the exercise text and the check's feedback must state the same rule and the same reason for it."""
import re

import nbformat
import pytest

from answers import mistakes
from mutation.inprocess import exercises, grade
from tapelab.paths import SOLUTIONS

NOTEBOOK = "04_persistent_tapes"
RULE = "one per order of derivative"
REASON = "each ordinary tape drops its record by itself after its one call"
EXERCISES = {e.answer_id: e for e in exercises(NOTEBOOK)}
# the mistakes that get the right value from one persistent tape (its first `gradient` inside the block)
RIGHT_VALUE_ONE_TAPE = {"one persistent tape, first gradient inside the block",
                        "one persistent tape kept after the second derivative", "one persistent tape for the Hessian",
                        "one persistent tape for H·v"}
ONE_TAPE = [(gid, m) for gid in ("ex4_3_answer", "ex4_4_answer", "ex4_5_answer") for m in mistakes(NOTEBOOK)[gid]
            if m.name in RIGHT_VALUE_ONE_TAPE]


def _plain(text: str) -> str:
    """Markdown or a message as words: no emphasis marks, one space between words."""
    return re.sub(r"\s+", " ", text.replace("**", ""))


def _exercise_text(answer_id: str) -> str:
    """The markdown cell right before the exercise's answer cell: the task the student reads."""
    cells = nbformat.read(SOLUTIONS / f"{NOTEBOOK}.ipynb", as_version=4).cells
    at = next(i for i, c in enumerate(cells) if c.get("id") == answer_id)
    return _plain(cells[at - 1].source)


def test_every_exercise_text_states_the_nested_rule():
    """Do the tasks of 4.3, 4.4 and 4.5 all ask for one tape per order of derivative?"""
    for answer_id in ("ex4_3_answer", "ex4_4_answer", "ex4_5_answer"):
        assert RULE in _exercise_text(answer_id), answer_id


def test_exercise_text_gives_the_release_as_the_reason():
    """Does the task of 4.3 say why two tapes: the release, not the value or the peak?"""
    assert REASON in _exercise_text("ex4_3_answer")


@pytest.mark.parametrize("answer_id,mistake", ONE_TAPE, ids=[f"{gid}-{m.name}" for gid, m in ONE_TAPE])
def test_one_tape_feedback_gives_the_texts_rule_and_reason(answer_id, mistake):
    """Is a second derivative from one persistent tape rejected with the rule and the reason the text gives?"""
    verdict = grade(EXERCISES[answer_id], mistake.code, mistake.name)
    message = _plain(verdict.message)
    assert verdict.cause == "one-tape-second-derivative", verdict
    assert RULE in message and REASON in message, verdict
