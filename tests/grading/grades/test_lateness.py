"""Late policy (issue 20 item 3): deadlines, roster extensions and penalties, through nbgrader's own mechanism.

One `tapelab grade` run of the TF-free 09_fixture notebook; the rest is in-process on its gradebook.
"""
import csv
import shutil
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from grade_fixtures import TINY, fill, make_course, run_grade, tiny, write

from tapelab.grading.grades import lateness
from tapelab.grading.grades import standings
from tapelab.grading.grades.lateness import DueError, LatePenalty, parse_due
from tapelab.grading.intake.roster import RosterError, read_roster
from tapelab.release import course_config, nbgrader_env

DUE = "09_fixture=2026-05-01T14:00:00+02:00"  # 12:00 UTC
LATE_BY_25H = "2026-05-02T13-00-00"
# student -> (time in the file name, expected penalty of a full score)
EXPECTED = {"alice": (LATE_BY_25H, 0.2),   # 25 h late: 2 started days, 10% each
            "bob": (LATE_BY_25H, 0.0),     # extension_hours 48 for every assignment
            "carol": ("2026-05-01T11-00-00", 0.0),  # on time
            "dave": (LATE_BY_25H, 0.1)}    # extension_hours.09_fixture 24: 1 h late


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("lateness")
    course = make_course(root)
    for student, (when, _) in EXPECTED.items():
        write(fill(course, TINY, tiny()), root / "in" / f"{student}_{when}_{TINY}.ipynb")
    roster = root / "roster.csv"
    roster.write_text("id,first_name,last_name,extension_hours,extension_hours.09_fixture\n"
                      "alice,Alice,A,,\nbob,Bob,B,48,\ncarol,Carol,C,,\ndave,Dave,D,,24\n")
    done = run_grade(root / "in", course, "--due", DUE, "--roster", str(roster))
    assert done.returncode == 0, done.stderr
    return course, done


def _db(course):
    return f"sqlite:///{course / 'gradebook.db'}"


def test_each_late_notebook_is_penalised_in_the_gradebook_as_export_scores_it(graded):
    """Does the gradebook hold each student's penalty (extensions included), and grades.csv score = raw - penalty?"""
    course, _ = graded
    rows = {r.student: r for r in standings.read(_db(course)) if r.notebook == TINY}
    assert {s: rows[s].late_penalty for s in EXPECTED} == pytest.approx({s: p for s, (_, p) in EXPECTED.items()})
    with open(course / "grades.csv", newline="") as handle:
        csv_scores = {r["student"]: float(r["score"]) for r in csv.DictReader(handle) if r["notebook"] == TINY}
    assert csv_scores == pytest.approx({s: 1.0 - p for s, (_, p) in EXPECTED.items()})


def test_nbgrader_export_agrees_with_grades_csv_on_late_scores(graded, tmp_path):
    """Does `nbgrader export`, run in the course folder, give every student the score grades.csv gives?"""
    course, _ = graded
    out = tmp_path / "export.csv"
    done = subprocess.run([sys.executable, "-m", "nbgrader", "export", "--to", str(out)], cwd=course,
                          env=nbgrader_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out, newline="") as handle:
        exported = {r["student_id"]: float(r["score"]) for r in csv.DictReader(handle) if r["assignment"] == TINY}
    with open(course / "grades.csv", newline="") as handle:
        ours = {r["student"]: float(r["score"]) for r in csv.DictReader(handle) if r["notebook"] == TINY}
    assert exported == pytest.approx(ours) and set(ours) == set(EXPECTED)


def test_stock_nbgrader_autograde_step_gives_the_same_penalty(graded):
    """Does nbgrader's own AssignLatePenalties, with the course's config, store the penalty tapelab stored?"""
    from nbformat.v4 import new_notebook
    from nbgrader.preprocessors import AssignLatePenalties

    course, _ = graded
    resources = {"nbgrader": {"student": "alice", "assignment": TINY, "notebook": TINY, "db_url": _db(course)}}
    AssignLatePenalties(config=course_config(course))(new_notebook(), resources)
    alice = next(r for r in standings.read(_db(course)) if r.student == "alice" and r.notebook == TINY)
    assert alice.late_penalty == pytest.approx(0.2)


def test_summary_shows_the_deadline_and_each_late_submission(graded):
    """Does the terminal summary name the deadline, the rule, and every late notebook with lateness and penalty?"""
    _, done = graded
    assert "deadlines (gradebook duedate): 09_fixture 2026-05-01 12:00:00 UTC" in done.stdout
    assert "10% of the score per started day late" in done.stdout
    assert "late: alice 09_fixture: submitted 2026-05-02 13:00:00, due 2026-05-01 12:00:00: 25 h late, penalty 0.2 of 1" \
        in done.stdout
    assert "late: dave 09_fixture: submitted 2026-05-02 13:00:00, due 2026-05-02 12:00:00, extension 24 h: 1 h late" \
        in done.stdout
    assert "late: bob" not in done.stdout and "late: carol" not in done.stdout


def test_moving_the_deadline_recomputes_stored_penalties(graded, tmp_path):
    """Does a later deadline written after grading clear a penalty once penalties are recomputed?"""
    course = shutil.copytree(graded[0], tmp_path / "copy")
    db = _db(course)
    lateness.set_due_dates(db, {TINY: TINY}, dict([parse_due(f"{TINY}=2026-05-03T00:00:00")]))
    assert lateness.apply_penalties(db, course_config(course)) == 2  # alice and dave
    assert lateness.lateness(db, course_config(course))["late"] == []
    assert all(r.late_penalty == 0 for r in standings.read(db))


def test_due_for_a_notebook_not_released_is_refused():
    """Is a --due naming no released notebook refused, naming the released ones?"""
    with pytest.raises(DueError, match="09_nothing: not a released notebook.*09_fixture"):
        lateness.set_due_dates("sqlite://", {TINY: TINY}, {"09_nothing": datetime.now(timezone.utc)})


@pytest.mark.parametrize("text", ["09_fixture", "=2026-05-01", "09_fixture=tomorrow", "09_fixture=2026-13-01"])
def test_due_that_is_not_notebook_equals_iso_time_is_refused(text):
    """Is a --due value without NOTEBOOK= or an ISO 8601 time refused with an example?"""
    with pytest.raises(DueError, match="--due"):
        parse_due(text)


def test_due_without_a_zone_is_utc():
    """Is a deadline without a time zone read as UTC, as nbgrader reads duedates?"""
    assert parse_due("01_basic_tape=2026-10-01T23:59") == ("01_basic_tape",
                                                            datetime(2026, 10, 1, 23, 59, tzinfo=timezone.utc))


@pytest.mark.parametrize("method,seconds,grace,expected", [
    ("per_day", 1, 0, 0.1), ("per_day", 86400, 0, 0.1), ("per_day", 86401, 0, 0.2), ("per_day", 20 * 86400, 0, 1.0),
    ("per_day", 600, 15, 0.0), ("per_day", 1000, 15, 0.1), ("zero", 5, 0, 1.0), ("none", 5, 0, None)])
def test_penalty_rule_counts_started_days_after_grace(method, seconds, grace, expected):
    """Does each method price a late score of 1 as documented (per started day, after grace, capped)?"""
    plugin = LatePenalty(penalty_method=method, grace_minutes=grace)
    assert plugin.late_submission_penalty("s", 1.0, seconds) == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize("value", ["-1", "soon", "nan", "9000"])
def test_roster_extension_that_is_not_hours_is_refused(tmp_path, value):
    """Is an extension_hours cell that is not 0..a year of hours refused, naming the line?"""
    path = tmp_path / "roster.csv"
    path.write_text(f"id,extension_hours\nalice,1\nbob,{value}\n")
    with pytest.raises(RosterError, match=rf"line 3: extension_hours `{value}`"):
        read_roster(path)


def test_roster_extensions_per_assignment_and_for_all(tmp_path):
    """Does the roster give every-assignment and per-assignment hours, and nothing for an empty cell?"""
    path = tmp_path / "roster.csv"
    path.write_text("id,extension_hours,extension_hours.01_basic_tape\nalice,12,\nbob,,36\ncarol,,\n")
    assert read_roster(path).extensions() == {"alice": {"": 12.0}, "bob": {"01_basic_tape": 36.0}}
