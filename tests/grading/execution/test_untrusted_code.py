"""Classes 1 and 2 of untrusted code, proved on one hostile inbox of 01_basic_tape: student code
cannot change a verdict, and no byte of hidden-test source reaches the student. The inbox is graded
twice: by the local pool with the SQLite gradebook, and by a Dask cluster writing a PostgreSQL
gradebook (class 11: the same hostile set holds on every path).
"""
from __future__ import annotations

import base64
import binascii
import csv
import html
import re
import zlib
from html.parser import HTMLParser

import nbformat
import pytest

from grade_fixtures import BASIC, TINY, by_student, load_report, make_course, run_grade
from hostile_set import DURING_CHECK, HIDDEN_MARK, OTHER_CLASSES, PATCHES, expected_flags, write_hostile_inbox
from services import DaskCluster, PostgresServer
from tapelab.release import prepare_course

pytestmark = pytest.mark.heavy(260)  # seconds, about: scheduled first (tests/conftest.py)


@pytest.fixture(scope="module", params=["local", "dask+postgresql"])
def run(request, tmp_path_factory):
    root = tmp_path_factory.mktemp("untrusted")
    template = make_course(root)
    inbox = root / "inbox"
    write_hostile_inbox(template, inbox)
    if request.param == "local":
        result = run_grade(inbox, template, "--jobs", "2", "--timeout", "120")
        assert result.returncode == 0, result.stderr[-3000:]
        yield {"course": template, "db": f"sqlite:///{template / 'gradebook.db'}",
               "report": load_report(template / "report.json")}
        return
    server, cluster = PostgresServer(), DaskCluster(root / "dask-logs")
    try:
        url = server.create_database("hostile")
        course = root / "cluster-course"
        prepare_course(course, [BASIC, TINY], solutions=root / "solutions", db_url=url)
        result = run_grade(inbox, course, "--scheduler", cluster.address, "--timeout", "120")
        assert result.returncode == 0, result.stderr[-3000:]
        yield {"course": course, "db": url, "report": load_report(course / "report.json")}
    finally:
        cluster.stop()
        server.stop()


def cell_scores(run, student: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(run["db"]) as gb:
        return {g.name: g.score for g in gb.find_submission_notebook(BASIC, BASIC, student).grades}


@pytest.mark.parametrize("student", sorted({**PATCHES, **DURING_CHECK}))
def test_a_patch_never_earns_points_and_is_flagged(run, student):
    """Whatever a student patches (numpy, tensorflow, builtins, operator, math, tapelab, IPython,
    ipykernel, sys.modules, during the check or from a thread), do four wrong answers score 0, flagged?"""
    entry = by_student(run["report"], student)
    assert entry["score"] == 0, entry
    flags = " ".join(entry["flags"])
    assert expected_flags()[student] in flags, flags


def test_an_honest_neighbour_is_graded_in_full_and_not_flagged(run):
    """Does the guard leave an honest submission alone (full marks, no flag) in the same run?"""
    entry = by_student(run["report"], "honest")
    assert (entry["status"], entry["score"], entry["flags"]) == ("graded", 9, []), entry


def _received(course, student: str) -> str:
    """Everything the student receives: the feedback page and the outputs it is made from."""
    nb = nbformat.read(course / "autograded" / student / BASIC / f"{BASIC}.ipynb", as_version=4)
    parts = [str(output) for cell in nb.cells for output in cell.get("outputs", [])]
    parts.append(html.unescape((course / "feedback" / student / BASIC / f"{BASIC}.html").read_text()))
    return "\n".join(parts)


def _decodings(text: str) -> list[str]:
    """The text, reversed, and every base64 token in it decoded (raw or zlib-compressed)."""
    found = [text, text[::-1]]
    for token in re.findall(r"[A-Za-z0-9+/=]{16,}", text):
        try:
            raw = base64.b64decode(token + "=" * (-len(token) % 4))
        except (binascii.Error, ValueError):
            continue
        for data in (raw, _inflate(raw)):
            found.append(data.decode("utf-8", "replace"))
    return found


def _inflate(raw: bytes) -> bytes:
    try:
        return zlib.decompress(raw)
    except zlib.error:
        return b""


@pytest.mark.parametrize("student", ["leaker", "historian"])
def test_hidden_source_never_reaches_the_student(run, student):
    """Does no form of the hidden tests (plain, reversed, base64, compressed) appear in what the
    student receives, though their code read In/_ih/Out, history, frames, linecache and files?"""
    for text in _decodings(_received(run["course"], student)):
        assert HIDDEN_MARK not in text


def test_the_leak_attempt_saw_the_hidden_tests_and_lost_their_points(run):
    """Is the leak test meaningful: did the answer find the hidden source while the hidden tests ran
    (it then fails), after its visible check had said Correct?"""
    scores = cell_scores(run, "leaker")
    assert scores["ex1_1_test"] == 0 and scores["ex1_2_test"] > 0, scores
    from tapelab.exercises.basic_tape import ex1_1

    assert f"Exercise 1.1: {ex1_1.praise}" in _received(run["course"], "leaker")


@pytest.mark.parametrize("student", sorted(OTHER_CLASSES))
def test_other_classes_end_with_their_status_and_honest_points(run, student):
    """Do tampered metadata, a stored 11 MB attachment, malformed kernel messages, script outputs and
    a formula as student id each end with their status and the honest answer's point?"""
    entry = by_student(run["report"], student, TINY)
    assert (entry["status"], entry["score"], entry["max_score"]) == (OTHER_CLASSES[student][3], 1, 1), entry


def test_a_symlinked_submission_is_not_followed(run):
    """Is a symbolic link in the inbox reported as unsafe_path rather than graded?"""
    entry = next(s for s in run["report"]["submissions"] if s["source"].startswith("linked/"))
    assert entry["status"] == "unsafe_path", entry


def test_script_outputs_cannot_run_in_the_feedback(run):
    """Does the feedback of a notebook that displayed script, handlers and JavaScript carry none?"""
    page = (run["course"] / "feedback" / "t_html" / TINY / f"{TINY}.html").read_text()
    elements = _Elements()
    elements.feed(page)
    assert "script" not in elements.tags and not [a for a in elements.attributes if a.startswith("on")]


class _Elements(HTMLParser):
    """The tags and attribute names of a page, as a browser would parse them."""

    def __init__(self):
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)


def test_a_formula_student_id_is_neutralised_in_grades_csv(run):
    """Is a student id that starts with `=` written to grades.csv so no spreadsheet evaluates it?"""
    rows = list(csv.reader((run["course"] / "grades.csv").open()))
    cells = [cell for row in rows for cell in row]
    assert "'=HYPERLINK(1)" in cells and "=HYPERLINK(1)" not in cells
