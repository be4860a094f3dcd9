"""Silencing findings in the code itself, as Ruff and flake8 users write it, read from real comments only.

- `# tapelab: ignore[not-watched, TPL110]`: those rules, on that line (tapelab's own pragma);
- `# noqa: TPL101, TPL2`: those rules (numbers, cause codes or prefixes) on that line; codes of other tools
  (`E501`) are theirs and are skipped; a bare `# noqa` silences every rule on that line;
- `# tapelab: noqa`, `# ruff: noqa`, `# flake8: noqa` anywhere in a file (any cell of a notebook): the whole
  file; `# tapelab: noqa: TPL111` (or the `ruff:` form): those rules in the whole file.

A finding is reported on one line (a multi-line statement: the line the finding names), so the comment goes
there. The same reading serves `tapelab lint` and the flake8 plugin.
"""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from tapelab.lint.model import RULES, Finding, UnknownRule, find_rule

__all__ = ["Suppressions", "pragmas"]

_PRAGMA = re.compile(r"#\s*tapelab:\s*ignore\[([^\]]*)\]")
_FILE = re.compile(r"#\s*(?:tapelab|ruff|flake8)\s*:\s*noqa\b(?:\s*:\s*(?P<codes>[\w\-]+(?:[\s,]+[\w\-]+)*))?", re.I)
_LINE = re.compile(r"#\s*noqa\b(?:\s*:\s*(?P<codes>[\w\-]+(?:[\s,]+[\w\-]+)*))?", re.I)
ALL = frozenset({"*"})
WORDS = ("tapelab:", "noqa", "NOQA", "Noqa")  # a source without any of these has nothing to read


def _codes(text: str | None) -> frozenset[str]:
    """The cause codes the names in `text` give (ALL when there are none); other tools' codes are skipped."""
    if not text:
        return ALL
    chosen: set[str] = set()
    for name in filter(None, re.split(r"[\s,]+", text)):
        if name[:3].upper() == "TPL":
            chosen.update(r.code for r in RULES.values() if r.number.startswith(name.upper()))
        else:
            try:
                chosen.add(find_rule(name).code)
            except UnknownRule:
                continue  # another tool's code
    return frozenset(chosen)


def _comments(source: str):
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                yield token.start[0], token.string
    except (tokenize.TokenError, SyntaxError):
        return


def pragmas(source: str) -> dict[int, set[str]]:
    """Line -> names given by `# tapelab: ignore[CODE, ...]` comments on that line, as written."""
    found: dict[int, set[str]] = {}
    for line, text in _comments(source):
        if match := _PRAGMA.search(text):
            found.setdefault(line, set()).update(c.strip() for c in match.group(1).split(",") if c.strip())
    return found


@dataclass
class Suppressions:
    """What the comments of one source silence: per line, and in the whole file."""

    lines: dict[int, frozenset[str]] = field(default_factory=dict)
    file: frozenset[str] = frozenset()

    @classmethod
    def read(cls, source: str) -> "Suppressions":
        found = cls()
        if not any(word in source for word in WORDS):
            return found
        for line, text in _comments(source):
            codes: frozenset[str] = frozenset()
            if match := _PRAGMA.search(text):
                codes = frozenset(c for name in match.group(1).split(",") if name.strip()
                                  for c in _codes(name.strip()) if c != "*")
            if match := _FILE.search(text):
                found.file |= _codes(match.group("codes"))
            elif match := _LINE.search(text):
                codes |= _codes(match.group("codes"))
            if codes:
                found.lines[line] = found.lines.get(line, frozenset()) | codes
        return found

    def silences(self, finding: Finding) -> bool:
        """Whether a comment silences `finding` (by its cause code) where it is reported."""
        for codes in (self.file, self.lines.get(finding.line, frozenset())):
            if codes == ALL or "*" in codes or finding.code in codes:
                return True
        return False
