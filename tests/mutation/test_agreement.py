"""Does the instant check a student sees agree with the grade nbgrader records, on mutants?

One submission per notebook, its answer cells holding the first sampled mutant of each exercise
(see test_mutants.py), is autograded by the real nbgrader; each exercise must score full marks
where the in-process verdict passes and zero where it fails. A separate file from
test_mutants.py, so that `--dist loadfile` runs the two on different workers.
"""
import os

import pytest

from mutation.harness import (
    discover, grade_submissions, judge, load_equivalents, mutants_of, notebooks, sample, tier_submissions,
)

pytestmark = pytest.mark.heavy(95)  # seconds, about: scheduled first (tests/conftest.py)

SPECS, ERRORS = discover()


@pytest.fixture(scope="module")
def disagreements(tmp_path_factory):
    """Every notebook's agreement submission, autograded in one batch; where grade and verdict differ."""
    tiers = []
    for specs in SPECS.values():
        chosen = {s.answer_id: judge(s, sample(mutants_of(s), 1), load_equivalents()) for s in specs}
        tiers += tier_submissions(specs, chosen, reference=False, student="mutants-sample")
    jobs = int(os.environ.get("TAPELAB_TEST_JOBS", "2"))
    return grade_submissions(tmp_path_factory.mktemp("mutation-course"), tiers, jobs=jobs)


@pytest.mark.notebooks
@pytest.mark.parametrize("notebook", notebooks())
def test_instant_check_agrees_with_nbgrader(disagreements, notebook):
    """Does nbgrader's grade (full or zero) agree with the in-process verdict for each exercise's mutant?"""
    assert notebook not in ERRORS, ERRORS[notebook]
    mine = [str(d) for d in disagreements if d.notebook == notebook]
    assert not mine, "\n".join(mine)
