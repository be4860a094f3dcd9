"""Every notebook works in a real JupyterLab: run in headless Chromium, widgets drawn and responsive.

Solution notebooks run top to bottom; student notebooks run their setup and one untouched
exercise. A full-page screenshot of each lands in test-output/screenshots/{solutions,notebooks}/.
"""
from __future__ import annotations

import json
import urllib.error
from pathlib import Path

import pytest

from labpage import WIDGET_MIME, LabPage, output_text, problems_in

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "test-output" / "screenshots"
SOLUTIONS = sorted(p.name for p in (REPO / "solutions").glob("[0-9][0-9]_*.ipynb"))
STUDENT_NOTEBOOKS = sorted(p.name for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
# What a student must never see under a check: a traceback, let alone one through tapelab's files.
TRACEBACK_MARKERS = ("Traceback", "site-packages", "tapelab/", 'File "')

pytestmark = [pytest.mark.browser, pytest.mark.heavy(200)]


def _code_cells(path: Path) -> list[tuple[int, dict]]:
    """(index, cell) of each code cell, as JupyterLab numbers cells."""
    cells = json.loads(path.read_text())["cells"]
    return [(i, cell) for i, cell in enumerate(cells) if cell["cell_type"] == "code"]


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _setup_cell(path: Path) -> int:
    """The cell with id `setup`, or else the first code cell."""
    code = _code_cells(path)
    return next((i for i, cell in code if cell.get("id") == "setup"), code[0][0])


def _first_exercise(path: Path) -> tuple[int, int]:
    """(answer cell, test cell): the first `exN_M.check()` cell and the code cell just above it."""
    code = _code_cells(path)
    for position, (index, cell) in enumerate(code):
        source = _source(cell).lstrip()
        if position > 0 and source.startswith("ex") and ".check()" in source:
            return code[position - 1][0], index
    raise AssertionError(f"{path.name} has no exercise test cell (`exN_M.check()`)")


def _widget_problems(lab: LabPage, name: str, cells: list[dict]) -> list[str]:
    """Each widget view renders, and moving its controls changes what it draws."""
    problems = []
    for index, cell in enumerate(cells):
        count = sum(WIDGET_MIME in output.get("data", {}) for output in cell["outputs"])
        if not count:
            continue
        state = lab.wait_for_widgets(index, count)
        if state != "ok":
            problems.append(f"cell {index}: " + ("shows 'Error displaying widget'" if state == "error"
                                                 else f"{count} widget(s) did not render within 30 s"))
            continue
        outputs = lab.widget_outputs(index)
        for n in range(outputs.count()):
            moved, trouble = lab.move_controls(outputs.nth(n))
            print(f"{name} cell {index} widget {n + 1}: moved {', '.join(moved) or 'nothing'}")
            problems += [f"cell {index}, widget {n + 1}: {p}" for p in trouble]
    return problems


@pytest.mark.parametrize("name", SOLUTIONS)
def test_solution_notebook_runs_and_its_widgets_redraw_when_moved(open_notebook, name):
    """Run all: does every cell run without error output (bar `raises-exception` ones), does every
    widget render, and does moving its controls change what it draws?"""
    lab = open_notebook(f"solutions/{name}")
    with lab.screenshot_after(SCREENSHOTS / "solutions" / f"{Path(name).stem}.png"):
        lab.run("notebook:run-all-cells")
        cells = lab.cells()
        problems = []
        for index, cell in enumerate(cells):
            if cell["type"] != "code":
                continue
            if cell["execution_count"] is None:
                problems.append(f"cell {index} did not run (run-all stopped before it)")
            elif "raises-exception" not in cell["tags"]:
                problems += [f"cell {index}: {p}" for p in problems_in(cell["outputs"])]
        problems += _widget_problems(lab, name, cells)
        assert not problems, f"{name} in JupyterLab:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", STUDENT_NOTEBOOKS)
def test_student_notebook_reports_an_untouched_exercise_as_not_attempted(open_notebook, name):
    """Does the setup cell run cleanly, and does the first untouched exercise's test cell say
    "Not attempted" instead of showing a traceback from tapelab's internals?"""
    path = REPO / "notebooks" / name
    setup, (answer, test) = _setup_cell(path), _first_exercise(path)
    lab = open_notebook(f"notebooks/{name}")
    with lab.screenshot_after(SCREENSHOTS / "notebooks" / f"{Path(name).stem}.png"):
        lab.run_cells(setup, answer, test)
        cells = lab.cells()
        problems = [f"setup cell {setup}: {p}" for p in problems_in(cells[setup]["outputs"])]
        if cells[setup]["execution_count"] is None:
            problems.append(f"setup cell {setup} did not run")

        outputs = cells[test]["outputs"]
        shown = lab.cell(test).locator(".jp-Cell-outputArea").inner_text()
        errors = [o["ename"] for o in outputs if o["output_type"] == "error"]
        if errors != ["NotAttempted"]:
            problems.append(f"test cell {test}: expected one NotAttempted error, got {errors or 'none'}")
        if "Not attempted" not in shown:
            problems.append(f"test cell {test} does not show 'Not attempted'; it shows: {shown[:500]!r}")
        seen = [m for m in TRACEBACK_MARKERS if m in shown or m in output_text(outputs)]
        if seen:
            problems.append(f"test cell {test} shows a traceback ({', '.join(seen)}): {shown[:800]!r}")
        if any(o["output_type"] == "stream" and o["name"] == "stderr" for o in outputs):
            problems.append(f"test cell {test} wrote to stderr")
        problems += _student_tools_problems(lab)
        assert not problems, f"{name} in JupyterLab:\n" + "\n".join(problems)


# nbgrader's JupyterLab commands: students keep the assignment list (and the Validate button), not the
# instructor tools; binder/jupyter disables those for `make lab`, Binder and this server alike.
_STUDENT_COMMANDS = {"nbgrader:open-assignment-list": True, "nbgrader:open-formgrader": False,
                     "nbgrader:open-formgrader-local": False, "nbgrader:open-create-assignment": False,
                     "nbgrader:open-course-list": False}


def _student_tools_problems(lab) -> list[str]:
    """What a student's JupyterLab shows of nbgrader that it should not, or lacks that it should."""
    has = lab.page.evaluate("ids => ids.map(id => window.jupyterapp.commands.hasCommand(id))", list(_STUDENT_COMMANDS))
    problems = [f"command {command} is {'missing' if wanted else 'offered to students'}"
                for (command, wanted), present in zip(_STUDENT_COMMANDS.items(), has) if present != wanted]
    validate = lab.page.locator(".jp-NotebookPanel-toolbar").get_by_text("Validate", exact=True)
    if not validate.count():
        problems.append("the notebook toolbar has no Validate button")
    try:
        lab.server.api("GET", "/formgrader/api/status")
        problems.append("/formgrader answers (the formgrader server extension is loaded)")
    except urllib.error.HTTPError as error:
        if error.code != 404:
            problems.append(f"/formgrader answers {error.code}, not 404")
    return problems
