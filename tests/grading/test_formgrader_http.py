"""formgrader through its real HTTP server, as an instructor uses it after `tapelab grade` (issue 14,
items 4 and 5): a manual score reaches the gradebook and `nbgrader export`; the "Generate Feedback"
button and `nbgrader generate_feedback` write tapelab's page, with that score and no hidden test.

One course, two 09_fixture submissions graded by `tapelab grade` (ann right, ben wrong), one
server for the module. TestUsableAsItIs states what formgrader should show once the pipeline
releases assignments, keeps submission times and takes names from a roster.
"""
from __future__ import annotations

import csv
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbconvert import HTMLExporter

from formgrader import Formgrader, formgrader
from grade_fixtures import TINY, TINY_HIDDEN, cell_scores, fill, make_course, run_grade, tiny, write
from tapelab.grading.handback import PAGE
from tapelab.release import nbgrader_env

STUDENTS = ("ann", "ben")
MANUAL = 0.5  # ben's manual score: neither his autograded 0 nor the maximum
ROSTER = {"ann": ("Ann", "Arbor"), "ben": ("Ben", "Nevis")}


def _nbgrader(course: Path, *args: str) -> None:
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=nbgrader_env(),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def _feedback(course: Path, student: str) -> str:
    return (course / "feedback" / student / TINY / f"{TINY}.html").read_text()


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _shows(page: str, line: str) -> bool:
    """Does a reader of the page see `line` (tags dropped, entities decoded, whitespace ignored)?"""
    return _squash(line) in _squash(BeautifulSoup(page, "html.parser").get_text())


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A course folder with ann's right and ben's wrong 09_fixture graded by `tapelab grade`."""
    root = tmp_path_factory.mktemp("formgrader")
    course = make_course(root)
    inbox = root / "inbox"
    write(fill(course, TINY, tiny()), inbox / f"ann_{TINY}.ipynb")
    write(fill(course, TINY, tiny("41")), inbox / f"ben_{TINY}.ipynb")
    result = run_grade(inbox, course)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return course


@pytest.fixture(scope="module")
def server(course) -> Iterator[Formgrader]:
    with formgrader(course) as running:
        yield running


@pytest.fixture(scope="module")
def manual(server) -> dict:
    """ben's test cell scored MANUAL through formgrader's API, as its score box does; the server's answer."""
    notebooks = server.api("GET", f"/formgrader/api/submitted_notebooks/{TINY}/{TINY}")
    ben = next(notebook for notebook in notebooks if notebook["student"] == "ben")
    (grade,) = server.api("GET", f"/formgrader/api/grades?submission_id={ben['id']}")
    return server.api("PUT", f"/formgrader/api/grade/{grade['id']}", {"manual_score": MANUAL})


@pytest.fixture(scope="module")
def button_page(course, server, manual) -> str:
    """ben's feedback page as formgrader's "Generate Feedback" button writes it, after the manual score."""
    answer = server.api("POST", f"/formgrader/api/assignment/{TINY}/ben/generate_feedback")
    assert answer["success"], answer.get("error", "") + answer.get("log", "")
    return _feedback(course, "ben")


def test_a_manual_score_given_in_formgrader_reaches_the_gradebook(course, manual):
    """Does a score put through `PUT /formgrader/api/grade/<id>` become the cell's score in the gradebook?"""
    assert manual["manual_score"] == MANUAL
    assert cell_scores(course, "ben", TINY) == {"ex9_1_test": MANUAL}


def test_a_manual_score_given_in_formgrader_reaches_nbgrader_export(course, manual, tmp_path):
    """Does `nbgrader export`, run in the course folder, give ben the manual score for the assignment?"""
    target = tmp_path / "export.csv"
    _nbgrader(course, "export", "--to", str(target))
    with target.open(newline="") as handle:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)
                  if row["assignment"] == TINY}
    assert scores["ben"] == MANUAL
    assert scores["ann"] == cell_scores(course, "ann", TINY)["ex9_1_test"]


def test_the_generate_feedback_button_shows_no_hidden_test(course, button_page):
    """Does the button's page leave out the hidden test that the autograded notebook holds?"""
    autograded = nbformat.read(course / "autograded" / "ben" / TINY / f"{TINY}.ipynb", as_version=4)
    stock_page, _ = HTMLExporter().from_notebook_node(autograded)
    assert _shows(stock_page, TINY_HIDDEN), "control: stock nbconvert shows the hidden line, so the check can fail"
    assert not _shows(button_page, TINY_HIDDEN)


def test_the_generate_feedback_button_writes_tapelabs_page(button_page):
    """Is the button's page tapelab's, with the Content-Security-Policy of tapelab_feedback.html.j2?"""
    template = re.search(r'Content-Security-Policy\\" content=\\"([^"\\]+)\\"', PAGE.read_text())
    assert template, f"no Content-Security-Policy meta found in {PAGE}: update this test's reading of it"
    meta = BeautifulSoup(button_page, "html.parser").find("meta", attrs={"http-equiv": "Content-Security-Policy"})
    assert meta is not None and meta["content"] == template.group(1)


def test_the_generate_feedback_button_shows_the_manual_score(button_page, manual):
    """Does the button's page head with the manual score just given, not the autograded one?"""
    heading = BeautifulSoup(button_page, "html.parser").find("h4").get_text()
    assert f"(Score: {MANUAL} / {float(manual['max_score'])})" in heading, heading


def test_nbgrader_generate_feedback_writes_the_buttons_page(course, button_page):
    """Does `nbgrader generate_feedback --force` write the button's page for ben, and no hidden test for anyone?"""
    _nbgrader(course, "generate_feedback", TINY, "--force")
    pages = {student: _feedback(course, student) for student in STUDENTS}
    assert pages["ben"] == button_page
    assert [student for student, page in pages.items() if _shows(page, TINY_HIDDEN)] == []


class TestUsableAsItIs:
    """What formgrader shows of the course, which an instructor reads as it is."""

    def test_every_assignment_is_released(self, server):
        """Does formgrader list every assignment as "released" (in an exchange it can reach), not "draft"?"""
        statuses = {a["name"]: a["status"] for a in server.api("GET", "/formgrader/api/assignments")}
        assert statuses and set(statuses.values()) == {"released"}, statuses

    def test_every_submission_has_a_timestamp(self, server):
        """Does every submission formgrader lists carry the time it was handed in?"""
        submissions = server.api("GET", f"/formgrader/api/submissions/{TINY}")
        assert sorted(s["student"] for s in submissions) == sorted(STUDENTS)
        assert [s["student"] for s in submissions if s["timestamp"] is None] == []

    def test_students_carry_the_names_of_the_roster(self, course, server, tmp_path):
        """Do `tapelab grade --roster FILE`'s names reach formgrader's students and submissions?"""
        roster = tmp_path / "roster.csv"
        with roster.open("w", newline="") as handle:  # the format of `nbgrader db student import`
            writer = csv.writer(handle)
            writer.writerow(["id", "first_name", "last_name", "email"])
            writer.writerows([student, first, last, f"{student}@example.org"]
                             for student, (first, last) in ROSTER.items())
        result = run_grade(course.parent / "inbox", course, "--roster", str(roster))
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        students = {s["id"]: (s["first_name"], s["last_name"]) for s in server.api("GET", "/formgrader/api/students")}
        submissions = {s["student"]: (s["first_name"], s["last_name"])
                       for s in server.api("GET", f"/formgrader/api/submissions/{TINY}")}
        assert (students, submissions) == (ROSTER, ROSTER)
