"""Checks judged outside the student's kernel (tapelab.grading.execution.judge): the worker runs 01_basic_tape's
solution notebook, whose checks are all replayable, and the judge's outcome is each test cell's."""
from __future__ import annotations

import json

import nbformat
import pytest

from tapelab.grading.execution import worker
from tapelab.grading.execution.judge import Judge
from tapelab.grading.execution.sandbox import Sandbox
from tapelab.paths import SOLUTIONS

pytestmark = pytest.mark.heavy(60)  # seconds, about: scheduled first (tests/conftest.py)

BASIC = "01_basic_tape"
IMPORTS = ("from tapelab.exercises.basic_tape import *",)
RETURNS_Y = ("import tensorflow as tf\n\ndef cubic_slope(x):\n    x = tf.Variable(x)\n"
             "    with tf.GradientTape() as tape:\n        y = 3 * x**3 - 2 * x**2 + x\n    return y\n")


def _solution(answer_1_1: str | None = None, extra: str | None = None) -> str:
    nb = nbformat.read(SOLUTIONS / f"{BASIC}.ipynb", as_version=4)
    for cell in nb.cells:
        if answer_1_1 is not None and cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "ex1_1_answer":
            cell.source = answer_1_1
    if extra is not None:
        setup = next(i for i, c in enumerate(nb.cells) if c.get("id") == "setup")
        nb.cells.insert(setup + 1, nbformat.v4.new_code_cell(extra))
    return nbformat.writes(nb)


ON_SYS = "import sys\nprint('snapshot on sys:', hasattr(sys, '_tapelab_guard_snapshot'))"


def _run(nb_json: str, kernels: str = "warm") -> tuple[dict, nbformat.NotebookNode]:
    settings = worker.Settings(120, 600, 10**7, Sandbox(isolate=True, rlimits=True, kernels=kernels),
                               restore_imports=IMPORTS, packages=frozenset({"tapelab", "tensorflow", "numpy"}))
    result = worker.execute(nb_json, settings)
    assert result["nb"] is not None, result["facts"]
    return result["facts"], nbformat.reads(result["nb"], as_version=4)


def _test_cell(nb, grade_id: str):
    return next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)


def _feedback(cell) -> list[dict]:
    return [o["data"]["application/vnd.tapelab.feedback+json"] for o in cell.outputs
            if o.get("output_type") == "display_data" and "application/vnd.tapelab.feedback+json" in o.get("data", {})]


@pytest.fixture(scope="module")
def graded():
    return {"reference": _run(_solution(extra=ON_SYS)), "returns-y": _run(_solution(RETURNS_Y)),
            "forged": _run(_solution(extra="import tapelab.checker.replay as r\nr.taken = lambda: "
                                           "['{\"answer\": {}, \"runs\": [{\"value\": {\"x\": 1}}]}']")),
            "cold": _run(_solution(RETURNS_Y), kernels="cold")}


def test_a_warm_kernels_checks_are_judged_in_a_process_the_zygote_forks_and_a_reference_passes(graded):
    facts, nb = graded["reference"]
    assert facts["judged_by"] == "zygote", facts
    assert facts["hidden_failed"] == 0 and facts["flags"] == [], facts
    for number in range(1, 5):
        cell = _test_cell(nb, f"ex1_{number}_test")
        assert [o["output_type"] for o in cell.outputs] == ["display_data"], cell.outputs
        assert "Correct: Exercise 1." in cell.outputs[0]["data"]["text/plain"]


def test_the_guard_took_the_zygotes_snapshot_off_sys_before_the_first_cell(graded):
    """The snapshot a warm kernel's zygote hands its guard (integrity/in_kernel.py) is gone before notebook code runs."""
    facts, nb = graded["reference"]
    printed = [o.get("text", "") for c in nb.cells if c.cell_type == "code" and c.source == ON_SYS for o in c.outputs]
    assert facts["kernel"] == "warm" and printed == ["snapshot on sys: False\n"], (facts["kernel"], printed)


def test_a_wrong_answer_gets_the_judges_named_failure_and_an_error_output(graded):
    for kind in ("returns-y", "cold"):
        facts, nb = graded[kind]
        assert facts["judged_by"] == ("worker" if kind == "cold" else "zygote"), facts
        cell = _test_cell(nb, "ex1_1_test")
        assert [f["cause"] for f in _feedback(cell)] == ["returned-value"], cell.outputs
        assert cell.outputs[-1]["output_type"] == "error" and cell.outputs[-1]["ename"] == "Incorrect"
        assert facts["replies"][str(nb.cells.index(cell))] == "error"


def test_a_forged_record_fails_the_check_it_claims_to_record_and_is_flagged(graded):
    """A notebook that replaces what the kernel reports cannot pass a check, even with right answers."""
    facts, nb = graded["forged"]
    cell = _test_cell(nb, "ex1_1_test")
    assert cell.outputs[-1]["output_type"] == "error", cell.outputs
    assert "could not replay" in json.dumps(_feedback(cell)), cell.outputs
    assert any("not in the grader's judge" in flag for flag in facts["flags"]), facts["flags"]


def test_the_hidden_part_reaches_the_kernel_without_its_expected_values():
    judge = Judge(list(IMPORTS))
    source = "ex1_1.check(cases=[-1.5, 0.0], expected={'-1.5': {'slope': 1.0}}, seed=3)"
    plan = judge.plan(source)
    assert plan is not None and plan.code() == "ex1_1.check(cases=[-1.5, 0.0], seed=3)", plan
    assert judge.where == "worker"


@pytest.mark.parametrize("source", ["ex1_1.check()\nprint(1)", "ex1_1.check(cases=CASES)", "ex1_1.check(3.0)",
                                    "ex9_9.check()", "import os"])
def test_a_part_the_judge_cannot_read_runs_as_before(source):
    assert Judge(list(IMPORTS)).plan(source) is None


def test_a_judge_that_ends_while_deciding_fails_that_check_and_is_started_anew_once(monkeypatch):
    """A record the judge's process does not survive costs the check (JudgeFailed), never the worker."""
    import socket

    from tapelab.grading.execution import judge as judge_module

    monkeypatch.setattr(judge_module, "_REMOTE", {})  # not the connection an earlier execution in this process made
    started = []

    def connect() -> socket.socket:
        ours, theirs = socket.socketpair()
        theirs.close()  # a judge that ends as soon as it is asked
        started.append(ours)
        return ours
    judge = Judge(list(IMPORTS), connect)
    verdict = judge.verdict(Judge(list(IMPORTS)).plan("ex1_1.check()"), ["{}"])
    assert not verdict.passed and [o.ename for o in verdict.outputs] == ["JudgeFailed"], verdict
    assert len(started) == 2 and judge.where == "zygote"
