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
