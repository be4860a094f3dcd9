"""A graded notebook made inert (tapelab.grading.handback.inert) shows nothing a student's markup can run in
formgrader's own view (issue 48, class 1): rendered with formgrader's template and exporter, as the
instructor's server renders a submission, the page has only the template's own scripts and handlers.

The browser half (a real formgrader in Chromium, on the course hub) is tests/hub/test_hub.py.
"""
import json
import re

import nbformat
import pytest
from bs4 import BeautifulSoup

from grade_fixtures import make_course
from hostile_feedback import STUDENT_TEXT, hostile
from tapelab.grading.handback.inert import KEPT_FILES, inert_folder, inert_notebook

URL = "http://127.0.0.1:9"
ACTIVE_TAGS = ("iframe", "frame", "object", "embed", "base", "svg", "math", "video", "audio", "template", "meta")
URL_ATTRIBUTES = ("href", "src", "action", "formaction", "data", "srcdoc", "xlink:href")


def formgrader_page(nb) -> str:
    """The HTML formgrader's SubmissionHandler writes for `nb` (its exporter, template and resources)."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    config = Config()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {"assignment_id": "a", "notebook_id": "n", "submission_id": "s", "index": 0, "total": 1,
                 "base_url": "/user/i", "student": "s1", "last_name": "", "first_name": "",
                 "notebook_path": "/user/i/course/autograded/s1/a/n.ipynb"}
    html, _ = HTMLExporter(config=config).from_notebook_node(nb, resources=resources)
    return html


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("inert-formgrader"))
    # the control: what stock nbconvert accepts as it is
    control = nbformat.reads(json.dumps(hostile(root, URL, control=True)), as_version=4)
    empty = formgrader_page(nbformat.v4.new_notebook())
    return {"raw": formgrader_page(control), "inert": formgrader_page(inert_notebook(hostile(root, URL))),
            "empty": empty}


def _soup(page: str) -> BeautifulSoup:
    return BeautifulSoup(page, "html.parser")


def _scripts(page: str) -> list[str]:
    return [str(tag) for tag in _soup(page).find_all("script")]


def _handlers(page: str) -> list[tuple[str, str]]:
    return sorted((tag.name, name) for tag in _soup(page).find_all(True) for name in tag.attrs
                  if name.lower().startswith("on"))


def test_the_raw_notebook_would_run_script_in_formgrader(pages):
    """(The control: rendered as it is, the student's notebook does put its own script into the page.)"""
    assert len(_scripts(pages["raw"])) > len(_scripts(pages["empty"]))
    assert "__pwned_" in "".join(_scripts(pages["raw"])) or _handlers(pages["raw"]) != _handlers(pages["empty"])


def test_made_inert_the_page_has_only_the_templates_scripts(pages):
    """Does the inert notebook's page carry exactly the script elements of an empty notebook's, none of the
    student's?"""
    assert _scripts(pages["inert"]) == _scripts(pages["empty"])
    assert "__pwned_" not in "".join(_scripts(pages["inert"]))


def test_made_inert_no_student_element_has_a_handler_or_is_active(pages):
    """No on* attribute beyond the template's, no iframe, object, svg, base, meta refresh or the like, no
    javascript: or data:text/html URL."""
    assert _handlers(pages["inert"]) == _handlers(pages["empty"])
    empty_active = [tag.name for tag in _soup(pages["empty"]).find_all(ACTIVE_TAGS)]
    assert [tag.name for tag in _soup(pages["inert"]).find_all(ACTIVE_TAGS)] == empty_active
    urls = [tag[name] for tag in _soup(pages["inert"]).find_all(True) for name in URL_ATTRIBUTES if tag.has_attr(name)]
    assert not [url for url in urls if re.match(r"\s*(javascript|vbscript|data:(?!image/(png|jpeg|gif);))", url, re.I)]


def test_made_inert_the_instructor_still_reads_what_the_student_wrote(pages):
    """The student's text, and the markup they tried shown as text."""
    text = _soup(pages["inert"]).get_text()
    assert STUDENT_TEXT in text
    assert "<script>window.__pwned_md_script=1" in text


def test_inert_folder_keeps_notebooks_and_nbgraders_files_only(tmp_path):
    """Every other file of a submission's folder goes (formgrader would serve evil.html to the instructor)."""
    folder = tmp_path / "s1" / "a"
    folder.mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("<script>x()</script> hello")])
    nbformat.write(nb, folder / "a.ipynb")
    (folder / "evil.html").write_text("<script>x()</script>")
    (folder / "not-a-notebook.ipynb").write_text("{")
    for name in KEPT_FILES:
        (folder / name).write_text("kept")
    (folder / "link").symlink_to("/etc/passwd")
    removed = inert_folder(tmp_path)
    assert sorted(removed) == ["s1/a/evil.html", "s1/a/link"]
    assert sorted(p.name for p in folder.iterdir()) == sorted(["a.ipynb", "not-a-notebook.ipynb", *KEPT_FILES])
    cleaned = json.loads((folder / "a.ipynb").read_text())
    assert "<script>" not in json.dumps(cleaned) and "hello" in "".join(cleaned["cells"][0]["source"])
    assert json.loads((folder / "not-a-notebook.ipynb").read_text())["cells"] == []
