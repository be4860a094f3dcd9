"""The second catalogue (tests/fresh_mistakes/): every mistake is rejected by the student's own check, and
each names a catalogued cause. How many the feedback names is measured, not asserted: `tools/named.py`."""
import pytest

from answers import fresh_mistakes
from mutation.inprocess import exercises, grade
from tapelab.paths import assignment_names

_BY_ID = {(e.notebook, e.answer_id): e for nb in assignment_names() for e in exercises(nb)}
_FRESH = [(nb, gid, m) for nb in assignment_names() for gid, ms in sorted(fresh_mistakes(nb).items()) for m in ms]


def test_four_per_exercise():
    """Does the second catalogue hold four mistakes for every exercise?"""
    counts = {key: 0 for key in _BY_ID}
    for nb, gid, _ in _FRESH:
        counts[nb, gid] += 1
    assert set(counts.values()) == {4}, counts


@pytest.mark.parametrize("notebook,answer_id,mistake", _FRESH, ids=[f"{nb}-{g}-{m.name}" for nb, g, m in _FRESH])
def test_each_is_rejected_by_the_visible_check(notebook, answer_id, mistake):
    """Is no wrong answer of the second catalogue called Correct (nor left to the hidden tests)?"""
    verdict = grade(_BY_ID[notebook, answer_id], mistake.code, f"fresh {mistake.name}")
    assert verdict.outcome == "incorrect" and verdict.part == "visible", verdict
