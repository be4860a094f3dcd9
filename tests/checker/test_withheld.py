"""A graded check in the kernel never holds a hidden case's stored expected values (tapelab.checker.replay.Withheld):
it records every case's call for the grader's judge, which holds them, and the judge decides."""
from __future__ import annotations

import pytest

from tapelab.checker import expected as expected_module
from tapelab.checker import replay
from tapelab.checker.exercise import Exercise
from tapelab.checker.expected import Expectations, MissingExpectation
from tapelab.checker.messages import Incorrect


class Doubler(Exercise):
    """A check whose expected values come only from data (no references installed in a grading kernel)."""

    number = "9.8"
    answer = "double"

    def expectations(self, case):
        return {"twice": lambda refs: refs.never_called(case)}

    def check_case(self, fn, case, facts):
        got = self.call(fn, case, shown=f"{case}").value
        if got != self.expect(case)["twice"]:
            raise Incorrect(f"double({case}) returned {got}.")


def _double(x):
    return 2 * x


def _wrong_after_one(x):
    return 2 * x if x == 1 else 0


@pytest.fixture
def no_references(monkeypatch):
    monkeypatch.setattr(expected_module, "references", lambda: None)
    replay.taken()
    yield
    replay.taken()


def test_outside_grading_a_missing_value_is_the_students_message(no_references, monkeypatch):
    monkeypatch.delenv(replay.ENV, raising=False)
    with pytest.raises(MissingExpectation):
        Expectations("9.8", "3", {"twice": lambda refs: 6})["twice"]


def test_a_grading_kernel_records_every_cases_call_and_the_judge_decides_with_the_values(no_references, monkeypatch):
    cases, given = [1, 2, 3], {repr(c): {"twice": 2 * c} for c in (1, 2, 3)}
    for answer, passes in ((_double, True), (_wrong_after_one, False)):
        monkeypatch.setenv(replay.ENV, "1")
        Doubler().outcome(answer, cases=cases)  # the kernel: no value, so no verdict, and no stop
        record = replay.taken()[0]
        assert [run["value"] for run in replay.Record.from_json(record).runs] == [answer(c) for c in cases]
        monkeypatch.delenv(replay.ENV)
        judged = replay.judge(Doubler(), {"cases": cases, "expected": given}, record)
        assert isinstance(judged, Incorrect) is not passes, judged
        if not passes:
            assert str(judged) == "double(2) returned 0.", judged

