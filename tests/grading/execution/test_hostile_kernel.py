"""Kernels that attack the executor: one `tapelab grade` run of the TF-free fixture notebook, one
submission per attack (malformed, flooding, stalling, crashing kernels; hidden-test leaks; patches
around a check), graded together with an honest one. Each must end with a named status, the
others must still be graded, and nothing of the hidden tests may reach what the student receives.
"""
import html

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from grade_fixtures import TINY, TINY_HIDDEN, by_student, fill, load_report, make_course, run_grade, tiny, write
from hostile_set import MALFORMED
from tapelab.grading.execution import executor
from tapelab.grading.execution import worker
from tapelab.grading.execution.sandbox import Sandbox

pytestmark = pytest.mark.heavy(100)  # seconds, about: scheduled first (tests/conftest.py)

TIMEOUT = 45
SECRET_TEXT = "hidden check of answer()"  # the hidden test's message, part of its source

FLOOD = '''
k = get_ipython().kernel
for i in range(2_000_000):
    k.session.send(k.iopub_socket, "stream", {"name": "stdout", "text": "x"}, parent=k.get_parent())
'''

WIDGET_FLOOD = '''
k = get_ipython().kernel
for i in range(200_000):
    k.session.send(k.iopub_socket, "comm_msg", {"comm_id": "w", "data": {"state": {"value": "v" * 1000}}},
                   parent=k.get_parent())
'''

HUGE = '''
from IPython.display import display
display({"text/plain": "z" * 20_000_000}, raw=True)
'''

STALL = '''
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
time.sleep(10_000)
'''

SEGFAULT = '''
import sys
sys.setrecursionlimit(10**7)
nested = []
for _ in range(10**6):
    nested = [nested]
repr(nested)
'''

CLOSER = '''
k = get_ipython().kernel
k.shell_stream.socket.close()
'''

NEVER_IDLE = '''
get_ipython().kernel._publish_status = lambda *args, **kwargs: None
'''

PATCH_BEFORE = '''
import math
math.floor = lambda x: 0
'''

PATCH_DURING = '''
def answer():
    import time
    time.sleep = lambda seconds: None
    return 42
'''

SNEAKY = '''
class Sneaky:
    def __eq__(self, other):
        return True
    def __add__(self, other):
        return 0
    __hash__ = object.__hash__

def answer():
    return Sneaky()
'''

# Looks for the hidden tests once they reach the kernel and sends them out every way it can.
LEAKER = '''
import base64, linecache, threading, time
from IPython.display import display, update_display
display("placeholder", display_id="leak")
k = get_ipython().kernel
parent = k.get_parent()
shell = get_ipython()
def spy():
    end = time.time() + 20
    while time.time() < end:
        sources = ["".join(v[2]) for v in list(linecache.cache.values()) if len(v) > 2]
        sources += [str(c) for c in list(shell.user_ns.get("In", []))]
        found = [s for s in sources if "hidden " + "check" in s]
        if found:
            text = found[0]
            leak = "LEAK " + base64.b64encode(text.encode()).decode() + " " + text[::-1]
            update_display(leak, display_id="leak")
            print(leak)
            k.session.send(k.iopub_socket, "stream", {"name": "stdout", "text": leak}, parent=parent)
            return
        time.sleep(0.005)
threading.Thread(target=spy, daemon=True).start()
'''


def _after_test(code):
    """An edit that appends a student cell after the graded test cell."""
    return lambda nb: nb.cells.append(new_code_cell(code))


SUBMISSIONS = {  # student -> (answers, cells before the answer, edit)
    "honest": (tiny(), [], None),
    "sneaky": ({"ex9_1_answer": SNEAKY}, [], None),
    "leaker": (tiny(), [LEAKER], None),
    "dies_after": (tiny(), [], _after_test("import os\nos._exit(0)")),
    "sneaky_dies": ({"ex9_1_answer": SNEAKY}, [], _after_test("import os\nos._exit(0)")),
    "segfault": (tiny(), [SEGFAULT], None),
    "stall": (tiny(), [STALL], None),
    "flood": (tiny(), [FLOOD], None),
    "widgets": (tiny(), [WIDGET_FLOOD], None),
    "huge": (tiny(), [HUGE], None),
    "closer": (tiny(), [CLOSER], None),
    "malformed": (tiny(), [MALFORMED], None),
    "never_idle": (tiny(), [NEVER_IDLE], None),
    "patch_before": (tiny(), [PATCH_BEFORE], None),
    "patch_during": ({"ex9_1_answer": PATCH_DURING}, [], None),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    course = make_course(root)
    inbox = root / "inbox"
    for student, (answers, extra, edit) in SUBMISSIONS.items():
        write(fill(course, TINY, answers, extra=extra, edit=edit), inbox / student / f"{TINY}.ipynb")
    result = run_grade(inbox, course, "--jobs", "2", "--timeout", str(TIMEOUT))
    assert result.returncode == 0, result.stderr[-3000:]
    return {"course": course, "report": load_report(course / "report.json")}


def _autograded(run, student):
    return nbformat.read(run["course"] / "autograded" / student / TINY / f"{TINY}.ipynb", as_version=4)


def _test_cell(nb):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex9_1_test")


def _outputs_text(nb) -> str:
    return "\n".join(str(out) for cell in nb.cells for out in cell.get("outputs", []))


@pytest.mark.parametrize("student,status,score", [
    ("honest", "graded", 1), ("sneaky", "graded", 0), ("dies_after", "kernel_died", 1),
    ("sneaky_dies", "kernel_died", 0), ("segfault", "kernel_died", 0), ("stall", "timed_out", 0),
    ("flood", "output_limit", 0), ("widgets", "output_limit", 0), ("huge", "output_limit", 0),
    ("closer", "output_limit", 0), ("malformed", "graded", 1), ("never_idle", "graded", 1),
    ("patch_before", "graded", 1), ("patch_during", "graded", 0),
])
def test_hostile_kernel_gets_a_named_status(run, student, status, score):
    """Does each attack end with its named status and no more points than its honest answers earn?"""
    entry = by_student(run["report"], student, TINY)
    assert (entry["status"], entry["score"], entry["max_score"]) == (status, score, 1), entry


def test_every_submission_is_reported(run):
    """Is every submission in the report, none of them an infrastructure error?"""
    entries = {s["student"]: s["status"] for s in run["report"]["submissions"] if s["notebook"] == TINY}
    assert set(entries) == set(SUBMISSIONS), entries
    assert "infra_error" not in entries.values(), entries


def test_hidden_failure_shows_a_fixed_text(run):
    """Does a wrong answer that passes the visible test get only the fixed hidden-test message?"""
    errors = [o for o in _test_cell(_autograded(run, "sneaky")).outputs if o.output_type == "error"]
    assert [(o.ename, o.evalue) for o in errors] == [executor.HIDDEN_FAILED], errors


@pytest.mark.parametrize("student", sorted(SUBMISSIONS))
def test_no_hidden_source_in_outputs_or_feedback(run, student):
    """Is the hidden test's text absent (plain, reversed, or behind the leaker's marker) from every output
    and from the feedback, whatever the student's code does after the check?"""
    outputs = _outputs_text(_autograded(run, student))
    assert "LEAK " not in outputs  # the source of the leaker's cell is in the feedback, not in any output
    feedback = run["course"] / "feedback" / student / TINY / f"{TINY}.html"
    for text in [outputs] + ([html.unescape(feedback.read_text())] if feedback.exists() else []):
        assert SECRET_TEXT not in text, student
        assert SECRET_TEXT[::-1] not in text, student


def test_autograded_notebook_keeps_the_hidden_tests_in_its_source(run):
    """Is the executed test cell's source still the instructor's, hidden tests included?"""
    assert TINY_HIDDEN in _test_cell(_autograded(run, "honest")).source


def test_dying_after_the_visible_check_does_not_skip_the_hidden_one(run):
    """Do the hidden tests of a check passed before the kernel exited still run (in a replay), failing
    a wrong answer with the fixed text?"""
    errors = [o for o in _test_cell(_autograded(run, "sneaky_dies")).outputs if o.output_type == "error"]
    assert [(o.ename, o.evalue) for o in errors] == [executor.HIDDEN_FAILED], errors
    assert any("ran in a replay" in f for f in by_student(run["report"], "dies_after", TINY)["flags"])


def test_malformed_messages_are_dropped_and_flagged(run):
    """Are malformed kernel messages dropped (the cell's own output kept) and the submission flagged?"""
    assert any("malformed message" in f for f in by_student(run["report"], "malformed", TINY)["flags"])
    assert "still here" in _outputs_text(_autograded(run, "malformed"))
    assert "for another cell" not in _outputs_text(_autograded(run, "malformed"))


@pytest.mark.parametrize("student", ["flood", "widgets", "huge"])
def test_output_floods_leave_a_small_notebook(run, student):
    """Does a flood of messages, of widget state or one huge message leave little in autograded/?"""
    path = run["course"] / "autograded" / student / TINY / f"{TINY}.ipynb"
    assert path.stat().st_size < 2_000_000


def test_a_flood_of_tiny_messages_stops_at_the_message_bound(run):
    """Is a flood of messages too small to reach the byte limit stopped by the message bound?"""
    flags = by_student(run["report"], "flood", TINY)["flags"]
    assert any(f"more than {executor.MESSAGE_LIMIT} messages" in f for f in flags), flags


@pytest.mark.parametrize("student,limit,other", [("flood", f"more than {executor.MESSAGE_LIMIT} messages", "bytes"),
                                                   ("widgets", "bytes", "messages")])
def test_the_output_limit_reason_names_the_limit_that_was_hit(run, student, limit, other):
    """Does the reason of an output_limit say which limit stopped the notebook: a count of messages for a
    flood of tiny ones, bytes for a flood of large ones?"""
    reason = by_student(run["report"], student, TINY)["reason"]
    assert limit in reason and other not in reason, reason


def test_patch_during_a_check_voids_it(run):
    """Is a check during which the student's code patched a module scored 0 and flagged?"""
    errors = [o for o in _test_cell(_autograded(run, "patch_during")).outputs if o.output_type == "error"]
    assert [o.ename for o in errors] == ["CheckNotTrusted"] and "time.sleep" in errors[0].evalue, errors
    assert any("was void" in f for f in by_student(run["report"], "patch_during", TINY)["flags"])


def test_patch_before_a_check_is_undone_and_flagged(run):
    """Is a patch made before the check undone (the honest answer scores) and flagged?"""
    flags = by_student(run["report"], "patch_before", TINY)["flags"]
    assert any(f.startswith("before the check of cell ex9_1_test") and "math.floor" in f for f in flags), flags


def test_worker_turns_an_unexpected_failure_into_infra_error():
    """Does the worker return infra_error naming the exception rather than raise?"""
    result = worker.execute("not even a notebook", worker.Settings(10, 10, 100, Sandbox(isolate=False, rlimits=False)))
    assert result["nb"] is None
    assert result["facts"]["infra_error"].startswith("the worker failed: NotJSONError"), result["facts"]
