"""Run All on a fresh student notebook in a real JupyterLab reaches the last cell (issue 15, items 9-10).

Every exercise is untouched, so every test cell fails its check; the release tags those cells
`raises-exception`, for which JupyterLab lets the run go on. Each test cell shows the styled
Not attempted box, and the notebook's last cell (a widget) runs and renders; a wrong answer then
shows the Incorrect box. One server and one page for the module; the screenshot lands in test-output/screenshots/run_all/.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from labpage import WIDGET_MIME, LabPage, output_text

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = "notebooks/01_basic_tape.ipynb"  # the quickest to run: no training loop
SCREENSHOT = REPO / "test-output" / "screenshots" / "run_all" / "01_basic_tape.png"
FEEDBACK_MIME = "application/vnd.tapelab.feedback+json"
TRACEBACK_MARKERS = ("Traceback", "site-packages", "tapelab/", 'File "')
# The boxes' computed backgrounds: #f1f3f4 and #fdecea, the Not attempted and Incorrect colours of
# tapelab.checker.messages.
NOT_ATTEMPTED_BACKGROUND = "rgb(241, 243, 244)"
INCORRECT_BACKGROUND = "rgb(253, 236, 234)"
# A wrong answer to Exercise 1.1 (the slope of y = x³ instead of the cubic's).
WRONG_ANSWER = ("def cubic_slope(x):\n    x = tf.Variable(x)\n    with tf.GradientTape() as tape:\n"
                "        y = x**3\n    return tape.gradient(y, x)\n")
_SET_SOURCE = """([path, index, source]) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context && w.context.path === path);
  panel.content.model.cells.get(index).sharedModel.setSource(source);
}"""

pytestmark = [pytest.mark.browser, pytest.mark.heavy(60)]


def _roles() -> list[dict]:
    return [c.metadata.get("nbgrader", {}) for c in nbformat.read(REPO / NOTEBOOK, as_version=4).cells]


def _test_cells() -> list[int]:
    """Indices of the locked test cells of the student notebook, as JupyterLab numbers cells."""
    return [i for i, role in enumerate(_roles()) if role.get("grade") and not role.get("solution")]


def _answer_cell(test: int) -> int:
    """The answer cell a test cell checks: the nearest answer cell above it."""
    return max(i for i, role in enumerate(_roles()[:test]) if role.get("solution"))


@pytest.fixture(scope="module")
def ran(lab_server, browser_context) -> Iterator[tuple[LabPage, list[dict]]]:
    """The student notebook after one Run All from a fresh kernel, and its cells as JupyterLab holds them."""
    lab = LabPage(browser_context.new_page(), lab_server, NOTEBOOK)
    try:
        lab.open()
        with lab.screenshot_after(SCREENSHOT):
            lab.run("notebook:run-all-cells")
            yield lab, lab.cells()
    finally:
        lab.page.close()
        lab_server.shutdown_kernels(wait=False)


def test_run_all_reaches_the_last_cell_past_every_untouched_exercise(ran):
    """After Run All with every exercise and prediction untouched, has every code cell run, the last one
    included, and does the explorer (the last widget, before the optional section) render?"""
    lab, cells = ran
    code = [i for i, cell in enumerate(cells) if cell["type"] == "code"]
    not_run = [i for i in code if cells[i]["execution_count"] is None]
    assert _test_cells() and not not_run, f"cells that did not run: {not_run}"
    widget = max(i for i in code if "Explorer(" in cells[i]["source"])
    assert any(WIDGET_MIME in output.get("data", {}) for output in cells[widget]["outputs"]), cells[widget]["outputs"]
    assert lab.wait_for_widgets(widget, 1) == "ok"


def test_every_untouched_exercise_shows_the_styled_not_attempted_box(ran):
    """Does each test cell show the Not attempted box (styled, with its exercise in tapelab's JSON), end in a
    NotAttempted error for nbgrader, and show no traceback?"""
    lab, cells = ran
    problems = []
    for index in _test_cells():
        outputs = cells[index]["outputs"]
        data = [o["data"][FEEDBACK_MIME] for o in outputs if FEEDBACK_MIME in o.get("data", {})]
        if [d["outcome"] for d in data] != ["not-attempted"] or not data[0]["exercise"]:
            problems.append(f"cell {index}: tapelab's JSON is {data}")
        if not outputs or outputs[-1]["output_type"] != "error" or outputs[-1]["ename"] != "NotAttempted":
            problems.append(f"cell {index}: does not end in a NotAttempted error: {outputs}")
        box = lab.cell(index).locator("[data-tapelab-outcome='not-attempted']")
        if box.count() != 1 or not box.is_visible():
            problems.append(f"cell {index}: no visible Not attempted box")
            continue
        background = box.evaluate("el => getComputedStyle(el).backgroundColor")
        if background != NOT_ATTEMPTED_BACKGROUND:
            problems.append(f"cell {index}: the box's background is {background}")
        if box.locator("code").count() == 0 or "`" in box.inner_text():
            problems.append(f"cell {index}: code is not in code style: {box.inner_html()[:300]}")
        shown = lab.cell(index).locator(".jp-Cell-outputArea").inner_text()
        seen = [m for m in TRACEBACK_MARKERS if m in shown or m in output_text(outputs)]
        if seen:
            problems.append(f"cell {index} shows a traceback ({', '.join(seen)}): {shown[:500]!r}")
    assert not problems, "\n".join(problems)


def test_a_wrong_answer_shows_the_styled_incorrect_box(ran):
    """After Run All, does a wrong answer to the first exercise turn its test cell's box into a styled,
    wrapped Incorrect box that says what is wrong, still ending in an error for nbgrader?"""
    lab, _ = ran
    test = _test_cells()[0]
    answer = _answer_cell(test)
    lab.page.evaluate(_SET_SOURCE, [NOTEBOOK, answer, WRONG_ANSWER])
    lab.run_cells(answer, test)
    outputs = lab.cells()[test]["outputs"]
    box = lab.cell(test).locator("[data-tapelab-outcome='incorrect']")
    assert box.count() == 1 and box.is_visible(), lab.cell(test).inner_text()
    style = box.evaluate("el => [getComputedStyle(el).backgroundColor, getComputedStyle(el).whiteSpace, "
                         "el.scrollWidth <= el.clientWidth]")
    assert style == [INCORRECT_BACKGROUND, "normal", True]
    assert box.inner_text().startswith("Incorrect:") and "`" not in box.inner_text()
    assert outputs[-1]["output_type"] == "error" and outputs[-1]["ename"] == "Incorrect"
