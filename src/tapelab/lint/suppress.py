"""What the source itself silences: `# noqa` comments as Ruff and flake8 read them, the file-level forms
(`# tapelab: noqa`, `# ruff: noqa`, `# flake8: noqa`), and tapelab's `# tapelab: ignore[CODE]` pragmas.

Only real comments count: they are found with `tokenize`, so a directive inside a string is text. A line's
`# noqa` silences findings reported on that line; a file-level form counts on a line of its own (as flake8
requires of `# flake8: noqa`). Rules are named as configuration names them (`rules_named`: a number, a
cause code or a prefix such as `TPL1`); names of other tools' codes (`F401`) silence no TPL rule. Where a
`# noqa:` names nothing that looks like a code (`# noqa: see below`), it is a bare `# noqa`, as flake8 reads it.
"""
from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field

from tapelab.lint.model import RULES, Finding, UnknownRule, rules_named

__all__ = ["Silences", "silences", "pragmas"]

_PRAGMA = re.compile(r"#\s*tapelab:\s*ignore\[([^\]]*)\]")
_NAMES = r"(?::\s*(?P<names>[\w-]+(?:[,\s]+[\w-]+)*))?"
_NOQA = re.compile(r"#\s*noqa" + _NAMES, re.I)
_FILE = re.compile(r"#\s*(?:tapelab|ruff):\s*noqa" + _NAMES + r"|# flake8[:=]\s*noqa", re.I)  # flake8's spelling
_CODE = re.compile(r"[A-Z]+[0-9]+", re.I)  # a code as flake8 and Ruff parse them: letters, then digits


@dataclass
class Silences:
    """The cause codes silenced on each line (`lines`) and in the whole file (`file`)."""

    lines: dict[int, frozenset[str]] = field(default_factory=dict)
    file: frozenset[str] = frozenset()

    def hide(self, finding: Finding) -> bool:
        """Whether a comment of the source silences `finding`."""
        return finding.code in self.file or finding.code in self.lines.get(finding.line, ())


def _comments(source: str) -> Iterator[tokenize.TokenInfo]:
    try:
        yield from (t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT)
    except (tokenize.TokenError, SyntaxError):
        return


def _pragma_names(comment: str) -> list[str]:
    match = _PRAGMA.search(comment)
    return [c.strip() for c in match.group(1).split(",") if c.strip()] if match else []


def pragmas(source: str) -> dict[int, set[str]]:
    """Line -> names given by `# tapelab: ignore[CODE, ...]` comments on that line (real comments only)."""
    found: dict[int, set[str]] = {}
    for token in _comments(source):
        if names := _pragma_names(token.string):
            found.setdefault(token.start[0], set()).update(names)
    return found


def _rules(names: list[str]) -> frozenset[str]:
    """The cause codes `names` name, skipping names no TPL rule has (another tool's codes)."""
    codes: set[str] = set()
    for name in names:
        try:
            codes |= rules_named([name])
        except UnknownRule:
            pass
    return frozenset(codes)


def _noqa_rules(match: re.Match) -> frozenset[str]:
    """The rules a `noqa` directive names: the codes it lists up to the first word that is not one, or every
    rule when it lists none (a bare `# noqa`)."""
    names = []
    for word in re.split(r"[,\s]+", match.group("names") or ""):
        if not (_CODE.fullmatch(word) or word in RULES):
            break
        names.append(word)
    return _rules(names) if names else frozenset(RULES)


def silences(source: str, noqa: bool = True) -> Silences:
    """What the comments of `source` silence: its pragmas and, unless `noqa` is False (flake8's
    `--disable-noqa`), its `# noqa` comments, line and file-level."""
    found = Silences()
    if "tapelab:" not in source and not (noqa and "noqa" in source.lower()):
        return found  # the cheap gate: most sources have no directive at all
    for token in _comments(source):
        line, text = token.start[0], token.string
        codes = _rules(_pragma_names(text))
        if noqa and (match := _FILE.match(text)) and not token.line[: token.start[1]].strip():
            found.file |= _noqa_rules(match)  # `# flake8: noqa` names no codes: the whole file, as in flake8
        elif noqa and (match := _NOQA.search(text)):
            codes |= _noqa_rules(match)
        if codes:
            found.lines[line] = found.lines.get(line, frozenset()) | codes
    return found
