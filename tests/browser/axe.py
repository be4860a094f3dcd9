"""axe-core (tools/axe, pinned by its package-lock.json, installed by `make axe`) run on a page opened in
Chromium: the WCAG 2.1 A and AA rules, every violation with its rule, impact and element count."""
from __future__ import annotations

from pathlib import Path

import pytest

AXE = Path(__file__).resolve().parents[2] / "tools" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
_RUN = """async (tags) => (await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']}))
    .violations.map(v => ({rule: v.id, impact: v.impact, count: v.nodes.length,
                           where: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + n.failureSummary)}))"""


def axe_source() -> Path:
    if not AXE.is_file():
        pytest.fail(f"axe-core is missing at {AXE}: run `make axe` (npm ci in tools/axe)", pytrace=False)
    return AXE


def violations(browser, page_path: Path) -> list[dict]:
    """axe's WCAG 2.1 A/AA violations of the page at `page_path`, in a context of its own that lets the test
    add axe's script past the page's Content-Security-Policy (which allows none)."""
    context = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 1000})
    try:
        page = context.new_page()
        page.goto(page_path.as_uri(), wait_until="load")
        page.add_script_tag(path=str(axe_source()))
        return page.evaluate(_RUN, TAGS)
    finally:
        context.close()
