"""The judge reads records a student's kernel wrote: no record can run code in the judge, and none passes a check."""
from __future__ import annotations

import inspect
import json

import pytest

from tapelab.checker import replay
from tapelab.checker.messages import Incorrect
from tapelab.exercises.basic_tape import CubicSlope

SOURCE = "import os\n\ndef cubic_slope(x):\n    os.system('touch /tmp/pwned-by-a-record')\n    return 3.0\n"


def _record(answer: dict, runs: list | None = None) -> str:
    return json.dumps({"answer": answer, "runs": runs or [], "failure": None})


def test_a_stand_in_reads_as_the_students_source_and_never_runs_it(tmp_path):
    stand_in = replay.stand_in({"file": "/cell/1.py", "text": SOURCE, "name": "cubic_slope", "line": 3})
    assert inspect.getsource(stand_in) == SOURCE.split("\n\n", 1)[1]
    with pytest.raises(replay.Unreplayable):
        stand_in(2.0)


@pytest.mark.parametrize("answer", [
    {"file": "/cell/1.py", "text": SOURCE, "name": "f(*a):\n    __import__('os').system('x')\ndef g", "line": 3},
    {"file": "/cell/1.py", "text": SOURCE, "name": "cubic_slope", "line": 10**12},
    {"file": "/cell/\0.py", "text": SOURCE, "name": "cubic_slope", "line": 3},
    {"file": "/cell/1.py", "text": SOURCE, "name": "lambda", "line": 3},
])
def test_a_forged_answer_record_gives_a_stand_in_that_refuses_to_run(answer):
    stand_in = replay.stand_in(answer)
    with pytest.raises(replay.Unreplayable):
        stand_in(2.0)


@pytest.mark.parametrize("text", [
    "not json", json.dumps([1, 2]), _record({"missing": False}),
    _record({"file": "/c.py", "text": SOURCE, "name": "cubic_slope", "line": 3}, [{"value": {"nonsense": 1}}]),
    _record({"file": "/c.py", "text": SOURCE, "name": "cubic_slope", "line": 3},
            [{"value": {"numpy": {"dtype": "|O", "shape": [1], "data": ""}}}]),
    _record({"file": "/c.py", "text": SOURCE, "name": "cubic_slope", "line": 3}, [{"value": 29.0}]),  # one run of four
    None,
])
def test_a_record_that_does_not_fit_the_check_fails_it(text):
    outcome = replay.judge(CubicSlope(), {"cases": [-1.5, 0.0, 3.25]}, text)
    assert isinstance(outcome, Incorrect), outcome
    assert outcome.exercise == "1.1"
