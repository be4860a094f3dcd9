"""Do the instructor notebooks follow the course's conventions (DESIGN.md, notebook conventions)?"""
import re

import nbformat
import pytest

from tapelab.paths import SOLUTIONS, assignment_names

NAMES = assignment_names()


def _cells(name):
    return nbformat.read(SOLUTIONS / f"{name}.ipynb", as_version=4).cells


def _meta(cell):
    return cell.metadata.get("nbgrader", {})


@pytest.mark.parametrize("name", NAMES)
def test_opening_title_binder_link_and_setup(name):
    """Does the notebook open with a title, a Binder link to itself and a setup cell that quiets TensorFlow first?"""
    cells = _cells(name)
    assert cells[0].cell_type == "markdown" and cells[0].source.startswith(f"# {name[:2]}")
    assert f"urlpath=lab/tree/notebooks/{name}.ipynb" in cells[0].source
    setup = next(c for c in cells if c.cell_type == "code")
    assert setup.get("id") == "setup"
    log_line = setup.source.index('os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"')
    assert log_line < setup.source.index("import tensorflow")
    assert 'os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"' in setup.source
    assert "keras.utils.set_random_seed(0)" in setup.source


@pytest.mark.parametrize("name", NAMES)
def test_markdown_before_every_code_cell(name):
    """Is every code cell introduced by text (test cells follow their answer cell)?"""
    cells = _cells(name)
    for before, cell in zip(cells, cells[1:]):
        if cell.cell_type == "code" and not _meta(cell).get("grade"):
            assert before.cell_type == "markdown", f"code cell {cell.get('id')} has no text before it"


@pytest.mark.parametrize("name", NAMES)
def test_exercises_are_complete(name):
    """Has each exercise a heading, one answer cell, and a locked test cell with points, visible and hidden tests?
    An exercise's text may run over several markdown cells (each under ~150 words) before its answer cell."""
    cells = _cells(name)
    answers = [i for i, c in enumerate(cells) if _meta(c).get("solution")]
    assert len(answers) >= 4, "at least four graded exercises"
    for i in answers:
        ex = cells[i].metadata.nbgrader.grade_id.removesuffix("_answer")
        start = i  # the exercise's text: the markdown cells right before its answer cell
        while start > 0 and cells[start - 1].cell_type == "markdown":
            start -= 1
        heading = "\n\n".join(cell.source for cell in cells[start:i])
        number = ex.removeprefix("ex").replace("_", ".")
        assert re.search(rf"^### Exercise {re.escape(number)}: ", heading, re.M), heading
        assert f"{ex}.hint()" in heading and (f"{ex}.solution()" in heading or "solution" in heading)
        test = cells[i + 1]
        assert _meta(test).get("grade") and _meta(test).get("locked") and _meta(test).get("points", 0) > 0
        visible, _, hidden = test.source.partition("### BEGIN HIDDEN TESTS")
        assert f"{ex}.check()" in visible and f"{ex}.check(" in hidden


@pytest.mark.parametrize("name", NAMES)
def test_no_timings_or_progress_bars_in_outputs(name):
    """Are stored outputs free of timings and progress bars, so that they stay stable?"""
    for cell in _cells(name):
        for output in cell.get("outputs", []):
            text = output.get("text", "")
            assert not re.search(r"\d+(\.\d+)?\s?(ms|s)/step|ETA|\d+/\d+ \[=", text), text


@pytest.mark.parametrize("name", NAMES)
def test_markdown_cells_are_short(name):
    """Is every markdown cell's prose (its fenced code aside) about 150 words at most, one idea a cell?"""
    for cell in _cells(name):
        if cell.cell_type == "markdown":
            words = len(re.sub(r"```.*?```", "", cell.source, flags=re.S).split())
            assert words <= 160, f"markdown cell {cell.get('id')} has {words} words: split it or say less"


QUESTION_CALL = re.compile(r"\b(q(\d+)_(\d+)[a-z]?)\.(predict|reveal)\(")


@pytest.mark.parametrize("name", NAMES)
def test_questions_are_asked_then_revealed_in_their_section_and_the_model_prediction_is_right(name):
    """Is every "predict, then run" question (qN_M) predicted, then revealed, inside section M of notebook N,
    and does the instructor copy's stored reveal say Correct (its model prediction is what TensorFlow gives)?"""
    section, seen = None, {}
    for cell in _cells(name):
        if cell.cell_type == "markdown":
            heading = re.search(r"^## (\d+)\.", cell.source, re.MULTILINE)
            section = heading.group(1) if heading else section
            continue
        for question, notebook, number, verb in QUESTION_CALL.findall(cell.source):
            assert int(notebook) == int(name[:2]) and number == section, f"{question} is in section {section}"
            seen.setdefault(question, []).append(verb)
            if verb == "reveal":
                shown = " ".join(str(o.get("data", {}).get("text/plain", "")) for o in cell.get("outputs", []))
                assert shown.startswith("Correct"), f"{question}'s stored reveal: {shown!r}"
    assert all(verbs == ["predict", "reveal"] for verbs in seen.values()), seen


@pytest.mark.parametrize("name", NAMES)
def test_every_question_a_notebook_imports_is_asked_and_its_module_has_no_other(name):
    """Does the setup cell import exactly the questions its question module declares, and is each of them asked?"""
    import importlib

    cells = _cells(name)
    imported = re.search(r"from (tapelab\.exercises\.questions\.\w+) import (.+)", cells[2].source)
    asked = {q for cell in cells if cell.cell_type == "code" for q, *_ in QUESTION_CALL.findall(cell.source)}
    if imported is None:
        assert not asked, f"{name} asks {sorted(asked)} without importing them"
        return
    from tapelab.checker.predictions import Question

    module = importlib.import_module(imported.group(1))
    declared = {name for name in module.__all__ if isinstance(getattr(module, name), Question)}
    assert {n.strip() for n in imported.group(2).split(",")} == declared == asked


EXPLORER_CALL = re.compile(r"^\s*(?:\w+\s*=\s*)?([A-Z]\w*(?:Explorer|View|Map))\((.*)\)\s*$", re.MULTILINE)


@pytest.mark.parametrize("name", NAMES)
def test_every_explorer_asks_a_question_of_its_section_after_that_question_is_revealed(name):
    """Does every explorer a notebook opens ask first (`ask=qN_M, truth=...`), with a question of its own section
    whose reveal cell, earlier in the section, computes the `truth` it is given?"""
    section, revealed, explorers = None, {}, 0
    for cell in _cells(name):
        if cell.cell_type == "markdown":
            heading = re.search(r"^## (\d+)\.", cell.source, re.MULTILINE)
            section = heading.group(1) if heading else section
            continue
        for question, _, number, verb in QUESTION_CALL.findall(cell.source):
            if verb == "reveal":
                revealed[question] = (number, re.search(rf"{question}\.reveal\((\w+)\)", cell.source))
        for widget, arguments in EXPLORER_CALL.findall(cell.source):
            explorers += 1
            asked = re.search(r"\bask=(q\d+_\d+[a-z]?), truth=(\w+)", arguments)
            assert asked, f"{widget} in section {section} of {name} does not ask first: {arguments}"
            question, truth = asked.groups()
            assert question in revealed and revealed[question][0] == section, f"{widget} asks {question} first"
            shown = revealed[question][1]
            assert shown and shown.group(1) == truth, f"{widget} is told {truth}, {question} reveals another value"
    widgets_imported = "tapelab.widgets" in _cells(name)[2].source
    assert explorers > 0 or not widgets_imported, f"{name} imports widgets and opens none"
