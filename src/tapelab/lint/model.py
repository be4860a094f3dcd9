"""What a lint rule is and what it reports: a `Rule` (stable number, cause code, docs) and a `Finding`.

Every rule's code is a code of the shared cause catalogue (`tapelab.causes`), so the linter, the exercise
feedback and `tapelab.diagnose` name one mistake the same way. The number (TPL101, ...) is the form flake8
and SARIF need (letters then digits); pragmas and configuration accept either. Rules come in families:
one analysis (for example the data flow from a tape's sources to its target) establishes several causes,
so a family registers one checker and the rules it can report.

Each rule has a level: "error" for certain breakage (the code raises, or silently computes a `None` or wrong
gradient, on Keras 3 / TF 2.21), "warning" for a hazard (memory kept alive, a deprecated shim that still works).
"""
from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from tapelab.causes import Cause, cause
from tapelab.errors import UsageError

__all__ = ["Edit", "Finding", "Rule", "RULES", "CHECKERS", "LEVELS", "Gate", "define", "checker", "find_rule",
           "rules_named", "finding", "UnknownRule", "rename_end"]

LEVELS = ("error", "warning")  # a rule's level, most severe first (SARIF and GitHub use the same words)


@dataclass(frozen=True)
class Edit:
    """Replace the text from `line`/`col` to `end_line`/`end_col` by `text`: positions as `ast` gives them
    (1-based lines, 0-based columns counted in UTF-8 bytes), in the cell's own lines inside a notebook."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


@dataclass(frozen=True)
class Finding:
    """One pitfall at `line`/`col` (1-based line, 0-based column) of `path`; `cell` is set for notebooks.
    `edit` is the mechanical fix `tapelab lint --fix` applies, when the rule knows one that is safe."""

    number: str
    code: str
    message: str
    line: int
    col: int = 0
    path: str = "<string>"
    cell: int | None = None  # 1-based position among a notebook's code cells
    edit: Edit | None = None

    @property
    def fix(self) -> str:
        """The catalogue's one-line fix for this finding's cause."""
        return cause(self.code).fix

    @property
    def level(self) -> str:
        """The level of this finding's rule: "error" or "warning"."""
        return RULES[self.code].level

    def where(self) -> str:
        """`path:line:col`, or `path:cell N:line:col` inside a notebook."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.line}:{self.col + 1}"


@dataclass(frozen=True)
class Rule:
    """A documented rule: `doc` has four parts (What it does / Why is this bad? / Example / Use instead)."""

    number: str
    code: str
    doc: str
    level: str = "error"

    @property
    def cause(self) -> Cause:
        """The catalogued cause, with its title and fix."""
        return cause(self.code)

    def explanation(self) -> str:
        """The rule's documentation as docs/lint.md gives it and `tapelab lint --explain` prints it: heading,
        the catalogue's fix, the level, then what it does, why it is bad, an example and what to use instead."""
        return (f"### {self.number} `{self.code}`: {self.cause.title}\n\n**Fix**: {self.cause.fix}\n\n"
                f"**Level**: {self.level}\n\n{self.doc}\n")


RULES: dict[str, Rule] = {}  # cause code -> rule, in definition order
CHECKERS: list[tuple[Gate, Callable[[ast.Module], Iterator[Finding]]]] = []


def define(number: str, code: str, doc: str, level: str = "error") -> Rule:
    """Register a rule at `level` (one of LEVELS); its code must be catalogued and neither number nor code may
    repeat."""
    if level not in LEVELS:
        raise ValueError(f"lint rule {number} {code}: level {level!r} is not one of {', '.join(LEVELS)}")
    cause(code)  # an unknown cause code fails at import, not at report time
    if code in RULES or any(r.number == number for r in RULES.values()):
        raise ValueError(f"lint rule {number} {code} defined twice")
    RULES[code] = Rule(number, code, doc.strip("\n"), level)
    return RULES[code]


class Gate:
    """Whether a source holds one of a checker's names as a whole word (`lr`, not the `lr` of `url`), tested on
    the text before anything is parsed: a file that never names `GradientTape` has no tape to analyse. `in`
    finds a candidate; the pattern confirms that no identifier character touches it (it starts with the name,
    so `re` looks for it as fast as `in`, and looks behind it once found)."""

    def __init__(self, names: tuple[str | tuple[str, ...], ...]):
        self.names = names
        self._patterns = [(name, re.compile(rf"{re.escape(name)}(?<!\w{re.escape(name)})(?!\w)")) for name in names
                          if isinstance(name, str)]
        self._together = [Gate(group) for group in names if isinstance(group, tuple)]  # all of a group's names

    def __call__(self, source: str) -> bool:
        return any(name in source and pattern.search(source) for name, pattern in self._patterns) or any(
            all(Gate((name,))(source) for name in group.names) for group in self._together)


def checker(*needs: str | tuple[str, ...]) -> Callable:
    """Register a family's checker, run only on sources that name one of `needs` (see `Gate`); a tuple in
    `needs` is a group of names that must all be named."""
    def register(check: Callable[[ast.Module], Iterator[Finding]]) -> Callable[[ast.Module], Iterator[Finding]]:
        CHECKERS.append((Gate(needs), check))
        return check
    return register


class UnknownRule(UsageError, KeyError):
    """No rule has that number or cause code; the message lists the rules."""


def find_rule(code: str) -> Rule:
    """The rule named by a number (`TPL101`) or a cause code (`not-watched`); UnknownRule (a KeyError) otherwise."""
    for candidate in RULES.values():
        if code in (candidate.code, candidate.number) or code.upper() == candidate.number:
            return candidate
    raise UnknownRule(f"unknown lint rule {code!r}; rules: {', '.join(f'{r.number} {r.code}' for r in RULES.values())}")


def rules_named(values: Iterable[str]) -> frozenset[str]:
    """The cause codes of the rules `values` name: a number (`TPL101`), a cause code (`not-watched`) or a
    prefix of numbers (`TPL`, `TPL1`, `TPL20`), as Ruff selects; UnknownRule for a name no rule has."""
    chosen: set[str] = set()
    for value in values:
        prefix = [r.code for r in RULES.values() if r.number.startswith(value.upper())] if value[:3].upper() == \
            "TPL" else []
        chosen.update(prefix or [find_rule(value).code])  # an unknown name is a configuration error, said at once
    return frozenset(chosen)


def finding(code: str, node: ast.AST, message: str, edit: Edit | None = None) -> Finding:
    """A finding of rule `code` at `node`, fixed by `edit` if given (path and cell are filled in by the caller)."""
    return Finding(RULES[code].number, code, message, getattr(node, "lineno", 1), getattr(node, "col_offset", 0),
                   edit=edit)


def rename_end(node: ast.AST, old: str, new: str) -> Edit:
    """An edit of the name `old` that ends `node` (the attribute of `a.old`) into `new`."""
    return Edit(node.end_lineno, node.end_col_offset - len(old), node.end_lineno, node.end_col_offset, new)
