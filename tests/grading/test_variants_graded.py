"""A course with per-student variants (tapelab.release_variants): each student's notebook gives them their own
numbers, and `tapelab grade` checks each submission against the variant of the student whose folder holds it,
visible and hidden cases alike, whatever the notebook claims.
"""
import ast
import json
import stat
import subprocess
import sys

import nbformat
import pytest

from answers import mistakes, own_answers
from grade_fixtures import BASIC, by_student, cell_scores, fill, load_report, outputs_text, run_grade, write
from tapelab.checker.variants import course_variants, seed_for
from tapelab.exercises.basic_tape import ex1_1, ex1_2, ex1_3, ex1_4
from tapelab.cli.graded_course import standings_of
from tapelab.grading.insight import copies
from tapelab.paths import SOLUTIONS
from tapelab.release import ReleaseError, nbgrader_env, prepare_course, variants_salt
from tapelab.release_variants import KEY_FILE, course_salt, pin, variants_setup_cell

pytestmark = pytest.mark.heavy(60)
VARYING = (ex1_1, ex1_2, ex1_3)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("variants")
    prepare_course(root / "course", [BASIC], solutions=SOLUTIONS, exchange=False, variants="per-student")
    return root / "course"


def test_the_secret_is_kept_private_and_stable(course):
    key = course / KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert variants_salt(course) == course_salt(course) == variants_salt(course)


def test_a_damaged_secret_is_refused_not_replaced(tmp_path):
    (tmp_path / KEY_FILE).write_text("not hex\n")
    with pytest.raises(ValueError, match="restore it from your backup"):
        course_salt(tmp_path)
    assert (tmp_path / KEY_FILE).read_text() == "not hex\n"


def test_a_bad_setting_names_the_two_forms(tmp_path):
    with pytest.raises(ReleaseError, match="per-student"):
        prepare_course(tmp_path / "c", [BASIC], solutions=SOLUTIONS, exchange=False, variants="each")


def test_students_see_their_own_numbers(course, capsys):
    """The released setup cell hands the notebook's exercises the variant of the student the hub names."""
    setup = next(c for c in nbformat.read(course / "release" / BASIC / f"{BASIC}.ipynb", as_version=4).cells
                 if c.get("id") == "setup").source
    salt = variants_salt(course)
    assert f'course_variants("{salt}", ex1_1, ex1_2, ex1_3, ex1_4)' in setup
    shown = {}
    try:
        for student in ("ann", "bob"):
            course_variants(salt, ex1_1, ex1_3, student=student)
            shown[student] = (capsys.readouterr().out, ex1_1.variant.values)
            assert ex1_1.variant.seed == seed_for(salt, student, "1.1")
    finally:
        ex1_1._own = ex1_3._own = None
    assert shown["ann"][1] != shown["bob"][1], "two students got the same numbers (re-draw the fixture's names)"
    assert shown["ann"][0] != shown["bob"][0]


def test_no_student_id_says_how_to_get_one(capsys, monkeypatch):
    for name in ("JUPYTERHUB_USER", "TAPELAB_STUDENT"):
        monkeypatch.delenv(name, raising=False)
    course_variants("salt", ex1_1)
    assert "TAPELAB_STUDENT" in capsys.readouterr().out and ex1_1._own is None


def test_pin_rewrites_every_check_of_a_varying_exercise():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("ex1_1.check()\n### BEGIN HIDDEN TESTS\nex1_1.check(cases=[-1.5, 0.0],)\n"
                                     "ex1_4.check(cases=[('tanh', 0.5, 1e-5)])\n### END HIDDEN TESTS",
                                     metadata={"nbgrader": {"grade": True, "locked": True}})
    nb.cells = [cell]
    pin(nb, "salt", "ann", {"ex1_1": ex1_1, "ex1_4": ex1_4})
    seed = seed_for("salt", "ann", "1.1")
    assert cell.source.splitlines()[0] == f"ex1_1.check(seed={seed})"
    assert f"ex1_1.check(cases=[-1.5, 0.0], seed={seed},)" in cell.source
    assert "ex1_4.check(cases=[('tanh', 0.5, 1e-5)])" in cell.source  # 1.4 does not vary


def test_pin_gives_a_computed_exercise_its_variants_values_visible_and_hidden():
    """2.1's expected values come from the references, which a grading kernel lacks: pin writes them for the
    student's variant into the visible check as well as the hidden one, keyed as the pinned check looks them up."""
    from tapelab.exercises.model_variables import ex2_1

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("ex2_1.check()\n### BEGIN HIDDEN TESTS\nex2_1.check(cases=[('bn', 'mse', 5)], "
                                     "expected={'stale': {}})\n### END HIDDEN TESTS",
                                     metadata={"nbgrader": {"grade": True, "locked": True}})
    nb.cells = [cell]
    pin(nb, "salt", "ann", {"ex2_1": ex2_1})
    seed = seed_for("salt", "ann", "2.1")
    visible, hidden = (ast.parse(line).body[0].value for line in cell.source.splitlines() if "check(" in line)
    for call, cases in ((visible, list(ex2_1.visible_cases)), (hidden, [("bn", "mse", 5)])):
        keywords = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg != "cases"}
        assert keywords["seed"] == seed and set(keywords["expected"]) == {repr((seed, c)) for c in cases}, keywords


def test_setup_cell_import_stays_sorted():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os\nfrom tapelab.exercises.basic_tape import ex1_2, ex1_1\n"
                                          "print(1)", id="setup")]
    variants_setup_cell(nb, "abc")
    lines = nb.cells[0].source.splitlines()
    assert lines[1] == "from tapelab.checker.variants import course_variants" and lines[2].startswith("from tapelab.ex")
    assert lines[-1].startswith('course_variants("abc", ex1_1, ex1_2)')


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    """ann hands in her own answers, bob a copy of ann's notebook; cat her own answers with a catalogued mistake in
    1.1 and 1.4, dan a copy of cat's notebook with the names changed. One `tapelab grade` run."""
    salt = variants_salt(course)
    inbox = tmp_path_factory.mktemp("inbox")
    ann = fill(course, BASIC, own_answers(BASIC, salt, "ann"))
    wrong = {f"ex{n}_answer": mistakes(BASIC, seed_for(salt, "cat", n.replace("_", ".")))[f"ex{n}_answer"][0].code
             for n in ("1_1", "1_4")}
    cat = fill(course, BASIC, {**own_answers(BASIC, salt, "cat"), **wrong})
    dan = fill(course, BASIC, {**own_answers(BASIC, salt, "cat"), **{k: v.replace("tape", "t")
                                                               for k, v in wrong.items()}})
    for student, nb in (("ann", ann), ("bob", ann), ("cat", cat), ("dan", dan)):
        write(nb, inbox / student / f"{BASIC}.ipynb")
    result = run_grade(inbox, course, "--jobs", "1", report=inbox.parent / "report.json")
    assert result.returncode in (0, 1), result.stderr[-3000:]
    return salt, load_report(inbox.parent / "report.json")


def test_each_submission_is_graded_against_its_folders_student(course, graded):
    """ann gets full marks; bob, whose notebook is ann's byte for byte, fails exactly the exercises whose numbers
    differ from hers."""
    salt, report = graded
    entry = by_student(report, "ann")
    assert entry["score"] == entry["max_score"], entry
    assert "Your own numbers, bob" in outputs_text(course, "bob")  # the setup cell names the folder's student
    scores = cell_scores(course, "bob")
    for checker in VARYING:
        assert (scores[f"ex{checker.number.replace('.', '_')}_test"] == 0) == _differ(salt, checker, "ann", "bob"), \
            (checker.number, scores)
    assert scores["ex1_4_test"] > 0, scores


def _differ(salt: str, checker, one: str, other: str) -> bool:
    return (checker.space.variant(seed_for(salt, one, checker.number)).values
            != checker.space.variant(seed_for(salt, other, checker.number)).values)


def test_the_copies_report_states_what_matched(course, graded):
    """`tapelab copies` names bob's answers as those ann passed her variant with, and cat and dan's wrong
    answers as the same code; on the class without the copies (ann and cat) it finds nothing."""
    salt, _ = graded
    out = subprocess.run([sys.executable, "-m", "tapelab.cli", "copies", "--course", str(course)],
                         capture_output=True, text=True, env=nbgrader_env(), timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    findings = json.loads((course / "insight" / "copies.json").read_text())
    foreign = {(f["students"][0], f["exercise"]): f["students"][1:] for f in findings
               if f["kind"] == "another student's variant"}
    planted = {(copier, c.number): source for copier, source in (("bob", "ann"), ("dan", "cat")) for c in VARYING
               if _differ(salt, c, source, copier) and not (source == "cat" and c is ex1_1)}  # cat's 1.1 is wrong
    assert set(foreign) == set(planted), findings
    assert all(planted[key] in owners for key, owners in foreign.items()), findings
    same = {f["exercise"]: f["students"] for f in findings if f["kind"] == "the same wrong answer"}
    assert same["1.1"] == same["1.4"] == ["cat", "dan"], findings
    # bob and dan hand in the same wrong code too where ann and cat drew the same numbers: both copied it
    assert all(who == ["bob", "dan"] for n, who in same.items() if n not in ("1.1", "1.4")), findings
    assert "bob" in out.stdout and "not a verdict" in out.stdout
    root, db_url, rows = standings_of(course)
    apart = [r for r in rows if r.student in ("ann", "cat")]
    variants = {(r.student, c.number): c.space.variant(seed_for(salt, r.student, c.number)).values
                for r in apart for c in VARYING}
    assert copies.find(root, db_url, apart, variants) == []


def test_environment_names_the_student(monkeypatch, capsys):
    monkeypatch.setenv("JUPYTERHUB_USER", "dora")
    try:
        course_variants("salt", ex1_1)
        assert ex1_1.variant.seed == seed_for("salt", "dora", "1.1")
        assert "dora" in capsys.readouterr().out
    finally:
        ex1_1._own = None


def test_the_coordinator_names_the_variant_and_the_worker_pins(course):
    """The coordinator runs no reference (issue 50's per-submission cost): `prepare` leaves the restored checks
    as released and says whose variant they test; the worker pins them (`worker.pinned`) as `pin` does."""
    import copy

    from tapelab.grading.course import open_course
    from tapelab.grading.execution import worker
    from tapelab.grading.prepare import sanitize
    from tapelab.grading.run import OUTPUT_LIMIT
    from tapelab.release_variants import notebook_exercises

    salt, loaded = variants_salt(course), open_course(course)
    loaded.close()
    raw = nbformat.writes(fill(course, BASIC, own_answers(BASIC, salt, "ann"))).encode()
    prepared = sanitize.prepare(loaded, sanitize.read_notebook(raw), "ann", BASIC, BASIC, output_limit=OUTPUT_LIMIT)
    assert prepared.variant == (salt, "ann")
    tests = [c.source for c in prepared.nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade")]
    assert tests and not any("seed=" in source for source in tests), tests
    expected = copy.deepcopy(prepared.nb)
    pin(expected, salt, "ann", notebook_exercises(expected))
    sent = nbformat.reads(worker.pinned(nbformat.writes(prepared.nb), salt, "ann"), as_version=4)
    assert [c.source for c in sent.cells] == [c.source for c in expected.cells]
    assert sum("seed=" in c.source for c in sent.cells) >= len(VARYING)


def test_a_worker_that_cannot_pin_says_so_and_runs_nothing():
    from tapelab.grading.execution import worker
    from tapelab.grading.execution.sandbox import Sandbox

    settings = worker.Settings(10, 10, 100, Sandbox(isolate=False, rlimits=False), variant=("salt", "ann"))
    result = worker.execute("not even a notebook", settings)
    assert result["nb"] is None and "could not pin the checks" in result["facts"]["infra_error"], result
