"""The grading round trip through the real `nbgrader autograde`, for every notebook, and whether the
instant check a student sees agrees with the grade nbgrader records, on mutants."""
import nbformat
import pytest

from course import results, round_trip_submissions, grade_cell_of
from mutation.harness import disagreements, discover
from tapelab.paths import NOTEBOOKS, assignment_names

pytestmark = pytest.mark.heavy(500)  # seconds, about: scheduled first (tests/conftest.py)


def _by_student(notebook, student):
    return next(s for s in round_trip_submissions(notebook) if s.student == student)


@pytest.mark.parametrize("notebook", assignment_names())
@pytest.mark.parametrize("student", ["reference", "noisy"])
def test_reference_scores_full_marks(graded_course, notebook, student):
    """Does the reference answer score every point, even when the kernel starts with TensorFlow's default logging?"""
    graded = results(graded_course, _by_student(notebook, student))
    assert graded, "no graded cells found in the gradebook"
    lost = {g: r for g, r in graded.items() if r.score != r.max_score}
    assert not lost, f"{student} lost marks: {lost}"


@pytest.mark.parametrize("notebook", assignment_names())
def test_blank_notebook_scores_zero_and_says_not_attempted(graded_course, notebook):
    """Does an untouched student notebook score 0 on every graded cell, reported as not attempted?"""
    graded = results(graded_course, _by_student(notebook, "blank"))
    for grade_id, result in graded.items():
        assert result.score == 0, f"{grade_id} gave {result.score} to a blank notebook"
        assert "Not attempted" in result.message or "not attempted" in result.message.lower() or \
            "replace `raise NotImplementedError()`" in result.message, (grade_id, result.message)


MISTAKE_CASES = [
    (nb, s.student, gid, m) for nb in assignment_names() for s in round_trip_submissions(nb)
    for gid, m in s.mistakes.items()
]


@pytest.mark.parametrize(
    "notebook,student,answer_id,mistake", MISTAKE_CASES,
    ids=[f"{nb}-{gid}-{m.name}" for nb, _, gid, m in MISTAKE_CASES],
)
def test_each_mistake_scores_zero_and_is_named(graded_course, notebook, student, answer_id, mistake):
    """Does each catalogued mistake score 0 on its exercise, with the visible message naming it?"""
    result = results(graded_course, _by_student(notebook, student))[grade_cell_of(answer_id)]
    assert result.score == 0, f"{mistake.name} scored {result.score}"
    assert mistake.says in result.message, result.message


@pytest.mark.parametrize("notebook", assignment_names())
def test_mistakes_cost_only_their_own_exercise(graded_course, notebook):
    """Do exercises answered correctly keep their points in a notebook with mistakes elsewhere?"""
    for sub in round_trip_submissions(notebook):
        if not sub.mistakes:
            continue
        for grade_id, result in results(graded_course, sub).items():
            if grade_id not in {grade_cell_of(a) for a in sub.mistakes}:
                assert result.score == result.max_score, (sub.student, grade_id, result)


@pytest.mark.notebooks
@pytest.mark.parametrize("notebook", assignment_names())
def test_instant_check_agrees_with_nbgrader(graded_course, agreement_tiers, notebook):
    """Does nbgrader's grade (full or zero) agree with the in-process verdict for each exercise's sampled
    mutant (a pass must get full marks, a failure zero)?"""
    errors = discover([notebook])[1]
    assert not errors, errors
    mine = [t for t in agreement_tiers if t.submission.notebook == notebook]
    assert mine, f"no agreement submission for {notebook}"
    found = [str(d) for t in mine for d in disagreements(graded_course, t)]
    assert not found, "\n".join(found)


@pytest.mark.notebooks
@pytest.mark.parametrize("notebook", assignment_names())
def test_run_all_with_stubs_reaches_the_end(graded_course, notebook):
    """Does Run All on the untouched student notebook fail only in exercise check cells, as not attempted?

    The blank submission is the committed student notebook (asserted below) and nbgrader ran every cell
    of it, going on past errors: its autograded copy is that Run All, so the notebook runs once here."""
    shipped = nbformat.read(NOTEBOOKS / f"{notebook}.ipynb", as_version=4)
    ran = nbformat.read(graded_course / "autograded" / "blank" / notebook / f"{notebook}.ipynb", as_version=4)
    assert [c.source for c in ran.cells if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get("grade")] \
        == [c.source for c in shipped.cells if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get("grade")]
    unexpected = []
    for cell in ran.cells:
        if cell.cell_type != "code":
            continue
        errors = [out.ename for out in cell.get("outputs", []) if out.output_type == "error"]
        if cell.metadata.get("nbgrader", {}).get("grade", False):  # an exercise's check cell
            if errors != ["NotAttempted"]:
                unexpected.append((cell.id, errors or "no error: the stub passed its check?"))
        elif errors and "raises-exception" not in cell.metadata.get("tags", []):
            unexpected.append((cell.id, errors))
    assert not unexpected, f"{notebook}: cells that fail in Run All with stubs: {unexpected}"
    last = next(c for c in reversed(ran.cells) if c.cell_type == "code")
    assert last.get("execution_count") is not None, f"{notebook}: Run All did not reach the last code cell"
