"""The class insight page in headless Chromium: it renders its sections and plots from its file, and
nothing a student wrote runs (insight_class's answers and messages carry script and event payloads)."""
from __future__ import annotations

from pathlib import Path

import pytest

from grading.insight_class import build_class
from tapelab.grading.insight import tables as insight
from tapelab.grading.grades import standings
from tapelab.grading.records import STATE_FILE, State

pytestmark = pytest.mark.browser

_IMAGES = "() => [...document.images].map(i => [i.complete, i.naturalWidth > 0])"


@pytest.fixture(scope="module")
def page_path(tmp_path_factory) -> Path:
    course = build_class(tmp_path_factory.mktemp("insight-page"))
    db = f"sqlite:///{course / 'gradebook.db'}"
    insight.write(course, db, standings.read(db, State(course / STATE_FILE).entries))
    return course / insight.INSIGHT_DIR / "insight.html"


def test_insight_page_renders_its_sections_and_plots_and_runs_no_script(browser_context, page_path):
    """Opened from its file, does the page show every section and plot, request nothing and run no script?"""
    page = browser_context.new_page()
    seen = {"errors": [], "requests": [], "console": []}
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))
    page.on("console", lambda message: seen["console"].append(message.text))
    page.on("request", lambda request: seen["requests"].append(request.url))
    try:
        page.goto(page_path.as_uri(), wait_until="networkidle")
        headings = page.eval_on_selector_all("h2", "hs => hs.map(h => h.id)")
        images = page.evaluate(_IMAGES)
        scripts = page.eval_on_selector_all("script", "s => s.length")
        pwned = page.evaluate("() => window.__pwned_insight === undefined")
        shown = page.inner_text("body")
    finally:
        page.close()
    assert headings == ["ranking", "assignments", "exercises", "change"]
    assert images and all(done and drawn for done, drawn in images)
    assert scripts == 0 and pwned and not seen["errors"]
    assert seen["requests"] == [page_path.as_uri()]
    assert "<script>window.__pwned_insight=1</script>" in shown  # shown as text, not run
