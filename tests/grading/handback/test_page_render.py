"""The feedback page is rendered without nbconvert's last pass (a re-parse of the whole page with
BeautifulSoup's pure-Python parser, to add alt text and tabindex): tapelab's exporter (page.InertPage)
must write a page that reads exactly as the stock one, alt text included."""
import nbformat
import pytest
from bs4 import BeautifulSoup
from nbconvert.exporters import HTMLExporter
from traitlets.config import Config

from tapelab.grading.handback import page

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _render(exporter_class, monkeypatch) -> str:
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory

    monkeypatch.setattr(page, "_roles", lambda resources: {})  # no gradebook: the layout needs none
    config = page.configure_feedback(Config())
    converter = GenerateFeedback(coursedir=CourseDirectory(config=config), config=config)
    exporter = exporter_class(parent=converter, config=converter.config)
    for preprocessor in converter.preprocessors:
        if preprocessor.__name__ != "GetGrades":
            exporter.register_preprocessor(preprocessor)
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"![a plot](data:image/png;base64,{PNG}) <img src='data:image/png;base64,{PNG}'>"
                                      " <img src='http://127.0.0.1:9/x.png' alt='gone'> & &nbsp; <b>bold</b>"),
        nbformat.v4.new_code_cell("print(1)\n### BEGIN HIDDEN TESTS\nassert True\n### END HIDDEN TESTS", outputs=[
            nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
            nbformat.v4.new_output("display_data", data={"image/jpeg": PNG, "text/plain": "<Figure>"}),
            nbformat.v4.new_output("display_data", data={"text/html": f"<i>x</i><img src='data:image/png;base64,{PNG}'>"}),
            nbformat.v4.new_output("stream", name="stdout", text="1 < 2\n")])])
    resources = {"nbgrader": {"student": "s", "assignment": "a", "notebook": "n", "db_url": "sqlite://",
                              "score": 1.0, "max_score": 2.0, "late_penalty": 0}, "unique_key": "n"}
    return exporter.from_notebook_node(nb, resources=resources)[0]


@pytest.fixture
def pages(monkeypatch):
    return {"ours": _render(page.InertPage, monkeypatch), "stock": _render(HTMLExporter, monkeypatch)}


def test_the_course_renders_feedback_with_tapelab_exporter():
    """Do nbgrader's GenerateFeedback (and so formgrader's button) use the exporter without the re-parse?"""
    assert page.configure_feedback(Config()).GenerateFeedback.exporter_class is page.InertPage


def test_the_page_reads_as_the_stock_exporter_writes_it(pages):
    """Parsed and written back as nbconvert's last pass does, is tapelab's page the stock page exactly?"""
    assert str(BeautifulSoup(pages["ours"], "html.parser")) == pages["stock"]


def test_every_image_has_alt_text_without_the_reparse(pages):
    """Do the output images (PNG, JPEG) and the markdown images carry alt text as rendered?"""
    images = BeautifulSoup(pages["ours"], "html.parser").find_all("img")
    assert len(images) == 4  # the markdown's two, the PNG and the JPEG outputs (the HTML output's is escaped)
    assert all(image.get("alt") for image in images)
    assert sum(image["alt"] == page.MISSING_ALT for image in images) == 3


def _exporter(monkeypatch):
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory

    monkeypatch.setattr(page, "_roles", lambda resources: {})
    config = page.configure_feedback(Config())
    converter = GenerateFeedback(coursedir=CourseDirectory(config=config), config=config)
    exporter = page.InertPage(parent=converter, config=converter.config)
    for preprocessor in converter.preprocessors:
        if preprocessor.__name__ != "GetGrades":
            exporter.register_preprocessor(preprocessor)
    return exporter


def _student_page(exporter, answer: str) -> str:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## Task\nWrite `f`, **then** run the check."),
        nbformat.v4.new_code_cell("import numpy as np"),
        nbformat.v4.new_code_cell(answer, outputs=[nbformat.v4.new_output("stream", name="stdout", text="ok\n")])])
    resources = {"nbgrader": {"student": "s", "assignment": "a", "notebook": "n", "db_url": "sqlite://",
                              "score": 1.0, "max_score": 2.0, "late_penalty": 0}, "unique_key": "n"}
    return exporter.from_notebook_node(nb, resources=resources)[0]


def test_pages_of_one_class_render_shared_cells_once_and_read_as_if_alone(monkeypatch):
    """Rendering a second student's page with the same exporter: is the shared markdown rendered and the
    shared code highlighted only once, only the student's own cell anew, and is each page the same as
    an exporter of its own renders it?"""
    import pygments
    from nbconvert.filters import markdown_mistune

    page._shared_markdown.cache_clear()
    exporter = _exporter(monkeypatch)
    first = _student_page(exporter, "def f(x):\n    return x")
    calls = {"markdown": 0, "highlight": 0}

    def counted(name, function):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(markdown_mistune.MarkdownWithMath, "render",
                        counted("markdown", markdown_mistune.MarkdownWithMath.render))
    monkeypatch.setattr(pygments, "highlight", counted("highlight", pygments.highlight))
    second = _student_page(exporter, "def f(x):\n    return 2 * x")
    assert calls == {"markdown": 0, "highlight": 1}  # the second student's answer only
    page._shared_markdown.cache_clear()
    assert first == _student_page(_exporter(monkeypatch), "def f(x):\n    return x")
    assert second == _student_page(_exporter(monkeypatch), "def f(x):\n    return 2 * x")



def test_the_page_validates_the_notebook_once_not_each_rebuilt_cell(monkeypatch):
    """Does InertNotebook rebuild cells and outputs without nbformat's schema check of each one (the
    exporter validates the whole notebook after the steps), into a valid notebook, a negative count dropped?"""
    import nbformat.v4.nbbase as nbbase

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("text"), nbformat.v4.new_raw_cell("raw")])
    nb.cells.append({"cell_type": "code", "source": "1", "execution_count": -1, "metadata": {}, "outputs": [
        {"output_type": "execute_result", "execution_count": -3, "data": {"text/plain": "1"}, "metadata": {}},
        {"output_type": "stream", "name": "stdout", "text": "x"},
        {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t"]}]})
    checked = []
    monkeypatch.setattr(nbbase, "validate", lambda node, ref=None: checked.append(ref))
    monkeypatch.setattr(page, "_roles", lambda resources: {})
    clean, _ = page.InertNotebook().preprocess(nb, {})
    assert checked == [None]  # the new, empty notebook only
    monkeypatch.undo()
    nbformat.validate(clean)
    assert clean.cells[2].execution_count is None and clean.cells[2].outputs[0].execution_count is None
    assert [o.output_type for o in clean.cells[2].outputs] == ["execute_result", "stream", "error"]
