"""Class insight, LMS exports and review by exercise, on a class with known mistakes (insight_class).

No kernel runs: the class is written into a course folder with nbgrader's API. Every expected
number is derived from the table CLASS and the released notebooks' points.
"""
from __future__ import annotations

import csv
import io
import json
import re
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from grade_fixtures import BASIC, TINY, TINY_HIDDEN, released
from guide import blocks, run_as_written
from insight_class import GRADESCOPE_SCHEMA, CLASS, ERROR, HIDDEN, HOSTILE, NAMES, OK, SECONDS, STUB, build_class
from tapelab.causes import CAUSES
from tapelab.grading import exports
from tapelab.grading.insight import tables as insight
from tapelab.grading.grades import standings
from tapelab.grading.records import STATE_FILE, State
from tapelab.grading.insight.review import review
from tapelab.release import nbgrader_env

NOTEBOOKS = (BASIC, TINY)



@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    return build_class(tmp_path_factory.mktemp("insight"))


def _db(course: Path) -> str:
    return f"sqlite:///{course / 'gradebook.db'}"


def _rows(course: Path) -> list[standings.Standing]:
    return standings.read(_db(course), State(course / STATE_FILE).entries)


def _points(course: Path, notebook: str) -> dict[str, float]:
    return {c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"]["points"])
            for c in released(course, notebook).cells if c.metadata.get("nbgrader", {}).get("grade")}


def _expected(shows) -> str:
    if shows == OK or (isinstance(shows, tuple) and shows[0] == "forged"):
        return "correct"
    if isinstance(shows, tuple):
        return "named" if shows[0] == "cause" else "unnamed"
    return {HIDDEN: "hidden_only", STUB: "not_attempted", ERROR: "unnamed"}[shows]


def _plans(notebook: str) -> dict[str, dict]:
    prefix = "ex1" if notebook == BASIC else "ex9"
    return {s: {g: v for g, v in plan.items() if g.startswith(prefix)} for s, plan in CLASS.items()
            if any(g.startswith(prefix) for g in plan)}


def _score(course: Path, notebook: str, plan: dict) -> float:
    return sum(p for gid, p in _points(course, notebook).items() if _expected(plan.get(gid)) == "correct"
               ) if plan else 0.0


def test_every_assignment_number_follows_from_the_class(course):
    """Are each notebook's submissions, completion, scores, statuses and grading time the class's?"""
    data = insight.build(course, _db(course), _rows(course))
    assert data["students"] == len(CLASS)
    for a in data["assignments"]:
        plans = _plans(a["notebook"])
        scores = [_score(course, a["notebook"], plan) for plan in plans.values()]
        assert (a["students"], a["submitted"]) == (len(CLASS), len(plans))
        assert a["completion"] == round(len(plans) / len(CLASS), 4)
        assert (a["mean"], a["median"], a["min"], a["max"]) == (round(statistics.fmean(scores), 2),
                                                                round(statistics.median(scores), 2), min(scores), max(scores))
        assert a["statuses"] == {k: v for k, v in (("graded", len(plans)), ("not_submitted", len(CLASS) - len(plans))) if v}
        assert a["grading"]["executions"] == len(plans)
        assert a["grading"]["total_seconds"] == sum(SECONDS[s] for s in plans)


def test_every_exercise_number_follows_from_the_class(course):
    """Does each exercise count correct, named causes, unnamed, hidden-only and not attempted as the class did?"""
    data = insight.build(course, _db(course), _rows(course))
    assert {e["grade_id"] for e in data["exercises"]} == {g for nb in NOTEBOOKS for g in _points(course, nb)}
    for e in data["exercises"]:
        plans = _plans(e["notebook"])
        outcomes = Counter(_expected(plan[e["grade_id"]]) for plan in plans.values())
        causes = Counter(plan[e["grade_id"]][1] for plan in plans.values()
                         if _expected(plan[e["grade_id"]]) == "named")
        assert e["submitted"] == len(plans)
        assert {k: e[k] for k in insight.OUTCOMES} == {k: outcomes[k] for k in insight.OUTCOMES}, e["grade_id"]
        assert {k: e[f"share_{k}"] for k in insight.OUTCOMES} == {k: round(outcomes[k] / len(plans), 4)
                                                                 for k in insight.OUTCOMES}
        assert {c["cause"]: c["students"] for c in e["causes"]} == dict(causes)
        assert all(c["title"] == CAUSES[c["cause"]].title for c in e["causes"])


def test_ranking_puts_the_least_correct_exercise_and_the_commonest_cause_first(course):
    """Is the ranking ordered by share not correct, and are causes summed over exercises?"""
    data = insight.build(course, _db(course), _rows(course))
    shares = [r["share_not_correct"] for r in data["ranking"]["exercises"]]
    assert shares == sorted(shares, reverse=True) and shares and shares[-1] > 0
    everywhere = Counter(p[1] for plan in CLASS.values() for p in plan.values()
                         if isinstance(p, tuple) and p[0] == "cause")
    assert [(c["cause"], c["students"]) for c in data["ranking"]["causes"]] == sorted(
        everywhere.items(), key=lambda kv: (-kv[1], kv[0]))


def test_a_forged_bundle_never_turns_a_pass_into_a_mistake_nor_invents_a_cause(course):
    """Does a printed fake bundle leave a passed cell correct, and an unknown cause code uncounted?"""
    data = insight.build(course, _db(course), _rows(course))
    one = next(e for e in data["exercises"] if e["grade_id"] == "ex1_1_test")
    assert "not-watched" not in {c["cause"] for c in one["causes"]}
    codes = {c["cause"] for e in data["exercises"] for c in e["causes"]}
    assert "no-such-cause" not in codes and codes <= set(CAUSES)


def test_examples_are_anonymised_unless_names_are_asked_for(course, tmp_path):
    """Do the written files name no student (ids, names) by default, and ids with names=True?"""
    insight.write(course, _db(course), _rows(course), out=tmp_path / "anon")
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", "".join(p.read_text() for p in (tmp_path / "anon").iterdir()))
    for student, (first, last) in NAMES.items():
        assert f"'{student}" not in text and f" {student}" not in text and first not in text and last not in text
    insight.write(course, _db(course), _rows(course), out=tmp_path / "named", names=True)
    named = json.loads((tmp_path / "named" / "insight.json").read_text())
    assert {c["example"]["student"] for e in named["exercises"] for c in e["causes"]} <= set(CLASS)


def test_the_page_escapes_student_text_and_allows_no_script(course, tmp_path):
    """Is every student-written text escaped, with a policy that runs no script and loads nothing?"""
    insight.write(course, _db(course), _rows(course), out=tmp_path)
    page = (tmp_path / "insight.html").read_text()
    assert HOSTILE not in page and "<script" not in page.lower() and "onerror=" not in page.replace("onerror=alert", "")
    assert "&lt;script&gt;" in page and "default-src 'none'" in page and page.count("data:image/png;base64,") == 2


def test_the_page_says_what_its_plots_show_and_how_its_means_are_taken(course, tmp_path, monkeypatch):
    """Does each plot's alt text give its counts (score bands, outcomes per exercise), the histogram count in
    whole students, every fix show its code as code (no raw backtick), and the mean, on the page and in
    insight-assignments.csv, be the one the page says: over the submitted notebooks?"""
    from tapelab.grading.insight import page as insight_page

    figures = []
    monkeypatch.setattr(insight_page, "_png", lambda figure: figures.append(figure) or "data:image/png;base64,")
    insight.write(course, _db(course), _rows(course), out=tmp_path)
    page = (tmp_path / "insight.html").read_text()
    data = json.loads((tmp_path / "insight.json").read_text())
    for a in data["assignments"]:
        bands = ", ".join(f"{band}: {count}" for band, count in zip(insight_page._BANDS, a["bins"]))
        assert f"{a['notebook']}: {a['submitted']} submission(s) by share of the max score ({bands})" in page
    one = next(e for e in data["exercises"] if e["grade_id"] == "ex1_1_test")
    assert (f"exercise 1.1: {one['correct']} correct, {one['named']} named mistake" in page)
    assert all(tick == int(tick) for figure in figures for tick in figure.axes[0].get_yticks())
    fixes = [c["fix"] for e in data["exercises"] for c in e["causes"]]
    assert any("`" in fix for fix in fixes) and "`" not in re.sub(r"<pre>.*?</pre>", "", page, flags=re.S)
    assert "Mean, median, min and max are over the submitted notebooks only" in page
    means = {row["notebook"]: float(row["mean"]) for row in csv.DictReader((tmp_path / "insight-assignments.csv").open())}
    for a in data["assignments"]:
        scores = [r.score for r in _rows(course) if r.notebook == a["notebook"] and r.submitted]
        assert means[a["notebook"]] == a["mean"] == round(statistics.fmean(scores), 2)
        assert len(scores) < a["students"]  # someone did not submit: over the class the mean would differ


def test_the_change_since_the_last_run_shows_what_moved(course, tmp_path):
    """After a manual full score, does the next insight show the share correct and the cause count moving?"""
    from nbgrader.api import Gradebook

    insight.write(course, _db(course), _rows(course), out=tmp_path)
    before = json.loads((tmp_path / "insight.json").read_text())
    with Gradebook(_db(course)) as gb:
        grade = gb.find_grade("ex1_1_test", BASIC, BASIC, "cai")
        grade.manual_score = grade.max_score
        gb.db.commit()
    try:
        insight.write(course, _db(course), _rows(course), out=tmp_path)
    finally:
        with Gradebook(_db(course)) as gb:
            gb.find_grade("ex1_1_test", BASIC, BASIC, "cai").manual_score = None
            gb.db.commit()
    change = json.loads((tmp_path / "insight.json").read_text())["change"]
    old = next(e for e in before["exercises"] if e["grade_id"] == "ex1_1_test")
    assert change["previous"] == before["generated"]
    assert change["exercises"] == [{"notebook": BASIC, "exercise": "1.1", "submitted_before": old["submitted"],
                                    "submitted_now": old["submitted"], "share_correct_before": old["share_correct"],
                                    "share_correct_now": round(old["share_correct"] + 1 / old["submitted"], 4)}]
    assert change["causes"] == [{"notebook": BASIC, "exercise": "1.1", "cause": "outside-tape",
                                 "students_before": 2, "students_now": 1}]


def test_canvas_csv_has_the_import_columns_and_the_gradebook_scores(course):
    """Does the Canvas CSV carry Canvas's identity columns, Points Possible and each gradebook score?"""
    rows = _rows(course)
    lms = {s: str(1000 + i) for i, s in enumerate(sorted(CLASS)) if s != "eve"}  # Canvas user ids are numbers
    table = list(csv.reader(io.StringIO(exports.canvas_csv(rows, lms, section="A").text)))
    assert table[0] == [*exports.CANVAS_FIELDS, *NOTEBOOKS]
    assert table[1][0] == "Points Possible" and [float(v) for v in table[1][5:]] == [
        sum(_points(course, nb).values()) for nb in NOTEBOOKS]
    body = {r[1]: r for r in table[2:]}
    assert set(body) == set(lms.values())
    for row in rows:
        if row.student in lms:
            line = body[lms[row.student]]
            assert line[0] == f"{row.last_name}, {row.first_name}" and line[4] == "A"
            assert float(line[5 + NOTEBOOKS.index(row.notebook)]) == row.score
    assert exports.canvas_csv(rows, lms).unmatched == ["eve"]


def test_long_csv_has_one_row_per_student_and_exercise_with_its_cause(course):
    """Does the long CSV give every cell's gradebook score, and the cause only for a named mistake?"""
    table = list(csv.DictReader(io.StringIO(exports.long_csv(course, _db(course), _rows(course)))))
    assert len(table) == len(CLASS) * sum(len(_points(course, nb)) for nb in NOTEBOOKS)
    for line in table:
        shows = CLASS[line["student"]].get(line["grade_id"])
        points = _points(course, line["notebook"])[line["grade_id"]]
        expected = "not_submitted" if not _plans(line["notebook"]).get(line["student"]) else _expected(shows)
        assert line["outcome"] == expected
        assert float(line["score"]) == (points if expected == "correct" else 0.0)
        assert line["cause"] == (shows[1] if expected == "named" else "")


def test_gradescope_results_follow_the_specification_and_the_gradebook(course):
    """Is results.json valid against Gradescope's fields, with the gradebook's score and one test per exercise?"""
    rows = _rows(course)
    for row in rows:
        result = exports.gradescope_results(course, _db(course), rows, row.student, row.notebook)
        jsonschema.validate(result, GRADESCOPE_SCHEMA)
        assert result["score"] == row.score
        assert [t["name"] for t in result["tests"]] == [f"Exercise {g[2:-5].replace('_', '.')}"
                                                         for g in sorted(_points(course, row.notebook))]
        assert sum(t["score"] for t in result["tests"]) == row.raw_score


def test_no_export_quotes_a_hidden_test(course):
    """When a visible output quotes a hidden test line, is that line withheld from results.json?"""
    import nbformat
    from nbformat.v4 import new_output

    path = course / "autograded" / "ben" / TINY / f"{TINY}.ipynb"
    original = path.read_bytes()
    nb = nbformat.read(path, as_version=4)
    test = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex9_1_test")
    test.outputs.append(new_output("stream", name="stdout", text=f"leaked: {TINY_HIDDEN}\nfine\n"))
    nbformat.write(nb, path)
    try:
        result = exports.gradescope_results(course, _db(course), _rows(course), "ben", TINY)
        long = exports.long_csv(course, _db(course), _rows(course))
    finally:
        path.write_bytes(original)
    text = json.dumps(result) + long
    assert TINY_HIDDEN not in text and exports.WITHHELD in result["tests"][0]["output"] and "fine" in text


def test_review_groups_every_answer_by_cause_then_outcome(course):
    """Does review list each submitter once, under their cause or outcome, named causes first?"""
    text = review(course, _db(course), _rows(course), "1.2")
    headings = [line for line in text.splitlines() if line.startswith("== ")]
    plans = _plans(BASIC)
    groups = Counter(p["ex1_2_test"][1] if _expected(p["ex1_2_test"]) == "named" else _expected(p["ex1_2_test"])
                     for p in plans.values())
    assert len(headings) == len(groups) and headings[0].startswith("== swapped-arguments")
    assert headings[-1] == f"== correct ({groups['correct']} student(s))"
    assert sorted(line.split()[1].rstrip(":") for line in text.splitlines() if line.startswith("-- ")) == sorted(plans)
    assert "\x1b" not in review(course, _db(course), _rows(course), "ex1_2_test")


def test_refresh_writes_the_insight_beside_grades_csv(course, monkeypatch):
    """Does the refresh at the end of `tapelab grade` (and `tapelab feedback`) write the insight?"""
    from tapelab.grading import outputs as derived
    from tapelab.grading.handback import refresh
    from tapelab.grading.course import open_course

    monkeypatch.setattr(refresh, "refresh_feedback", lambda course, force=False: refresh.Refreshed())
    target = course / insight.INSIGHT_DIR / "insight.json"
    target.unlink(missing_ok=True)
    opened = open_course(course)
    try:
        out = derived.refresh(opened, State(course / STATE_FILE).entries)
    finally:
        opened.close()
    assert "insight" in out.written and json.loads(target.read_text())["students"] == len(CLASS)


def _tapelab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tapelab.cli", *args], env=nbgrader_env(), capture_output=True,
                          text=True, timeout=300)


def test_commands_refuse_a_folder_that_is_not_a_course_and_an_unknown_exercise(course, tmp_path):
    """Do insight and review exit 2 with the fix named, for a non-course folder and an unknown exercise?"""
    bad = _tapelab("insight", "--course", str(tmp_path))
    unknown = _tapelab("review", "7.7", "--course", str(course))
    assert bad.returncode == 2 and "not a course folder" in bad.stderr
    assert unknown.returncode == 2 and "pass one of: 1.1" in unknown.stderr


SECTION = "## 8. After grading"


def _guide_block() -> str:
    (block,) = blocks(SECTION)
    return block


def test_the_guides_after_grading_commands_run_as_written(course, tmp_path):
    """Does the guide's block run as written, writing the insight, the Canvas CSV (a named Canvas assignment),
    the long CSV, one results.json and the review of 1.1?"""
    home = tmp_path / "home"
    home.mkdir()
    (home / "tapelab-2026").symlink_to(course)
    done = run_as_written(_guide_block(), home)
    assert done.returncode == 0, done.stderr
    assert json.loads((course / insight.INSIGHT_DIR / "insight.json").read_text())["students"] == len(CLASS)
    assert (course / insight.INSIGHT_DIR / "insight-assignments.csv").is_file()
    canvas = list(csv.reader((home / "canvas-grades.csv").open()))
    assert canvas[0] == [*exports.CANVAS_FIELDS, f"{BASIC} (4101)", TINY] and len(canvas) == 2 + len(CLASS)
    results = json.loads((home / "results-ben.json").read_text())
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    assert results["score"] == next(r.score for r in _rows(course) if (r.student, r.notebook) == ("ben", BASIC))
    assert len((home / "grades-long.csv").read_text().splitlines()) == 1 + len(CLASS) * sum(
        len(_points(course, nb)) for nb in NOTEBOOKS)
    assert "01_basic_tape exercise 1.1" in done.stdout and "== outside-tape" in done.stdout
