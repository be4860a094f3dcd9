"""One graded course shared by the round-trip tests (`--dist loadfile` keeps them on one worker)."""
import json

import pytest

from course import build_course, results, round_trip_submissions
from tapelab.paths import REPO, assignment_names

OUTPUT = REPO / "test-output"


@pytest.fixture(scope="session")
def graded_course(tmp_path_factory):
    """A temporary nbgrader course with every notebook released and its round-trip set graded."""
    course = build_course(tmp_path_factory.mktemp("course"), assignment_names())
    table = {
        nb: {s.student: {g: [r.score, r.max_score, r.message] for g, r in results(course, s).items()}
             for s in round_trip_submissions(nb)}
        for nb in assignment_names()
    }
    OUTPUT.mkdir(exist_ok=True)
    (OUTPUT / "round_trip.json").write_text(json.dumps(table, indent=1))
    return course
