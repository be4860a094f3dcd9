"""A course with per-student variants (tapelab.release_variants): each student's notebook gives them their own
numbers, and `tapelab grade` checks each submission against the variant of the student whose folder holds it,
visible and hidden cases alike, whatever the notebook claims.
"""
import stat

import nbformat
import pytest

from answers import reference_answers
from grade_fixtures import BASIC, by_student, cell_scores, fill, load_report, run_grade, write
from tapelab.checker.variants import course_variants, seed_for
from tapelab.exercises.basic_tape import ex1_1, ex1_2, ex1_3, ex1_4
from tapelab.paths import SOLUTIONS
from tapelab.release import ReleaseError, prepare_course, variants_salt
from tapelab.release_variants import KEY_FILE, course_salt, pin, variants_setup_cell
from tapelab_answers import answer

pytestmark = pytest.mark.heavy(60)
VARYING = (ex1_1, ex1_2, ex1_3)


def _own_answers(salt: str, student: str) -> dict[str, str]:
    """The reference answers of notebook 01, each varying exercise's written for `student`'s variant."""
    answers = reference_answers(BASIC)
    for checker in VARYING:
        variant = checker.space.variant(seed_for(salt, student, checker.number))
        answers[f"ex{checker.number.replace('.', '_')}_answer"] = variant.fill(answer(checker.number).template)
    return answers


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


def test_setup_cell_import_stays_sorted():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os\nfrom tapelab.exercises.basic_tape import ex1_2, ex1_1\n"
                                          "print(1)", id="setup")]
    variants_setup_cell(nb, "abc")
    lines = nb.cells[0].source.splitlines()
    assert lines[1] == "from tapelab.checker.variants import course_variants" and lines[2].startswith("from tapelab.ex")
    assert lines[-1].startswith('course_variants("abc", ex1_1, ex1_2)')


def test_each_submission_is_graded_against_its_folders_student(course, tmp_path):
    """ann hands in her own variant's answers, bob hands in a copy of ann's notebook: ann gets full marks, bob
    fails exactly the exercises whose numbers differ from hers, though his notebook is ann's, byte for byte."""
    salt = variants_salt(course)
    ann = fill(course, BASIC, _own_answers(salt, "ann"))
    inbox = tmp_path / "inbox"
    write(ann, inbox / "ann" / f"{BASIC}.ipynb")
    write(ann, inbox / "bob" / f"{BASIC}.ipynb")
    result = run_grade(inbox, course, "--jobs", "1", report=tmp_path / "report.json")
    assert result.returncode in (0, 1), result.stderr[-3000:]
    report = load_report(tmp_path / "report.json")
    entry = by_student(report, "ann")
    assert entry["score"] == entry["max_score"], entry
    scores = cell_scores(course, "bob")
    for checker in VARYING:
        differ = checker.space.variant(seed_for(salt, "ann", checker.number)).values != \
            checker.space.variant(seed_for(salt, "bob", checker.number)).values
        assert (scores[f"ex{checker.number.replace('.', '_')}_test"] == 0) == differ, (checker.number, scores)
    assert scores["ex1_4_test"] > 0, scores


def test_environment_names_the_student(monkeypatch, capsys):
    monkeypatch.setenv("JUPYTERHUB_USER", "dora")
    try:
        course_variants("salt", ex1_1)
        assert ex1_1.variant.seed == seed_for("salt", "dora", "1.1")
        assert "dora" in capsys.readouterr().out
    finally:
        ex1_1._own = None
