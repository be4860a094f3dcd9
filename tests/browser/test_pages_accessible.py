"""Every page tapelab writes, read by axe-core (tools/axe) in Chromium against WCAG 2.1 A and AA: the
feedback pages of a graded class (checker boxes, errors, a traceback in terminal colours, the notebook's
"Open in Binder" badge) and the class insight, with and without submissions; 0 violations on each."""
from __future__ import annotations

from pathlib import Path

import pytest

from axe import violations
from grading.hostile_feedback import failing, hand_in
from grading.insight_class import build_class
from grading.grade_fixtures import BASIC, TINY, make_course
from tapelab.grading.course import open_course
from tapelab.grading.grades import standings
from tapelab.grading.handback.page import write_feedback
from tapelab.grading.insight import tables as insight
from tapelab.grading.records import STATE_FILE, State

pytestmark = pytest.mark.browser

# A traceback as IPython colours it: 16-colour codes (classes) and 256-colour codes (inline styles).
_COLOURED = ["\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
             "\x1b[38;5;28mif\x1b[39m x \x1b[38;5;241m>\x1b[39m \x1b[38;5;241m0\x1b[39m:  \x1b[38;5;66m# a comment\x1b[39m",
             "\x1b[1;31mRuntimeError\x1b[0m: \x1b[38;5;167mA non-persistent GradientTape\x1b[39m"]


def _insight(course: Path) -> Path:
    db = f"sqlite:///{course / 'gradebook.db'}"
    insight.write(course, db, standings.read(db, State(course / STATE_FILE).entries))
    return course / insight.INSIGHT_DIR / "insight.html"


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    """The feedback page of every student and notebook of the insight class plus one in terminal colours,
    the class's insight page, and the insight of a course where nobody has submitted yet."""
    course = build_class(tmp_path_factory.mktemp("a11y"))
    coloured = failing(course)
    answer = next(c for c in coloured["cells"] if c.get("id") == "ex9_1_answer")
    answer["outputs"] = [{"output_type": "error", "ename": "RuntimeError", "evalue": "non-persistent",
                          "traceback": _COLOURED}]
    hand_in(course, "zed", coloured)
    opened = open_course(course)
    try:
        found = {f"feedback {nb.parts[-3]} {nb.stem}": write_feedback(opened, nb.parts[-3], nb.parts[-2], nb.stem)
                 for nb in sorted((course / "autograded").glob("*/*/*.ipynb"))}
    finally:
        opened.close()
    found["insight"] = _insight(course)
    empty = make_course(tmp_path_factory.mktemp("a11y-empty"))
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{empty / 'gradebook.db'}") as gb:
        gb.update_or_create_student("fay", first_name="Fay", last_name="Wray")
    found["insight, no submissions"] = _insight(empty)
    return found


def test_the_pages_cover_feedback_with_the_badge_and_colours_and_both_insights(pages):
    """Are the pages read below the ones that failed before: a feedback page of 01 with its Binder badge as a
    link (no image the policy would refuse), one with the coloured traceback, and an insight with no plot?"""
    basic = pages[f"feedback ana {BASIC}"].read_text()
    assert "mybinder.org" in basic and "badge_logo.svg" not in basic and "<img" not in basic
    assert "A non-persistent GradientTape" in pages[f"feedback zed {TINY}"].read_text()
    empty = pages["insight, no submissions"].read_text()
    assert "No submissions of 01_basic_tape yet" in empty and "<img" not in empty
    assert len([name for name in pages if name.startswith("feedback")]) >= 6


def test_every_page_has_no_wcag_violation(browser_context, pages):
    """Does axe-core find no WCAG 2.1 A/AA violation (contrast, lang, links told apart by colour alone,
    images without text) on any page?"""
    browser = browser_context.browser
    found = {name: violations(browser, path) for name, path in pages.items()}
    assert {name: v for name, v in found.items() if v} == {}


def test_axe_finds_what_it_is_asked_to(browser_context, tmp_path):
    """A control: on a page with no language, a low-contrast text and an unlabelled image, does the same run
    report those three rules (so 0 above means the rules ran)?"""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><head><title>bad</title></head><body><p style='color:#bbb'>faint</p>"
                    "<img src='data:image/png;base64,iVBORw0KGgo='></body></html>")
    rules = {v["rule"] for v in violations(browser_context.browser, page)}
    assert {"html-has-lang", "color-contrast", "image-alt"} <= rules, rules
