"""Regenerate the "## The rules" section of docs/lint.md from the rule docstrings (`Rule.explanation()`).

`python tools/lint_docs.py` rewrites the section in place; `--check` exits 1 when the page is out of date
(tests/lint/test_docs.py holds the page to it).
"""
from __future__ import annotations

import sys
from pathlib import Path

from tapelab.lint import RULES

PAGE = Path(__file__).resolve().parents[1] / "docs" / "lint.md"
HEADING = "## The rules\n"


def generated(page: str) -> str:
    """The page with everything after its rules heading replaced by every rule's explanation, by number."""
    head = page[: page.index(HEADING) + len(HEADING)]
    return head + "".join("\n" + rule.explanation() for rule in sorted(RULES.values(), key=lambda r: r.number))


def main(argv: list[str]) -> int:
    page = PAGE.read_text()
    fresh = generated(page)
    if "--check" in argv:
        return 0 if fresh == page else 1
    PAGE.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
