"""`tapelab grade` on one mixed inbox, graded once in a single run (--jobs 2) and shared by every test:
one submission per status, the sandbox proofs and the known exploits, the outputs and nbgrader export.
"""
import copy
import csv
import html
import json
import re
import socket
import subprocess
import sys

import pytest

from grade_fixtures import (BASIC, TINY, by_student, cell_scores, fill, load_report, make_course,
                            outputs_text, partial, reference, tiny, write)
from course import round_trip_submissions
from tapelab.grading.handback.page import hidden_lines
from tapelab.grading.report import ENTRY_FIELDS
from tapelab.grading.grades.standings import CSV_FIELDS
from tapelab.paths import SOLUTIONS
from tapelab.release import nbgrader_env

pytestmark = pytest.mark.heavy(115)  # seconds, about: scheduled first (tests/conftest.py)

TIMEOUT = 40  # the burner's busy loop holds a core this long; 01_basic_tape's cells take a few seconds
SECRET = "tapelab-test-secret-value"

PROBES = '''
import os, socket, sysconfig
def _probe(label, action):
    try:
        action()
        print(f"PROBE {{label}}: OPEN")
    except BaseException as error:
        print(f"PROBE {{label}}: BLOCKED {{type(error).__name__}}")
_probe("gradebook", lambda: open({gradebook!r}, "rb").read(10))
_probe("source-notebook", lambda: open({source!r}).read(10))
_probe("solutions", lambda: open({solutions!r}).read(10))
_probe("other-student", lambda: open({other!r}).read(10))
_probe("inbox", lambda: open({inbox!r}).read(10))
_probe("sandbox-root", lambda: os.listdir("/var/tmp/tapelab-sandbox"))
_probe("site-packages", lambda: open(os.path.join(sysconfig.get_paths()["purelib"], "tapelab_evil.py"), "w").write("x"))
_probe("tcp-listener", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=3))
_probe("tcp-22", lambda: socket.create_connection(("127.0.0.1", 22), timeout=3))
_probe("memory-5GB", lambda: bytearray(5 * 1024**3))
_probe("grader-env", lambda: os.environ["TAPELAB_TEST_SECRET"])
print("PROCS", len([p for p in os.listdir("/proc") if p.isdigit()]))
'''

PATCHES = '''
import tapelab.checker.compare
ex1_1.check = lambda *a, **k: None
ex1_2.check = lambda *a, **k: None
type(ex1_3).check = lambda *a, **k: None
tapelab.checker.compare.mismatch = lambda *a, **k: None
get_ipython().showtraceback = lambda *a, **k: None
get_ipython().set_custom_exc((BaseException,), lambda *a, **k: [])
'''

ALWAYS_EQUAL = '''
class AlwaysEqual:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = object.__hash__

def cubic_slope(x):
    return AlwaysEqual()
'''


def _tamper(nb):
    """Change one locked test, delete another, duplicate a third."""
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    cells["ex1_1_test"].source = "pass\n"
    nb.cells.remove(cells["ex1_2_test"])
    twin = copy.deepcopy(cells["ex1_3_test"])
    twin["id"] = "copy-of-test"
    nb.cells.insert(nb.cells.index(cells["ex1_3_test"]) + 1, twin)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("grade")
    course = make_course(root)
    inbox = root / "inbox"
    ref = reference()
    answers, fails = partial()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.setblocking(False)
    probe = PROBES.format(gradebook=str(course / "gradebook.db"), source=str(course / "source" / BASIC / f"{BASIC}.ipynb"),
                          solutions=str(SOLUTIONS / f"{BASIC}.ipynb"),
                          other=str(course / "submitted" / "jo_ann" / BASIC / f"{BASIC}.ipynb"),
                          inbox=str(inbox / "jo_ann" / f"{BASIC}.ipynb"), port=listener.getsockname()[1])
    write(fill(course, BASIC, ref), inbox / "jo_ann" / f"{BASIC}.ipynb")
    write(fill(course, BASIC, {}), inbox / f"jo_ann_{BASIC}.ipynb", age=3600)  # an older second copy: superseded
    write(fill(course, TINY, tiny()), inbox / f"jo_ann_{TINY}.ipynb")
    write(fill(course, BASIC, {}), inbox / "blank" / f"{BASIC}.ipynb")
    write(fill(course, BASIC, answers), inbox / "submitted" / "pat" / BASIC / f"{BASIC}.ipynb")
    (inbox / f"carl_{BASIC}.ipynb").write_text("{not json")
    (inbox / f"dora_{BASIC}.ipynb").write_text("[1, 2, 3]")
    (inbox / f"eve_{BASIC}.ipynb").write_text(json.dumps({"nbformat": 3, "nbformat_minor": 0, "cells": [],
                                                          "metadata": {}, "worksheets": []}))
    (inbox / "zed_99_nothing.ipynb").write_text("{}")
    write(fill(course, BASIC, ref, edit=_tamper), inbox / "tess" / f"{BASIC}.ipynb")
    write(fill(course, BASIC, {**ref, "ex1_2_answer": "while True:\n    pass"}), inbox / "burner" / f"{BASIC}.ipynb")
    write(fill(course, BASIC, {**ref, "ex1_3_answer": "import os\nos._exit(1)"}), inbox / "dies" / f"{BASIC}.ipynb")
    write(fill(course, BASIC, {**ref, "ex1_4_answer": 'print("x" * 100_000_000)'}), inbox / "printer" / f"{BASIC}.ipynb")
    write(fill(course, BASIC, ref, extra=[probe]), inbox / "snoop" / f"{BASIC}.ipynb")
    wrong = next(s for s in round_trip_submissions(BASIC) if s.student == "mistakes1").answers  # all four wrong
    write(fill(course, BASIC, wrong, extra=[PATCHES]), inbox / "patcher" / f"{BASIC}.ipynb")
    write(fill(course, BASIC, {**ref, "ex1_1_answer": ALWAYS_EQUAL}), inbox / "eqhack" / f"{BASIC}.ipynb")
    env = {**nbgrader_env(), "TAPELAB_TEST_SECRET": SECRET}
    cmd = [sys.executable, "-m", "tapelab.cli", "grade", str(inbox), "--course", str(course), "--jobs", "2",
           "--timeout", str(TIMEOUT)]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    try:
        connection = listener.accept()
    except BlockingIOError:
        connection = None
    listener.close()
    assert result.returncode == 0, result.stderr[-3000:]
    return {"course": course, "inbox": inbox, "result": result, "report": load_report(course / "report.json"),
            "fails": fails, "connection": connection}


# -- one submission per status ------------------------------------------------------------------------
@pytest.mark.parametrize("student,status,score", [
    ("jo_ann", "graded", 9), ("blank", "graded", 0), ("tess", "tampered", 9), ("burner", "timed_out", 2),
    ("dies", "kernel_died", 5), ("printer", "output_limit", 7), ("snoop", "graded", 9),
])
def test_status_and_score(run, student, status, score):
    """Does each fixture end with its named status and exactly the points its honest answers earn?"""
    entry = by_student(run["report"], student)
    assert (entry["status"], entry["score"], entry["max_score"]) == (status, score, 9), entry


def test_partial_answers_lose_only_their_exercises(run):
    scores = cell_scores(run["course"], "pat")
    assert {g for g, s in scores.items() if s == 0} == run["fails"], scores
    assert by_student(run["report"], "pat")["source"] == f"submitted/pat/{BASIC}/{BASIC}.ipynb"


def test_flat_name_with_underscores_is_split_at_the_notebook(run):
    entry = by_student(run["report"], "jo_ann", TINY)
    assert (entry["status"], entry["score"], entry["source"]) == ("graded", 1, f"jo_ann_{TINY}.ipynb")


@pytest.mark.parametrize("student,words", [("carl", "not JSON"), ("dora", "not a notebook"), ("eve", "nbformat 3")])
def test_invalid_notebooks_are_named(run, student, words):
    entry = by_student(run["report"], student)
    assert entry["status"] == "invalid_notebook" and words in entry["reason"], entry


def test_unknown_notebook(run):
    entry = next(s for s in run["report"]["submissions"] if s["source"] == "zed_99_nothing.ipynb")
    assert entry["status"] == "unknown_notebook" and entry["student"] == "zed", entry
    assert BASIC in entry["reason"], entry


def test_an_older_copy_is_superseded_by_the_newer(run):
    """Of two files of one student and notebook, is the older `superseded`, naming the newer one that was graded?"""
    entry = next(s for s in run["report"]["submissions"] if s["source"] == f"jo_ann_{BASIC}.ipynb")
    assert entry["status"] == "superseded" and f"jo_ann/{BASIC}.ipynb" in entry["reason"], entry


def test_missing_notebook_scores_zero(run):
    entry = by_student(run["report"], "blank", TINY)
    assert (entry["status"], entry["score"], entry["max_score"]) == ("missing_notebook", 0, 1), entry
    assert not any(s["student"] == "zed" and s["status"] == "missing_notebook" for s in run["report"]["submissions"])


def test_tampering_is_restored_and_flagged(run):
    flags = " ".join(by_student(run["report"], "tess")["flags"])
    for words in ("changed locked cell ex1_1_test", "deleted cell ex1_2_test", "duplicated cell ex1_3_test"):
        assert words in flags, flags


# -- outputs -------------------------------------------------------------------------------------------
def test_report_schema_and_counts(run):
    report = run["report"]
    assert set(report) >= {"run_id", "protections", "counts", "submissions"}
    assert all(set(ENTRY_FIELDS) <= set(s) for s in report["submissions"])
    statuses = [s["status"] for s in report["submissions"]]
    assert report["counts"]["total"] == len(statuses)
    assert all(report["counts"][s] == statuses.count(s) for s in set(statuses))
    assert all(p["on"] for p in report["protections"].values()), report["protections"]
    assert report["timing"]["median_seconds"] > 0


def test_grades_csv_matches_the_report(run):
    """Does every scored entry of the report have its score in grades.csv, and grades.csv one row per
    gradebook student and notebook, as the report's `gradebook` lists them?"""
    rows = list(csv.DictReader((run["course"] / "grades.csv").open()))
    assert tuple(rows[0]) == CSV_FIELDS
    table = {(r["student"], r["notebook"]): float(r["score"]) for r in rows}
    scored = {(s["student"], s["notebook"]): s["score"] for s in run["report"]["submissions"] if s["score"] is not None}
    assert scored and {key: table[key] for key in scored} == scored
    assert table == {(g["student"], g["notebook"]): g["score"] for g in run["report"]["gradebook"]}


def test_log_has_one_line_per_submission(run):
    lines = [json.loads(l) for l in (run["course"] / "grading.log.jsonl").read_text().splitlines()]
    done = [l for l in lines if l["event"] == "submission" and l["run_id"] == run["report"]["run_id"]]
    assert {"run_id", "student", "notebook", "outcome", "duration"} <= set(done[0])
    assert len(done) == len(run["report"]["submissions"])  # missing_notebook rows are logged too


def test_summary_table_printed(run):
    out = run["result"].stdout
    assert "graded" in out and "median" in out and "p95" in out, out


@pytest.mark.parametrize("student", ["jo_ann", "blank", "pat", "tess", "dies"])
def test_feedback_never_shows_hidden_tests(run, student):
    """Is every hidden-test line absent from the feedback HTML, even where a test failed?"""
    import nbformat
    course = run["course"]
    source = nbformat.read(course / "source" / BASIC / f"{BASIC}.ipynb", as_version=4)
    secrets = hidden_lines(source)
    assert len(secrets) == 4
    page = (course / "feedback" / student / BASIC / f"{BASIC}.html").read_text()
    text = re.sub(r"\s+", "", html.unescape(re.sub(r"<[^>]+>", "", page)))
    for line in secrets + ["BEGIN HIDDEN TESTS"]:
        assert re.sub(r"\s+", "", line) not in text, f"{line!r} in {student}'s feedback"
    assert "ex1_1.check()" in text  # the visible test is still shown


def test_feedback_hides_tiny_hidden_test(run):
    page = (run["course"] / "feedback" / "jo_ann" / TINY / f"{TINY}.html").read_text()
    assert "hidden check" not in html.unescape(page)


def test_nbgrader_export_reads_the_gradebook(run, tmp_path):
    out = tmp_path / "export.csv"
    result = subprocess.run([sys.executable, "-m", "nbgrader", "export", "--to", str(out)], cwd=run["course"],
                            env=nbgrader_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {(r["student_id"], r["assignment"]): float(r["score"]) for r in csv.DictReader(out.open())}
    assert rows[("jo_ann", BASIC)] == 9 and rows[("printer", BASIC)] == 7 and rows[("jo_ann", TINY)] == 1


# -- the sandbox, proved by a submission that tries -------------------------------------------------
@pytest.mark.parametrize("probe", ["gradebook", "source-notebook", "solutions", "other-student", "inbox",
                                   "sandbox-root", "site-packages", "tcp-listener", "tcp-22", "memory-5GB",
                                   "grader-env"])
def test_sandbox_blocks(run, probe):
    text = outputs_text(run["course"], "snoop")
    assert f"PROBE {probe}: BLOCKED" in text, re.findall(r"PROBE .*", text)


def test_sandbox_hides_other_processes_and_nothing_connected(run):
    procs = int(re.search(r"PROCS (\d+)", outputs_text(run["course"], "snoop")).group(1))
    assert procs < 10
    assert run["connection"] is None
    import sysconfig
    assert not (sysconfig.get_paths()["purelib"] and
                __import__("pathlib").Path(sysconfig.get_paths()["purelib"], "tapelab_evil.py").exists())


def test_output_limit_stops_the_kernel_and_keeps_little(run):
    size = (run["course"] / "autograded" / "printer" / BASIC / f"{BASIC}.ipynb").stat().st_size
    assert size < 2_000_000


# -- exploits: stopped or flagged, never above the honest score ------------------------------------
def test_monkeypatched_checkers_and_showtraceback_score_nothing(run):
    entry = by_student(run["report"], "patcher")
    assert entry["score"] == 0, entry
    flags = " ".join(entry["flags"])
    for words in ("ex1_1.check", "tapelab.checker.compare.mismatch", "showtraceback", "set_custom_exc()"):
        assert words in flags, flags


def test_always_equal_object_scores_nothing_for_its_exercise(run):
    entry = by_student(run["report"], "eqhack")
    assert cell_scores(run["course"], "eqhack")["ex1_1_test"] == 0
    assert entry["score"] == 7 and any("__eq__" in f for f in entry["flags"]), entry


def test_flagged_submissions_need_manual_review(run):
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{run['course'] / 'gradebook.db'}") as gb:
        review = {s: any(g.needs_manual_grade for g in gb.find_submission_notebook(BASIC, BASIC, s).grades)
                  for s in ("patcher", "tess", "jo_ann")}
    assert review == {"patcher": True, "tess": True, "jo_ann": False}
