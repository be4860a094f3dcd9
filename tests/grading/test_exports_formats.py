"""The Canvas and Gradescope exports against their readers' published rules.

Canvas: the file is read here by the rules of Canvas's own importer, lib/gradebook_importer.rb
(https://github.com/instructure/canvas-lms/blob/master/lib/gradebook_importer.rb): how it finds the
identity columns, reads `Title (id)` headers and the Points Possible row, and matches a student by
the number in `ID`. Gradescope: every field and value its autograder specification lists
(https://gradescope-autograders.readthedocs.io/en/latest/specs/, insight_class.GRADESCOPE_SCHEMA).
No kernel runs: the class is insight_class's.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from grade_fixtures import BASIC, TINY
from insight_class import CLASS, GRADESCOPE_SCHEMA, HOSTILE, build_class
from tapelab.cli import main
from tapelab.grading import exports
from tapelab.grading.grades import standings
from tapelab.grading.exports import CanvasError
from tapelab.grading.records import STATE_FILE, State

# lib/gradebook_importer.rb: Assignment.title_and_id, NON_ASSIGNMENT_COLUMN_HEADERS, the "muted" row.
_TITLE_AND_ID = re.compile(r"(.*)\s\((\d+)\)", re.ASCII)
_NOT_ASSIGNMENTS = re.compile("Current Score|Current Points|Current Grade|Final Score|Final Points|Final Grade|"
                              "Override Score|Override Grade|Override Status")
_HIDDEN_ROW = re.compile(r"\s*(Muted|Manual Posting.*)?\s*", re.I)


def _to_i(text: str) -> int:
    """Ruby's String#to_i: the leading ASCII digits, 0 without any."""
    digits = re.match(r"\s*([0-9]*)", text)[1]
    return int(digits) if digits else 0


def canvas_reads(text: str) -> dict:
    """What Canvas's importer takes from a CSV: the assignments ({"title", "id", "points"}) and the student
    rows ({"id", "name", "grades": {column: grade}}); AssertionError where it would reject the header."""
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    assert len(header) > 3 and "Student" in header[0] and "ID" in header[1], header  # row_has_student_headers?
    columns = 3
    if re.search(r"SIS\s+Login\s+ID", header[2]):
        columns += 1
    elif re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3]):
        columns += 2 + bool(re.search(r"Integration\s+ID", header[4]))
    assert "Section" in header[columns - 1], header  # the last identity column
    assignments = {}
    for index, name in enumerate(header[columns:], columns):
        if _NOT_ASSIGNMENTS.search(name):
            continue
        match = _TITLE_AND_ID.fullmatch(name)
        assignments[index] = {"title": match[1] if match else name, "id": match[2] if match else None, "points": None}
    students = []
    for row in rows[1:]:
        if "Points Possible" in row[0]:
            for index, column in assignments.items():
                column["points"] = row[index]
        elif not all(_HIDDEN_ROW.fullmatch(cell) for cell in row):
            students.append({"id": _to_i(row[1]), "name": row[0],
                             "grades": {index: row[index].strip() for index in assignments}})
    return {"assignments": list(assignments.values()), "students": students,
            "columns": {index: column["title"] for index, column in assignments.items()}}


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    return build_class(tmp_path_factory.mktemp("exports"))


def _db(course: Path) -> str:
    return f"sqlite:///{course / 'gradebook.db'}"


def _rows(course: Path) -> list[standings.Standing]:
    return standings.read(_db(course), State(course / STATE_FILE).entries)


def _lms_ids(course: Path) -> dict[str, str | None]:
    from nbgrader.api import Gradebook, Student

    with Gradebook(_db(course)) as gb:
        return dict(gb.db.query(Student.id, Student.lms_user_id).all())


def test_canvas_reads_each_column_as_the_assignment_and_points_the_gradebook_has(course):
    """Read by Canvas's importer rules, is the named notebook Canvas assignment 4101 and the other matched by
    title, each with the gradebook's points, and every student's row their Canvas id and scores?"""
    rows, ids = _rows(course), _lms_ids(course)
    read = canvas_reads(exports.canvas_csv(rows, ids, section="A", assignment_ids={BASIC: "4101"}).text)
    top = {r.notebook: r.max_score for r in rows}
    assert read["assignments"] == [{"title": BASIC, "id": "4101", "points": str(top[BASIC])},
                                   {"title": TINY, "id": None, "points": str(top[TINY])}]
    assert sorted(s["id"] for s in read["students"]) == sorted(int(ids[s]) for s in CLASS)
    by_id = {s["id"]: s for s in read["students"]}
    for row in rows:
        student = by_id[int(ids[row.student])]
        column = next(i for i, title in read["columns"].items() if title == row.notebook)
        assert float(student["grades"][column]) == row.score
        assert student["name"] == f"{row.last_name}, {row.first_name}"  # Canvas's sortable name


def test_canvas_leaves_out_a_student_whose_id_canvas_could_not_read(course):
    """Is a student whose lms_user_id is no ASCII number (Canvas would read 0 and match by name) left out
    and listed, rather than filed under the wrong student?"""
    ids = {**_lms_ids(course), "ana": "u7", "ben": "\u0663\u0664", "cai": " "}
    export = exports.canvas_csv(_rows(course), ids)
    assert export.unmatched == ["ana", "ben", "cai"]
    assert all(s["id"] > 0 for s in canvas_reads(export.text)["students"])


@pytest.mark.parametrize("notebook,assignment_ids,says", [
    (None, {BASIC: "41o1"}, "not a number"), (None, {"01_nothing": "12"}, "not a released notebook"),
    ("hw (12)", {}, "as its assignment 12")])
def test_canvas_refuses_a_column_it_would_file_under_another_assignment(course, notebook, assignment_ids, says):
    """Is an assignment id that is not a number, a notebook not released, or a notebook name Canvas would
    read as `Title (id)` refused with the fix, instead of written?"""
    rows = _rows(course)
    if notebook:
        rows = [replace(r, notebook=notebook, assignment=notebook) if r.notebook == TINY else r for r in rows]
    with pytest.raises(CanvasError, match=re.escape(says)):
        exports.canvas_csv(rows, _lms_ids(course), assignment_ids=assignment_ids)


def test_export_canvas_option_names_canvas_assignments_and_refuses_a_bad_pair(course, tmp_path, capsys):
    """Does `--canvas-assignment NB=ID` head the notebook's column `NB (ID)`, and a pair without `=` exit 2?"""
    target = tmp_path / "canvas.csv"
    assert main(["export", "canvas", "--course", str(course), "--out", str(target),
                 "--canvas-assignment", f"{TINY}=77"]) == 0
    assert canvas_reads(target.read_text())["assignments"][1]["id"] == "77"
    assert main(["export", "canvas", "--course", str(course), "--canvas-assignment", TINY]) == 2
    assert "write NOTEBOOK=ID" in capsys.readouterr().err


def test_gradescope_results_have_only_specified_fields_and_render_nothing_a_student_wrote(course):
    """Is every results.json valid against the specification's fields, with text formats for the output,
    every test's output and name, so a student's HTML or ANSI in an output stays text?"""
    rows = _rows(course)
    for row in (r for r in rows if r.submitted):
        result = exports.gradescope_results(course, _db(course), rows, row.student, row.notebook)
        jsonschema.validate(result, GRADESCOPE_SCHEMA)
        assert (result["output_format"], result["test_output_format"], result["test_name_format"]) == ("text",) * 3
        assert all("output_format" not in t and "name_format" not in t for t in result["tests"])
    dee = exports.gradescope_results(course, _db(course), rows, "dee", BASIC)
    assert any(HOSTILE in t["output"] for t in dee["tests"])  # kept as the student printed it, shown as text
