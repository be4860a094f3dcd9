"""The late policy in the class insight (issue 20 item 3): each assignment's deadline, late submissions
and penalties, read back from the HTML page and the CSV and held against nbgrader's gradebook.

No kernel runs: late_class writes the class, its deadline, times and extension, and lets the course's
plugin store the penalties.
"""
from __future__ import annotations

import csv
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from grade_fixtures import BASIC, TINY
from late_class import LATE, build_late_class, db_url
from tapelab.grading.insight import tables as insight
from tapelab.grading.grades import standings
from tapelab.grading.grades.lateness import LatePenalty
from tapelab.grading.records import STATE_FILE, State
from tapelab.release import course_config


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    return build_late_class(tmp_path_factory.mktemp("late-insight"))


def _write(course: Path, out: Path, names: bool = False) -> Path:
    rows = standings.read(db_url(course), State(course / STATE_FILE).entries)
    insight.write(course, db_url(course), rows, out=out, names=names)
    return out


class _Tables(HTMLParser):
    """The page's tables by the <h3> heading above them: heading -> [table -> [row -> [cell text]]]."""

    def __init__(self, page: str):
        super().__init__()
        self.sections: dict[str, list] = {}
        self._heading: str | None = None
        self._in: str | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag == "h3":
            self._heading, self._in = "", "h3"
        elif tag == "table" and self._heading is not None:
            self.sections.setdefault(self._heading, []).append([])
        elif tag == "tr" and self._heading is not None:
            self.sections[self._heading][-1].append([])
        elif tag in ("td", "th") and self._heading is not None:
            self.sections[self._heading][-1][-1].append("")
            self._in = "cell"

    def handle_endtag(self, tag):
        if tag in ("h3", "td", "th"):
            self._in = None

    def handle_data(self, data):
        if self._in == "h3":
            self._heading += data
        elif self._in == "cell":
            self.sections[self._heading][-1][-1][-1] += data


def _late_tables(page: str, notebook: str) -> tuple[dict, list[dict]]:
    """The notebook's late summary (header -> value) and its late rows (header -> value each)."""
    tables = [t for t in _Tables(page).sections[notebook] if t and t[0][0] in ("deadline (UTC)", "hours late",
                                                                             "student")]
    summary = dict(zip(*tables[0])) if tables and tables[0][0][0] == "deadline (UTC)" else {}
    rows = [dict(zip(t[0], row)) for t in tables if t[0][0] != "deadline (UTC)" for row in t[1:]]
    return summary, rows


def _gradebook_lateness(course: Path) -> dict[str, dict]:
    """Straight from nbgrader's tables, per notebook: the duedate and each late notebook's
    (student, hours late, raw score, penalty)."""
    from nbgrader.api import Assignment, Gradebook, SubmittedNotebook

    with Gradebook(db_url(course)) as gb:
        out = {a.name: {"due": a.duedate, "late": []} for a in gb.db.query(Assignment)}
        for nb in gb.db.query(SubmittedNotebook):
            sub = nb.assignment
            if sub.total_seconds_late > 0:
                out[sub.assignment.name]["late"].append(
                    (sub.student.id, round(sub.total_seconds_late / 3600, 2), float(nb.score),
                     float(nb.late_submission_penalty or 0.0)))
    return out


def _num(value: float) -> str:
    return f"{value:g}"


def test_the_page_shows_each_deadline_late_count_and_penalty_the_gradebook_holds(course, tmp_path):
    """Does each assignment show its duedate, how many were late, how many were penalised and the points
    taken, and one row per late notebook with its hours, raw score, penalty and score, as in the gradebook?"""
    page = (_write(course, tmp_path) / "insight.html").read_text()
    book = _gradebook_lateness(course)
    assert {s for s, *_ in book[BASIC]["late"]} == set(LATE) and book[TINY] == {"due": None, "late": []}
    summary, rows = _late_tables(page, BASIC)
    late = book[BASIC]["late"]
    assert summary == {"deadline (UTC)": book[BASIC]["due"].isoformat(sep=" "), "late submissions": str(len(late)),
                       "penalised": str(sum(1 for *_, penalty in late if penalty > 0)),
                       "points deducted": _num(round(sum(penalty for *_, penalty in late), 4))}
    shown = sorted((r["hours late"], r["raw score"], r["late penalty"], r["score"]) for r in rows)
    assert shown == sorted((_num(hours), _num(raw), _num(penalty), _num(max(0.0, raw - penalty)))
                           for _, hours, raw, penalty in late)
    assert sorted(float(r["hours late"]) for r in rows) == sorted(LATE.values())
    assert _late_tables(page, TINY) == ({}, []) and "No deadline in the gradebook: nothing is late." in page


def test_the_page_names_the_courses_late_rule(course, tmp_path):
    """Is the rule on the page the one the course's nbgrader_config.py configures?"""
    page = (_write(course, tmp_path) / "insight.html").read_text()
    rule = LatePenalty(config=course_config(course)).describe()
    assert f"Late policy: {rule};" in page and "10% of the score per started day late" in rule


def test_late_rows_carry_a_student_only_when_the_report_names_students(course, tmp_path):
    """Anonymised, does no late row (page or JSON) say whose it is, while --names gives each late student's id?"""
    anon = _write(course, tmp_path / "anon")
    _, rows = _late_tables((anon / "insight.html").read_text(), BASIC)
    data = json.loads((anon / "insight.json").read_text())
    late = next(a for a in data["assignments"] if a["notebook"] == BASIC)["late_policy"]["submissions"]
    assert rows and all("student" not in r for r in rows) and all("student" not in r for r in late)
    named = _write(course, tmp_path / "named", names=True)
    _, rows = _late_tables((named / "insight.html").read_text(), BASIC)
    assert sorted(r["student"] for r in rows) == sorted(LATE)  # not dee: inside the extension


def test_the_assignments_csv_gives_the_late_numbers_of_the_json(course, tmp_path):
    """Does insight-assignments.csv carry each notebook's deadline, late, penalised and points deducted as the JSON?"""
    out = _write(course, tmp_path)
    data = {a["notebook"]: a for a in json.loads((out / "insight.json").read_text())["assignments"]}
    with open(out / "insight-assignments.csv", newline="") as handle:
        table = {r["notebook"]: r for r in csv.DictReader(handle)}
    assert set(table) == set(data) == {BASIC, TINY}
    for notebook, row in table.items():
        late = data[notebook]["late_policy"]
        assert (row["deadline"], int(row["late"]), int(row["penalised"]), float(row["points_deducted"])) == (
            late["deadline"] or "", late["late"], late["penalised"], late["points_deducted"])
        assert (int(row["submitted"]), float(row["max_score"])) == (data[notebook]["submitted"],
                                                                   data[notebook]["max_score"])
