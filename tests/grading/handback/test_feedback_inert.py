"""Feedback HTML is inert and shows no hidden test, from `write_feedback` and from the real
`nbgrader generate_feedback` alike (issue 13, class 3 and the feedback half of class 2).

One course, two hand-written autograded notebooks (no kernel): mallory answered right and tried
every vector of hostile_feedback; frank answered wrong and his traceback quotes the hidden test,
as stock `nbgrader autograde` leaves it. The browser half is tests/browser/test_feedback_browser.py.
"""
import html
import re
import subprocess
import sys

import pytest
from bs4 import BeautifulSoup
from traitlets.config.loader import PyFileConfigLoader

from grade_fixtures import TINY, TINY_HIDDEN, make_course
from hostile_feedback import HONEST_PNG, MISSING_ATTACHMENT, STUDENT_TEXT, failing, hand_in, hostile
from tapelab.grading.course import open_course
from tapelab.grading.handback.page import InertNotebook, configure_feedback, write_feedback
from tapelab.paths import GRADER
from tapelab.release import nbgrader_env

URL = "http://127.0.0.1:9"  # never fetched here: the payloads only need an address
ACTIVE_TAGS = ("script", "iframe", "frame", "object", "embed", "form", "input", "button", "base", "link",
               "svg", "math", "video", "audio", "source", "template", "noscript", "details", "marquee")
URL_ATTRIBUTES = ("href", "src", "action", "formaction", "data", "srcdoc", "poster", "background", "xlink:href")
SAFE_URL = re.compile(r"#[\w-]*|https?://[^\s\"'<>]*|data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/=]*")


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Both students' pages from write_feedback, then from `nbgrader generate_feedback` in the course."""
    root = make_course(tmp_path_factory.mktemp("inert"))
    hand_in(root, "mallory", hostile(root, URL))
    hand_in(root, "frank", failing(root))
    course = open_course(root)
    try:
        ours = {student: write_feedback(course, student, TINY, TINY).read_text() for student in ("mallory", "frank")}
    finally:
        course.close()
    result = subprocess.run([sys.executable, "-m", "nbgrader", "generate_feedback", TINY, "--force"], cwd=root,
                            env=nbgrader_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    theirs = {student: (root / "feedback" / student / TINY / f"{TINY}.html").read_text() for student in ours}
    return {"tapelab": ours, "nbgrader": theirs, "root": root}


PATHS = pytest.mark.parametrize("path", ["tapelab", "nbgrader"])


def _soup(pages, path, student="mallory") -> BeautifulSoup:
    return BeautifulSoup(pages[path][student], "html.parser")


def _text(page: str) -> str:
    """What a reader sees, whitespace removed (tags dropped, entities decoded)."""
    return re.sub(r"\s+", "", html.unescape(re.sub(r"<[^>]+>", "", page)))


def test_tapelab_and_nbgrader_write_the_same_page(pages):
    """Do `tapelab grade`'s feedback and `nbgrader generate_feedback`'s come out byte for byte alike?"""
    assert pages["tapelab"] == pages["nbgrader"]


@PATHS
def test_the_page_has_no_script_element(pages, path):
    """Is there no <script> element at all: none from the notebook, none from the template (MathJax is left out)?"""
    for student in ("mallory", "frank"):
        assert _soup(pages, path, student).find_all("script") == [], student


@PATHS
def test_no_element_carries_an_event_handler(pages, path):
    """Does no element of the page carry an on* attribute (onerror, onload, ontoggle, onfocus...)?"""
    handlers = [(tag.name, name) for tag in _soup(pages, path).find_all(True) for name in tag.attrs
                if name.lower().startswith("on")]
    assert handlers == []


@PATHS
def test_no_active_element_survives(pages, path):
    """Are iframes, objects, forms, SVG, MathML, <base>, <link> and the like all gone (shown as text)?"""
    found = [tag.name for tag in _soup(pages, path).find_all(ACTIVE_TAGS)]
    assert found == []


@PATHS
def test_every_url_is_an_anchor_a_web_link_or_an_inline_image(pages, path):
    """Does every URL attribute hold `#...`, an http(s) link or an inline PNG/JPEG/GIF, never
    javascript:, data:text/html or a relative path a <base> could redirect?"""
    urls = [(tag.name, name, tag[name]) for tag in _soup(pages, path).find_all(True) for name in URL_ATTRIBUTES
            if tag.has_attr(name)]
    assert urls, "the page should have links (table of contents) and an image"
    assert [u for u in urls if not SAFE_URL.fullmatch(u[2])] == []
    assert not [u for u in urls if u[0] == "img" and u[2].startswith("http")]


@PATHS
def test_the_only_meta_elements_are_the_policy_and_the_charset(pages, path):
    """Is the Content-Security-Policy the first element of <head>, allowing no script, and is no
    student <meta http-equiv=refresh> left?"""
    soup = _soup(pages, path)
    first = soup.head.find(True)
    assert first.name == "meta" and first.get("http-equiv") == "Content-Security-Policy"
    policy = first["content"]
    assert "default-src 'none'" in policy and "script-src" not in policy and "unsafe-eval" not in policy
    assert [m.attrs for m in soup.find_all("meta")] == [first.attrs, {"charset": "utf-8"}]


@PATHS
def test_unsafe_markup_is_shown_as_text(pages, path):
    """Does the instructor see what the student tried, escaped, rather than nothing?"""
    text = _soup(pages, path).get_text()
    assert "<script>window.__pwned_md_script=1" in text
    assert "<script>window.__pwned_html_script=1" in text
    assert '<iframe srcdoc="<script>top.__pwned_iframe_srcdoc=1' in text


@PATHS
def test_scores_text_and_an_honest_png_still_show(pages, path):
    """Are the scores from the gradebook, the student's own text and a real PNG output all on the page?"""
    soup = _soup(pages, path)
    assert "09_fixture (Score: 1.0 / 1.0)" in soup.h4.get_text()
    assert STUDENT_TEXT in soup.get_text()
    images = [img["src"] for img in soup.find_all("img") if img.has_attr("src")]
    assert images.count(f"data:image/png;base64,{HONEST_PNG}") == 2  # once alone, once with hostile metadata


@PATHS
def test_nbgrader_roles_come_from_the_gradebook_not_the_notebook(pages, path):
    """Do only the instructor's cells get nbgrader panels, once each: not a student cell claiming a role,
    not a pasted copy of the test cell?"""
    soup = _soup(pages, path)
    labels = [span.get_text(" ", strip=True) for span in soup.select("div.nbgrader_cell span.nbgrader-label")]
    assert labels == ["Student's answer", "Grade cell: ex9_1_test"]
    assert [li.get_text(" ", strip=True) for li in soup.select("#toc li")] == ["Test cell (Score: 1.0 / 1.0)"]


@PATHS
def test_markdown_naming_a_missing_attachment_is_shown_not_fatal(pages, path):
    """Does a markdown image naming an attachment the cell lacks show as text instead of failing the page?"""
    assert f"![gone]({MISSING_ATTACHMENT})" in _soup(pages, path).get_text()


@PATHS
def test_hidden_test_source_and_message_are_absent(pages, path):
    """Is the hidden test absent (source, quoting traceback, its assertion message) while the visible
    test and a note that a hidden test failed remain?"""
    page = pages[path]["frank"]
    text = _text(page)
    for secret in (TINY_HIDDEN, "BEGIN HIDDEN TESTS", "hidden check"):
        assert re.sub(r"\s+", "", secret) not in text, secret
    assert "answer()==42" in text and "Ahiddentestfailed" in text
    assert "Score: 0.0 / 1.0" in html.unescape(page)


def test_formgraders_button_writes_the_same_page_and_leaves_its_views_alone(pages):
    """Does formgrader's "Generate Feedback" button (NbGraderAPI, with the exporter settings formgrader
    adds) write the same page, while formgrader's own views keep their template?"""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.server_extensions.formgrader import handlers

    root = pages["root"]
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    config.HTMLExporter.template_name = "formgrade"  # FormgradeExtension.build_extra_config
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    result = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config).generate_feedback(
        TINY, "mallory", force=True)
    assert result["success"], result.get("error")
    assert (root / "feedback" / "mallory" / TINY / f"{TINY}.html").read_text() == pages["tapelab"]["mallory"]
    assert HTMLExporter(config=config).template_file == "index.html.j2"


def test_the_course_configuration_gives_nbgrader_the_same_steps():
    """Does grader/nbgrader_config.py (copied into every course) configure GenerateFeedback exactly
    as write_feedback does, and nothing else that renders HTML?"""
    loaded = PyFileConfigLoader("nbgrader_config.py", path=str(GRADER)).load_config()
    assert loaded["GenerateFeedback"] == configure_feedback(type(loaded)())["GenerateFeedback"]
    assert "HTMLExporter" not in loaded


@pytest.mark.parametrize("href,kept", [
    ("https://www.tensorflow.org/guide/autodiff", True), ("#top", True), ("mailto:ta@example.org", True),
    ("javascript:alert(1)", False), ("\x01javascript:alert(1)", False), (" https://x.org", False),
    ("data:text/html;base64,PHNjcmlwdD4=", False), ("files/notes.html", False),
])
def test_a_link_is_kept_only_to_the_web_a_mail_address_or_an_anchor(href, kept):
    """Is a link kept only when it goes to the web, a mail address or an anchor?"""
    cleaned = InertNotebook().sanitize_html_tags(f'<a href="{html.escape(href)}">x</a>')
    assert ("href" in cleaned) is kept, cleaned
