"""A hostile student's feedback page opened in headless Chromium: nothing the student wrote runs
(issue 13, class 3).

Every payload of tests/grading/hostile_feedback.py would set `window.__pwned_<name>`, retitle
the page or fetch `<recorder>/<name>` from an HTTP server this module runs on 127.0.0.1. The
page is opened from its file, its non-web links are clicked, and the test reads the globals, the
title, the server's log, the browser's request log, the console and page errors. A control page,
the same notebook through stock nbconvert, shows that these detectors catch payloads that run.
"""
from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import nbformat
import pytest

from grading.grade_fixtures import TINY, make_course
from grading.hostile_feedback import HONEST_PNG, STUDENT_TEXT, hand_in, hostile
from tapelab.grading.course import open_course
from tapelab.grading.handback.page import write_feedback

pytestmark = pytest.mark.browser

# Click every link that is neither a web link nor an anchor of this page (javascript:, data:...).
_CLICK_ODD_LINKS = """() => {
  const odd = [...document.links].filter(a => !/^(https?|mailto):$/.test(a.protocol)
                                                            && !a.getAttribute('href').startsWith('#'));
  odd.forEach(a => a.click());
  return odd.length;
}"""
# nbgrader's page inlines Bootstrap 3, whose @font-face names ../fonts/glyphicons-halflings-regular.*:
# Chromium asks for these fonts although no element uses them, and the page's policy refuses them.
_BOOTSTRAP_FONTS = "/fonts/glyphicons-halflings-regular."
_PWNED = "() => Object.keys(window).filter(k => k.startsWith('__pwned_')).map(k => k.slice(8)).sort()"
_HONEST_IMAGES = """(src) => [...document.images].filter(i => i.getAttribute('src') === src)
                                              .map(i => [i.complete, i.naturalWidth, i.naturalHeight])"""


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers 204 to anything and notes the path: a payload's fetch, image, style or navigation."""

    def do_GET(self) -> None:
        self.server.hits.append(self.path.lstrip("/"))
        self.send_response(204)
        self.end_headers()

    do_POST = do_HEAD = do_GET

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def recorder() -> Iterator[http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.hits = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def pages(tmp_path_factory, recorder) -> dict[str, Path]:
    """tapelab's feedback for the hostile notebook, and the control: the same through stock nbconvert."""
    from nbconvert.exporters import HTMLExporter

    url = f"http://127.0.0.1:{recorder.server_address[1]}"
    root = make_course(tmp_path_factory.mktemp("feedback-browser"))
    hand_in(root, "mallory", hostile(root, url))
    course = open_course(root)
    try:
        feedback = write_feedback(course, "mallory", TINY, TINY)
    finally:
        course.close()
    control = root.parent / "control.html"
    stock = nbformat.reads(json.dumps(hostile(root, url, control=True)), as_version=4)
    control.write_text(HTMLExporter().from_notebook_node(stock)[0])
    return {"feedback": feedback, "control": control}


@pytest.fixture
def visit(browser_context, recorder) -> Iterator[Callable[[Path], dict]]:
    """Open a page from its file, click its odd links, and report everything that happened."""
    opened = []

    def visit_(path: Path) -> dict:
        recorder.hits.clear()
        page = browser_context.new_page()
        opened.append(page)
        seen = {"console": [], "errors": [], "dialogs": [], "requests": []}
        page.on("console", lambda message: seen["console"].append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: seen["errors"].append(str(error)))
        page.on("dialog", lambda dialog: (seen["dialogs"].append(dialog.message), dialog.dismiss()))
        page.on("request", lambda request: seen["requests"].append(request.url))
        page.goto(path.as_uri(), wait_until="networkidle")
        seen["clicked"] = page.evaluate(_CLICK_ODD_LINKS)
        page.wait_for_load_state("networkidle")
        seen.update(page=page, url=page.url, title=page.title(), pwned=page.evaluate(_PWNED),
                    hits=sorted(set(recorder.hits)))
        return seen

    yield visit_
    for page in opened:
        page.close()


def test_nothing_the_student_wrote_runs_in_the_browser(pages, visit):
    """Does no payload set a global, retitle or move the page, fetch anything or log, even after a click?"""
    seen = visit(pages["feedback"])
    assert seen["pwned"] == []
    assert seen["title"] == TINY
    assert seen["url"] == pages["feedback"].as_uri()
    assert seen["hits"] == []
    others = [u for u in seen["requests"] if u != seen["url"] and not u.startswith("data:")]
    assert [u for u in others if _BOOTSTRAP_FONTS not in u] == []
    assert [m for m in seen["console"] if _BOOTSTRAP_FONTS not in m] == []
    assert seen["errors"] == [] and seen["dialogs"] == []
    assert seen["page"].evaluate("() => [...document.links].filter(a => a.protocol === 'javascript:').length") == 0


def test_the_page_still_shows_scores_text_and_picture(pages, visit):
    """Are the score, the student's own words and an honest PNG (decoded, 3x2) on screen?"""
    page = visit(pages["feedback"])["page"]
    assert page.locator("h4").first.inner_text() == "09_fixture (Score: 1.0 / 1.0)"
    assert page.get_by_text(STUDENT_TEXT).is_visible()
    assert page.evaluate(_HONEST_IMAGES, f"data:image/png;base64,{HONEST_PNG}") == [[True, 3, 2]] * 2


def test_the_detectors_catch_payloads_that_run(pages, visit):
    """Without tapelab's steps (stock nbconvert), do the same payloads run, and does this test see it?"""
    seen = visit(pages["control"])
    fired = set(seen["pwned"]) | set(seen["hits"])
    # One payload of each kind: script, event handler, frame, markdown, clicked link, CSS and image fetch.
    assert {"html_script", "img_onerror", "svg_onload", "iframe_srcdoc", "md_script", "md_img_onerror",
            "md_js_link", "md_files_prefix", "css_inline", "md_remote_image"} <= fired, sorted(fired)
    assert seen["title"] == "PWNED"
    assert seen["clicked"] > 0
