"""A graded class with known mistakes, written straight into a course folder (no kernel runs).

The course is `grade_fixtures.make_course` (01_basic_tape and 09_fixture released). Each student's
autograded notebook is the released one with answers filled in and, in every test cell, the outputs
a check would leave: tapelab's own feedback bundle (made by `tapelab.checker.messages.Message`), a plain
error, or nothing. The gradebook gets the matching cell scores through nbgrader's API, the state
file a `graded` status and the log a duration for each submission, so every number of the insight
and of the exports follows from the table below.
"""
from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path

import nbformat
from nbformat.v4 import new_output

try:
    from grade_fixtures import BASIC, TINY, make_course, released
except ImportError:  # imported from tests/browser alone, where tests/grading is not on sys.path
    from grading.grade_fixtures import BASIC, TINY, make_course, released
from tapelab.checker.messages import Message
from tapelab.grading.records import LOG_FILE, STATE_FILE

# What each student's test cell shows: "ok" passes; ("cause", code) fails with that cause;
# "hidden" passes visibly and fails on the hidden inputs; "stub" leaves the answer untouched;
# "error" ends in a NameError; ("forged", code) passes in the gradebook but prints a fake failure bundle.
OK, HIDDEN, STUB, ERROR = "ok", "hidden", "stub", "error"
CLASS = {
    "ana": {"ex1_1_test": OK, "ex1_2_test": OK, "ex1_3_test": OK, "ex1_4_test": OK, "ex9_1_test": OK},
    "ben": {"ex1_1_test": ("cause", "outside-tape"), "ex1_2_test": ("cause", "swapped-arguments"),
            "ex1_3_test": OK, "ex1_4_test": OK, "ex9_1_test": OK},
    "cai": {"ex1_1_test": ("cause", "outside-tape"), "ex1_2_test": STUB, "ex1_3_test": HIDDEN,
            "ex1_4_test": ERROR, "ex9_1_test": ("cause", "not-connected")},
    "dee": {"ex1_1_test": ("forged", "not-watched"), "ex1_2_test": ("forged-unknown", "no-such-cause"),
            "ex1_3_test": OK, "ex1_4_test": OK},
    "eve": {"ex9_1_test": STUB},
}
NAMES = {"ana": ("Ana", "Lima"), "ben": ("Ben", "Okafor"), "cai": ("Cai", "Wong"), "dee": ("Dee", "Marsh"),
         "eve": ("Eve", "Stone")}
SECONDS = {"ana": 4.0, "ben": 6.0, "cai": 8.0, "dee": 10.0, "eve": 1.0}  # per notebook graded
# Gradescope's results.json, every field its autograder specification lists and no other
# (https://gradescope-autograders.readthedocs.io/en/latest/specs/): a top-level score or tests.
_WHEN = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
_FORMAT = {"enum": ["text", "html", "simple_format", "md", "ansi"]}
GRADESCOPE_SCHEMA = {
    "type": "object", "additionalProperties": False, "anyOf": [{"required": ["score"]}, {"required": ["tests"]}],
    "properties": {
        "score": {"type": "number"}, "execution_time": {"type": "number"}, "output": {"type": "string"},
        "output_format": _FORMAT, "test_output_format": _FORMAT, "test_name_format": _FORMAT, "visibility": _WHEN,
        "stdout_visibility": _WHEN, "extra_data": {"type": "object"}, "leaderboard": {"type": "array"},
        "tests": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "properties": {"score": {"type": "number"}, "max_score": {"type": "number"},
                           "status": {"enum": ["passed", "failed"]}, "name": {"type": "string"}, "name_format": _FORMAT,
                           "number": {"type": "string"}, "output": {"type": "string"}, "output_format": _FORMAT,
                           "tags": {"type": "array", "items": {"type": "string"}}, "visibility": _WHEN,
                           "extra_data": {"type": "object"}}}},
    },
}
HOSTILE = "<script>window.__pwned_insight=1</script><img src=x onerror=alert(1)>"  # in dee's answers


def _answer(student: str, shows) -> str:
    if shows == STUB:
        return ""
    if shows == OK or (isinstance(shows, tuple) and shows[0].startswith("forged")):
        return f"# {NAMES[student][0]} {NAMES[student][1]} wrote this\nresult = 'right'\n"
    return f"# by {student}\nresult = 'wrong {shows}'  # {NAMES[student][1]}\n"


def _outputs(gid: str, shows) -> list:
    exercise = gid[2:-5].replace("_", ".")
    if shows in (OK, HIDDEN):
        return [new_output("display_data", data=Message("correct", f"Exercise {exercise}: well done.")
                           ._repr_mimebundle_())]
    if shows == ERROR:
        return [new_output("error", ename="NameError", evalue="name 'tf' is not defined", traceback=[])]
    if shows == STUB:
        box = Message("not-attempted", f"Exercise {exercise}: replace the stub.", exercise=exercise)
        return [new_output("display_data", data=box._repr_mimebundle_()),
                new_output("error", ename="NotAttempted", evalue="not attempted", traceback=[])]
    kind, code = shows
    if kind == "forged-unknown":  # no catalogue could produce this: a bundle built by hand
        data = {"text/plain": "Incorrect", "application/vnd.tapelab.feedback+json": {
            "outcome": "incorrect", "exercise": "9.9", "cause": code, "message": HOSTILE}}
        return [new_output("display_data", data=data)]
    box = Message("incorrect", f"Exercise {exercise}: `y` is wrong ({code}). {HOSTILE}", exercise=exercise,
                  cause=code)
    outputs = [new_output("display_data", data=box._repr_mimebundle_())]
    return outputs if kind == "forged" else outputs + [new_output("error", ename="Incorrect", evalue="wrong",
                                                                  traceback=[])]


def _autograded(course: Path, notebook: str, student: str, plan: dict) -> nbformat.NotebookNode:
    nb = copy.deepcopy(released(course, notebook))
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        test = gid.rsplit("_", 1)[0] + "_test"
        if gid.endswith("_answer") and test in plan and plan[test] != STUB:
            cell.source = _answer(student, plan[test]) + (HOSTILE if student == "dee" else "")
        if gid in plan:
            cell.outputs = _outputs(gid, plan[gid])
    return nb


def build_class(root: Path) -> Path:
    """A course folder holding the graded class of CLASS; returns its path."""
    from nbgrader.api import Gradebook

    course = make_course(root)
    state, log = {}, []
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student, plan in CLASS.items():
            first, last = NAMES[student]
            gb.update_or_create_student(student, first_name=first, last_name=last, lms_user_id=f"9{len(student)}{ord(student[0])}")
            for notebook in (BASIC, TINY):
                mine = {gid: shows for gid, shows in plan.items() if gid.startswith("ex1" if notebook == BASIC else "ex9")}
                if not mine:
                    continue
                sub = gb.add_submission(notebook, student, timestamp=datetime(2026, 10, 1, 12, 0))
                for grade in gb.find_submission_notebook(notebook, notebook, student).grades:
                    shows = mine.get(grade.name)
                    passed = shows == OK or (isinstance(shows, tuple) and shows[0] == "forged")
                    grade.auto_score = grade.max_score if passed else 0.0
                    grade.needs_manual_grade = False
                gb.db.commit()
                path = course / "autograded" / student / notebook / f"{notebook}.ipynb"
                path.parent.mkdir(parents=True, exist_ok=True)
                nbformat.write(_autograded(course, notebook, student, mine), path)
                key = f"{student}/{notebook}/{notebook}"
                state[key] = {"student": student, "assignment": notebook, "notebook": notebook, "status": "graded",
                              "score": sub.score, "max_score": sub.max_score, "flags": [], "reason": ""}
                log.append({"event": "submission", "student": student, "notebook": notebook, "outcome": "graded",
                            "duration": SECONDS[student]})
    (course / STATE_FILE).write_text(json.dumps({"version": 1, "submissions": state, "inputs": {}}))
    (course / LOG_FILE).write_text("".join(json.dumps(r) + "\n" for r in log) + "not json\n")
    return course
