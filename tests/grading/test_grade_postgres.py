"""A PostgreSQL gradebook, for real: Debian's server started here on 127.0.0.1, two graders with a
course folder each run `tapelab grade` at once on disjoint students into it, every row is
checked, then `nbgrader export` reads it."""
import csv
import json
import subprocess
import sys
import time

import pytest

from grade_fixtures import BASIC, TINY, by_student, fill, load_report, make_course, partial, reference, run_grade, tiny, write
from services import PostgresServer
from tapelab.grading.gradebook import first_use
from tapelab.release import nbgrader_env, prepare_course

pytestmark = pytest.mark.heavy(105)  # seconds, about: scheduled first (tests/conftest.py)

# student -> (notebook, answers, the grade cells that fail)
GRADERS = {
    "ta1": {"ann": (BASIC, "reference", set()), "bob": (BASIC, "partial", None),
            "cat": (TINY, "42", set()), "dan": (TINY, "41", {"ex9_1_test"})},
    "ta2": {"eve": (BASIC, "blank", "all"), "fay": (TINY, "exit", {"ex9_1_test"}),
            "gus": (TINY, "42", set()), "hal": (TINY, "flagged", set())},
}
GRADES = """
SELECT sa.student_id, a.name, n.name, bc.name, g.auto_score, g.manual_score, g.needs_manual_grade, gc.max_score
FROM grade g
JOIN submitted_notebook sn ON g.notebook_id = sn.id
JOIN submitted_assignment sa ON sn.assignment_id = sa.id
JOIN assignment a ON sa.assignment_id = a.id
JOIN notebook n ON sn.notebook_id = n.id
JOIN base_cell bc ON g.cell_id = bc.id
JOIN grade_cells gc ON gc.id = bc.id
"""


@pytest.fixture(scope="module")
def server():
    postgres = PostgresServer()
    yield postgres
    postgres.stop()


def _rows(url, sql):
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(text(sql))]
    finally:
        engine.dispose()


def _answers(template, notebook, kind):
    if notebook == TINY:
        extra = ["import sys\nsys.settrace(None)"] if kind == "flagged" else []
        answers = {"exit": {"ex9_1_answer": "import os\nos._exit(3)"}, "flagged": tiny()}.get(kind) or tiny(kind)
        return fill(template, TINY, answers, extra=extra)
    answers = {"reference": reference(), "partial": partial()[0], "blank": {}}[kind]
    return fill(template, BASIC, answers)


@pytest.fixture(scope="module")
def shared(server, tmp_path_factory):
    """Two graders' course folders on one PostgreSQL gradebook, both graded at the same time."""
    url = server.create_database("course")
    root = tmp_path_factory.mktemp("postgres")
    template = make_course(root)  # SQLite: only the source of the submissions' notebooks
    for grader in GRADERS:  # what each grader's first `tapelab grade --db URL` does, under the setup lock
        prepare_course(root / grader, [BASIC, TINY], solutions=root / "solutions", db_url=url)
    runs = {}
    for grader, students in GRADERS.items():
        for student, (notebook, kind, _) in students.items():
            write(_answers(template, notebook, kind), root / f"inbox-{grader}" / student / f"{notebook}.ipynb")
        cmd = [sys.executable, "-m", "tapelab.cli", "grade", str(root / f"inbox-{grader}"), "--course",
               str(root / grader), "--jobs", "1", "--timeout", "120"]
        runs[grader] = subprocess.Popen(cmd, env=nbgrader_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
    outputs = {grader: proc.communicate(timeout=900) for grader, proc in runs.items()}
    for grader, proc in runs.items():
        assert proc.returncode == 0, outputs[grader][1][-3000:]
    return {"url": url, "root": root, "outputs": outputs, "password": server.password,
            "reports": {g: load_report(root / g / "report.json") for g in GRADERS}}


def _expected(url):
    cells = _rows(url, "SELECT n.name, bc.name, gc.max_score FROM grade_cells gc JOIN base_cell bc ON gc.id = bc.id "
                       "JOIN notebook n ON bc.notebook_id = n.id")
    fails_partial = partial()[1]
    rows = []
    for students in GRADERS.values():
        for student, (notebook, kind, fails) in students.items():
            fails = fails_partial if fails is None else fails
            for nb, cell, max_score in cells:
                if nb == notebook:
                    score = 0.0 if fails == "all" or cell in fails else max_score
                    review = kind in ("flagged", "exit")  # flagged code, a kernel that died: for formgrader
                    rows.append((student, notebook, notebook, cell, score, None, review, max_score))
    return sorted(rows)


def test_the_two_runs_overlapped(shared):
    """Did the graders really write at the same time (each run started before the other ended)?"""
    spans = {}
    for grader in GRADERS:
        records = [json.loads(line) for line in (shared["root"] / grader / "grading.log.jsonl").read_text().splitlines()]
        times = [r["time"] for r in records if r["event"] in ("start", "end")]
        spans[grader] = (min(times), max(times))
    (start1, end1), (start2, end2) = spans.values()
    assert start1 < end2 and start2 < end1, spans


def test_every_grade_row_written_once_by_its_grader(shared):
    """Does the gradebook hold exactly one row per graded cell of every submission, with the right score?"""
    rows = sorted(_rows(shared["url"], GRADES))
    assert rows == _expected(shared["url"])


def test_students_submissions_and_course_rows(shared):
    """Exactly the eight students, one submission each, and the course released once (not twice)."""
    url = shared["url"]
    everyone = sorted(s for students in GRADERS.values() for s in students)
    assert sorted(r[0] for r in _rows(url, "SELECT id FROM student")) == everyone
    submitted = _rows(url, "SELECT sa.student_id, a.name FROM submitted_assignment sa "
                           "JOIN assignment a ON sa.assignment_id = a.id")
    assert sorted(submitted) == sorted((s, nb) for students in GRADERS.values() for s, (nb, *_) in students.items())
    assert len(_rows(url, "SELECT id FROM submitted_notebook")) == len(everyone)
    assert sorted(r[0] for r in _rows(url, "SELECT name FROM assignment")) == [BASIC, TINY]
    assert sorted(r[0] for r in _rows(url, "SELECT name FROM notebook")) == [BASIC, TINY]
    cells = _rows(url, "SELECT n.name, bc.name FROM grade_cells gc JOIN base_cell bc ON gc.id = bc.id "
                       "JOIN notebook n ON bc.notebook_id = n.id")
    assert len(cells) == len(set(cells)) and (TINY, "ex9_1_test") in cells


def test_reports_agree_with_the_gradebook_and_stay_apart(shared):
    """Does each grader's report list only its own students, with the scores in the gradebook?"""
    totals = {}
    for student, _, notebook, _, score, *_ in _rows(shared["url"], GRADES):
        totals[(student, notebook)] = totals.get((student, notebook), 0.0) + score
    for grader, students in GRADERS.items():
        report = shared["reports"][grader]
        executed = {(e["student"], e["notebook"]): e for e in report["submissions"] if e.get("worker")}
        assert set(executed) == {(s, nb) for s, (nb, *_) in students.items()}
        for key, entry in executed.items():
            assert entry["score"] == totals[key], (grader, key)
    assert by_student(shared["reports"]["ta2"], "fay", TINY)["status"] == "kernel_died"
    assert by_student(shared["reports"]["ta2"], "hal", TINY)["flags"]


def test_password_never_written_outside_the_course_config(shared):
    """The database password is in the course's nbgrader_config.py (mode 0700 folder) and nowhere else."""
    for grader in GRADERS:
        folder = shared["root"] / grader
        assert shared["password"] in (folder / "nbgrader_config.py").read_text()
        for name in ("report.json", "grading.log.jsonl", "grades.csv", "grading-state.json"):
            assert shared["password"] not in (folder / name).read_text(), name
        assert all(shared["password"] not in text for text in shared["outputs"][grader])
        assert f"127.0.0.1:{shared['url'].rsplit(':', 1)[1].split('/')[0]}" in (folder / "grading.log.jsonl").read_text()


def test_nbgrader_export_reads_the_shared_gradebook(shared, tmp_path):
    """`nbgrader export` in a grader's folder (its config names the server) lists every student's scores."""
    out = tmp_path / "export.csv"
    result = subprocess.run([sys.executable, "-m", "nbgrader", "export", "--to", str(out)], cwd=shared["root"] / "ta2",
                            env=nbgrader_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = list(csv.DictReader(out.open()))
    submitted = {(s, nb) for students in GRADERS.values() for s, (nb, *_) in students.items()}
    everyone = {s for s, _ in submitted}
    assert {(r["student_id"], r["assignment"]) for r in rows} == {(s, a) for s in everyone for a in (BASIC, TINY)}
    totals = {}
    for student, _, notebook, _, score, *_ in _rows(shared["url"], GRADES):
        totals[(student, notebook)] = totals.get((student, notebook), 0.0) + score
    for row in rows:
        expected = totals.get((row["student_id"], row["assignment"]), 0.0)
        assert float(row["score"]) == expected, row


def test_first_use_of_an_empty_database_by_graders_starting_together(server):
    """Six processes open a new, empty gradebook at the same moment: all succeed, set up once.
    (Without the setup lock, nbgrader's own first open fails in some such races: "Key
    (id)=(default_course) already exists".)"""
    url = server.create_database("race")
    # Each process imports first, then all call first_use at the same instant.
    code = ("import sys, time\nfrom tapelab.grading.gradebook import first_use\n"
            "time.sleep(max(0.0, float(sys.argv[2]) - time.time()))\nprint(first_use(sys.argv[1]))")
    start = str(time.time() + 8)
    procs = [subprocess.Popen([sys.executable, "-c", code, url, start], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=nbgrader_env()) for _ in range(6)]
    results = [(proc.communicate(timeout=120), proc.returncode) for proc in procs]
    assert all(code == 0 and out.strip() == "{}" for (out, _), code in results), results
    assert _rows(url, "SELECT count(*) FROM alembic_version") == [(1,)]
    assert _rows(url, "SELECT id FROM course") == [("default_course",)]
    assert first_use(url) == {}


def test_another_db_for_an_existing_course_is_refused(shared, server):
    """`--db` naming another gradebook than the course's own stops (exit 2) rather than split the course."""
    other = server.url("elsewhere")
    result = run_grade(shared["root"] / "inbox-ta1", shared["root"] / "ta1", "--db", other)
    assert result.returncode == 2, result.stderr
    assert "is not the gradebook of" in result.stderr and "c.CourseDirectory.db_url" in result.stderr
    assert server.password not in result.stderr + result.stdout
