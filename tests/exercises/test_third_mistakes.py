"""The third catalogue (tests/third_mistakes/): four wrong answers from public bug reports per exercise, each
with its source, and each rejected by the student's own check. How well the feedback names them is judged
blind from the sheet `tools/judging_sheet.py` writes, not asserted here."""
import pytest

from answers import reported_mistakes
from mutation.inprocess import exercises, grade
from tapelab.paths import assignment_names

_BY_ID = {(e.notebook, e.answer_id): e for nb in assignment_names() for e in exercises(nb)}
_THIRD = [(nb, gid, m) for nb in assignment_names() for gid, ms in sorted(reported_mistakes(nb).items()) for m in ms]


def test_four_per_exercise_each_with_a_source():
    """Does the third catalogue hold four mistakes for every exercise, each citing a public address?"""
    counts = {key: 0 for key in _BY_ID}
    for nb, gid, mistake in _THIRD:
        counts[nb, gid] += 1
        assert mistake.source.startswith("https://") and mistake.tutor, mistake.name
    assert set(counts.values()) == {4}, counts


@pytest.mark.parametrize("notebook,answer_id,mistake", _THIRD, ids=[f"{nb}-{g}-{m.name}" for nb, g, m in _THIRD])
def test_each_is_rejected_by_the_visible_check(notebook, answer_id, mistake):
    """Is no wrong answer of the third catalogue called Correct (nor left to the hidden tests)?"""
    verdict = grade(_BY_ID[notebook, answer_id], mistake.code, f"third {mistake.name}")
    assert verdict.outcome == "incorrect" and verdict.part == "visible", verdict
