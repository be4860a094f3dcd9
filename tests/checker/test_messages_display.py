"""What a student sees when a check runs: every outcome as one styled box with a plain-text and a JSON
form, stderr kept quiet down to file descriptor 2, and test cells that let Run All go on (issue 15)."""
import copy
import json
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tapelab.causes import cause
from tapelab.grading.handback.page import PAGE, InertNotebook
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import MIME, Incorrect, Message, NotAttempted
from tapelab.paths import NOTEBOOKS, SOLUTIONS, assignment_names
from tapelab.quiet import Quiet, StderrFd
from tapelab.release import TEST_CELL_TAG, tag_test_cells
from tapelab.release_predictions import empty_predictions

ANSI = re.compile(r"\x1b\[")

pytestmark = pytest.mark.heavy(25)  # one real kernel (TensorFlow inside it) for the module


# -- fd-level stderr ----------------------------------------------------------------------------------


def test_a_c_level_write_to_fd_2_during_a_check_is_kept_as_a_feedback_line(capfd):
    """Does a write straight to file descriptor 2 (as TensorFlow's C++ logging does) end up in
    `Quiet.lines` and not on the process's stderr?"""
    with Quiet() as quiet:
        os.write(2, b"W tensorflow/core/example.cc:12] a C++ warning\n")
    assert quiet.lines == ["W tensorflow/core/example.cc:12] a C++ warning"]
    assert "a C++ warning" not in capfd.readouterr().err


def test_fd_2_is_restored_when_the_checked_code_raises(capfd):
    """After an exception inside the block, does fd 2 write to the real stderr again, with the text
    written before the exception still kept?"""
    with pytest.raises(ZeroDivisionError):
        with Quiet() as quiet:
            os.write(2, b"before the error\n")
            1 / 0
    os.write(2, b"after the block\n")
    err = capfd.readouterr().err
    assert quiet.lines == ["before the error"]
    assert "after the block" in err and "before the error" not in err


def test_nested_captures_each_keep_their_own_text(capfd):
    """Does an inner capture take only what is written inside it, and give fd 2 back to the outer one?"""
    with StderrFd() as outer:
        os.write(2, b"outer one\n")
        with StderrFd() as inner:
            os.write(2, b"inner\n")
        os.write(2, b"outer two\n")
    assert (outer.lines, inner.lines) == (["outer one", "outer two"], ["inner"])
    assert "outer" not in capfd.readouterr().err


def test_a_closed_fd_2_is_captured_then_closed_again():
    """With fd 2 closed on entry (a detached process), are writes still captured, and is fd 2 closed after?"""
    saved = os.dup(2)
    try:
        os.close(2)
        with StderrFd() as capture:
            os.write(2, b"while closed\n")
        with pytest.raises(OSError):
            os.fstat(2)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    assert capture.lines == ["while closed"]


def test_tensorflow_printing_from_cpp_stays_off_stderr_under_a_check(capfd):
    """Does a real TensorFlow C++ write to stderr (`tf.print`, which its kernel writes to fd 2) made by
    the student's code land in the call's log lines, not in the cell's stderr?"""
    import tensorflow as tf

    call = Exercise().run(lambda: tf.print("tapelab-from-tf-print", tf.constant([1.0, 2.0])), "Calling `f()`")
    assert any("tapelab-from-tf-print" in line for line in call.logs), call.logs
    assert "tapelab-from-tf-print" not in capfd.readouterr().err


# -- one rich display for every outcome -----------------------------------------------------------------


def _failure(kind=Incorrect, *args, **kwargs):
    failure = kind(*args, **kwargs)
    failure.exercise = "3.2"
    return failure.box()


def test_incorrect_renders_as_a_styled_box_with_code_spans_and_wrapping():
    """Is an Incorrect message a styled box (like Correct), with `backticks` as <code> and text that wraps
    at spaces rather than mid-word?"""
    box = _failure(Incorrect, "`tape.gradient(z, x)` returned `None`.", cause="not-watched")
    page = box._repr_html_()
    assert page.startswith("<div data-tapelab-outcome='incorrect' data-tapelab-cause='not-watched'")
    assert "background:" in page and "border-left:" in page
    assert "<code>tape.gradient(z, x)</code>" in page and "`" not in page
    assert "overflow-wrap:break-word" in page and "<pre" not in page and "break-all" not in page


def test_every_outcome_has_its_own_label_and_colour():
    """Do Correct, Hint, Solution, Incorrect and Not attempted each show their own label and background?"""
    kinds = ["correct", "hint", "solution", "incorrect", "not-attempted"]
    pages = [Message(kind, "text")._repr_html_() for kind in kinds]
    labels = [re.search(r"<b [^>]*>([^<]*):</b>", page).group(1) for page in pages]
    backgrounds = {re.search(r"background:(#[0-9a-f]+)", page).group(1) for page in pages}
    assert labels == ["Correct", "Hint", "Solution", "Incorrect", "Not attempted"]
    assert len(backgrounds) == len(kinds)


def test_expected_and_actual_are_shown_side_by_side_when_both_are_given():
    """Given both values, does the box show an Expected and a Your answer column, and the plain text
    both lines; given one, neither?"""
    both = _failure(Incorrect, "`dy_dx` is wrong.", expected="12.0", actual="3.0")
    one = _failure(Incorrect, "`dy_dx` is wrong.", expected="12.0")
    assert re.search(r"Expected</th>.*Your answer</th>.*12\.0.*3\.0", both._repr_html_())
    assert repr(both).splitlines()[1:] == ["  expected:    12.0", "  your answer: 3.0"]
    assert "<table" not in one._repr_html_() and "expected" not in repr(one)


def test_the_display_data_carries_outcome_exercise_cause_and_its_title():
    """Does the bundle hold plain text, HTML and tapelab's JSON naming the outcome, exercise, cause code
    and the catalogue's title for it?"""
    bundle = _failure(Incorrect, "`x` was never watched.", cause="not-watched")._repr_mimebundle_()
    assert bundle["text/plain"] == "Incorrect: `x` was never watched."
    assert bundle[MIME] == {"outcome": "incorrect", "exercise": "3.2", "cause": "not-watched",
                            "cause_title": cause("not-watched").title, "message": "`x` was never watched.",
                            "expected": None, "actual": None}
    assert json.loads(json.dumps(bundle[MIME])) == bundle[MIME]


def test_passing_outcomes_keep_their_two_forms():
    """Do Correct, Hint and Solution boxes stay plain text and HTML only (no JSON, no failure marks)?"""
    for kind in ("correct", "hint", "solution"):
        bundle = Message(kind, "fine", exercise="3.2")._repr_mimebundle_()
        assert set(bundle) == {"text/plain", "text/html"} and "data-tapelab" not in bundle["text/html"]


def test_not_attempted_and_a_bare_mismatch_carry_no_cause():
    """Is the cause null in the JSON of a Not attempted box and of an Incorrect with no established cause?"""
    assert _failure(NotAttempted, "stub")._repr_mimebundle_()[MIME]["outcome"] == "not-attempted"
    assert {_failure(k, "m")._repr_mimebundle_()[MIME]["cause"] for k in (NotAttempted, Incorrect)} == {None}


def test_a_failed_check_names_its_exercise():
    """Does a failure raised anywhere inside `check` come out with the exercise's number for the box?"""
    class Three(Exercise):
        number, answer, visible_cases = "3.1", "f", (1,)

        def check_case(self, fn, case, facts):
            raise Incorrect("wrong")

    with pytest.raises(Incorrect) as failure:
        Three().check(lambda: None)
    assert failure.value.exercise == "3.1" and failure.value.box().data()["exercise"] == "3.1"
    assert failure.value.status_line().startswith("Incorrect: exercise 3.1.")


# -- in a real kernel (one kernel for all of it) ------------------------------------------------------

_NOISY_WRONG = "import os\ndef cubic_slope(x):\n    os.write(2, b'tapelab-captured-noise\\n')\n    return 0.0\n"
_NOISY_RIGHT = ("import os\nimport tensorflow as tf\ndef cubic_slope(x):\n    os.write(2, b'tapelab-captured-noise\\n')\n"
                "    x = tf.Variable(x)\n    with tf.GradientTape() as tape:\n        y = 3 * x**3 - 2 * x**2 + x\n"
                "    return tape.gradient(y, x)\n")


@pytest.fixture(scope="module")
def kernel_run():
    """A notebook run in a real ipykernel, which forwards fd 2 to the cell's stderr (capture_fd_output;
    ipykernel turns that off under pytest, so the kernel gets the environment without pytest's variable)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import tapelab.checker.exercise\nfrom tapelab.exercises.basic_tape import ex1_1"),
                nbformat.v4.new_code_cell("ex1_1.check()"),
                nbformat.v4.new_code_cell(_NOISY_WRONG),
                nbformat.v4.new_code_cell("ex1_1.check()"),
                nbformat.v4.new_code_cell(_NOISY_RIGHT),
                nbformat.v4.new_code_cell("ex1_1.check()"),
                nbformat.v4.new_code_cell("import os, sys, time\nos.write(2, b'tapelab-control-noise\\n')\n"
                                          "time.sleep(0.5)\nsys.stderr.flush()")]
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    NotebookClient(nb, kernel_name="python3", allow_errors=True, timeout=120).execute(env=env)
    return nb


def test_a_failed_check_in_a_kernel_shows_the_box_then_ends_in_a_plain_error(kernel_run):
    """Does an untouched exercise's check display the Not attempted box (HTML and JSON) and end the cell
    with one plain error line (no ANSI, no checker traceback) that nbgrader scores as failed?"""
    *shown, error = kernel_run.cells[1].outputs
    assert [o.output_type for o in shown] == ["display_data"]
    assert "Not attempted:" in shown[0].data["text/html"] and shown[0].data[MIME]["exercise"] == "1.1"
    assert "`cubic_slope` is not defined yet" in shown[0].data[MIME]["message"]
    assert error.output_type == "error" and error.ename == "NotAttempted"
    assert "`cubic_slope` is not defined yet" in error.evalue
    assert error.traceback == ["Not attempted: exercise 1.1. This cell shows as an error until its check says Correct."]
    assert not ANSI.search(error.traceback[0])


def test_nbgrader_scores_failed_checks_zero_and_a_passing_one_full(kernel_run):
    """Does nbgrader's own rule give the Not attempted and Incorrect cells 0 and the passing cell full
    points, although the passing answer wrote to fd 2 (which would have scored it 0)?"""
    from nbgrader.utils import determine_grade

    scores = []
    for index in (1, 3, 5):
        cell = copy.deepcopy(kernel_run.cells[index])
        cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "points": 2,
                                     "grade_id": f"cell{index}", "schema_version": 3}
        scores.append(determine_grade(cell))
    assert scores == [(0, 2.0), (0, 2.0), (2.0, 2.0)]


def test_a_c_level_write_under_a_check_in_a_kernel_reaches_no_cell(kernel_run):
    """Under ipykernel, does a student's write to fd 2 during a check stay out of every cell's outputs,
    while the same write outside a check does reach the notebook (so the kernel does forward fd 2)?"""
    text = json.dumps([cell.outputs for cell in kernel_run.cells[1:]])
    assert kernel_run.cells[3].outputs[-1].ename == "Incorrect"
    assert "tapelab-captured-noise" not in text
    assert "tapelab-control-noise" in text


# -- Run All goes past a failing test cell -----------------------------------------------------------------


def _role(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def test_the_release_tags_every_locked_test_cell_and_nothing_else(tmp_path):
    """Are the locked, graded code cells (the tests) tagged `raises-exception` on top of the cells the
    instructor tagged (a demo that raises on purpose), and no answer cell? Is every source unchanged but the
    predictions, which the student makes (tapelab.release_predictions)?"""
    name = assignment_names()[0]
    tag_test_cells(SOLUTIONS / f"{name}.ipynb", tmp_path / "tagged.ipynb")
    source = nbformat.read(SOLUTIONS / f"{name}.ipynb", as_version=4).cells
    cells = nbformat.read(tmp_path / "tagged.ipynb", as_version=4).cells

    def tagged(cells):
        return {c.id for c in cells if TEST_CELL_TAG in c.metadata.get("tags", [])}

    tests = {c.id for c in cells if _role(c).get("grade") and _role(c).get("locked") and c.cell_type == "code"}
    assert tests and not tests & tagged(source)
    assert tagged(cells) == tests | tagged(source)
    student = nbformat.read(SOLUTIONS / f"{name}.ipynb", as_version=4)
    assert empty_predictions(student) > 0
    assert [c.source for c in cells] == [c.source for c in student.cells]


@pytest.mark.parametrize("name", assignment_names())
def test_student_test_cells_carry_the_tag(name):
    """Does every test cell of the committed student notebook carry `raises-exception` (run `make release`)?"""
    cells = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4).cells
    tests = [c for c in cells if _role(c).get("grade") and not _role(c).get("solution")]
    assert tests and all(TEST_CELL_TAG in c.metadata.get("tags", []) for c in tests)


# -- the feedback page wraps --------------------------------------------------------------------------


def _feedback_page(nb) -> str:
    """The page nbgrader's GenerateFeedback renders with tapelab's template (its exporter settings), from
    a notebook alone: no gradebook is needed to lay out outputs."""
    import nbgrader
    from nbconvert.exporters import HTMLExporter
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from traitlets.config import Config

    formgrader = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
    c = Config()
    c.HTMLExporter.template_name = "feedback"
    c.HTMLExporter.extra_template_basedirs = [str(formgrader / "templates")]
    c.HTMLExporter.extra_template_paths = [str(formgrader / "static" / "node_modules" / "bootstrap" / "dist" / "css")]
    c.HTMLExporter.template_file = str(PAGE)
    exporter = HTMLExporter(config=c)
    exporter.register_preprocessor(CSSHTMLHeaderPreprocessor(), enabled=True)
    resources = {"nbgrader": {"notebook": "06_fit_vs_custom", "score": 0.0, "max_score": 4.0, "late_penalty": 0}}
    return exporter.from_notebook_node(nb, resources=resources)[0]


def test_the_feedback_page_wraps_a_failed_checks_box_and_error_line():
    """On the HTML feedback page, does a failure's box survive sanitising as text with code spans, and
    is the error line's <pre> wrapped by the page's last style (it ran off the page before)?"""
    from bs4 import BeautifulSoup

    failure = Incorrect("Calling `train_step(model, batch)` raised `ValueError: " + "shapes differ " * 40 + "`.")
    failure.exercise = "6.2"
    box = failure.box()._repr_mimebundle_()
    cell = nbformat.v4.new_code_cell("ex6_2.check()", outputs=[
        nbformat.v4.new_output("display_data", data={"text/plain": box["text/plain"],
                                                     "text/html": InertNotebook().sanitize_html_tags(box["text/html"])}),
        nbformat.v4.new_output("error", ename="Incorrect", evalue=str(failure), traceback=[failure.status_line()])])
    soup = BeautifulSoup(_feedback_page(nbformat.v4.new_notebook(cells=[cell])), "html.parser")
    last_style = soup.head.find_all("style")[-1].get_text()
    assert re.search(r"div\.output_area pre[^{]*\{[^}]*white-space: pre-wrap", last_style), last_style
    assert "word-break: normal" in last_style
    assert soup.select_one("div.output_subarea code").get_text() == "train_step(model, batch)"
    assert failure.status_line() in soup.select_one("div.output_error pre").get_text()
