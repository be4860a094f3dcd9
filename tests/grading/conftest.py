"""One graded course shared by the round-trip tests (`--dist loadfile` keeps them on one worker): the
round-trip set of every notebook, and the mutation-agreement submissions graded in the same runs."""
import json

import pytest

from course import build_course, results, round_trip_submissions
from mutation.harness import discover, judge, load_equivalents, mutants_of, sample, tier_submissions
from tapelab.paths import REPO, assignment_names

OUTPUT = REPO / "test-output"


@pytest.fixture(scope="session")
def agreement_tiers():
    """One submission per notebook whose answer cells hold the first sampled mutant of each exercise (see
    tests/mutation/test_mutants.py), with the in-process verdict of each."""
    specs, _ = discover()
    tiers = []
    for exercises in specs.values():
        chosen = {s.answer_id: judge(s, sample(mutants_of(s), 1), load_equivalents()) for s in exercises}
        tiers += tier_submissions(exercises, chosen, reference=False, student="mutants-sample")
    return tiers


@pytest.fixture(scope="session")
def graded_course(tmp_path_factory, agreement_tiers):
    """A temporary nbgrader course with every notebook released, its round-trip set and the agreement
    submissions graded."""
    course = build_course(tmp_path_factory.mktemp("course"), assignment_names(),
                          extra=[t.submission for t in agreement_tiers])
    table = {
        nb: {s.student: {g: [r.score, r.max_score, r.message] for g, r in results(course, s).items()}
             for s in round_trip_submissions(nb)}
        for nb in assignment_names()
    }
    OUTPUT.mkdir(exist_ok=True)
    (OUTPUT / "round_trip.json").write_text(json.dumps(table, indent=1))
    return course
