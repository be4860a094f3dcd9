"""docs/lint.md documents every rule: its number, code, the catalogue's fix, and its what/why/example/instead."""
from pathlib import Path

import pytest

from tapelab.lint import RULES

DOCS = (Path(__file__).parents[2] / "docs" / "lint.md").read_text()


@pytest.mark.parametrize("code", list(RULES))
def test_docs_describe_the_rule_as_it_is_defined(code):
    """Does docs/lint.md hold the rule's heading, its fix as the catalogue words it, and its documentation?"""
    rule = RULES[code]
    assert rule.explanation() in DOCS
    for part in ("**What it does**", "**Why is this bad?**", "**Example**", "**Use instead**"):
        assert part in rule.doc


def test_the_rules_section_is_generated_from_the_rules():
    """Is docs/lint.md's rules section exactly what tools/lint_docs.py generates (every rule, by number, and
    nothing stale)? Regenerate with `python tools/lint_docs.py`."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("lint_docs", Path(__file__).parents[2] / "tools" / "lint_docs.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.generated(DOCS) == DOCS
