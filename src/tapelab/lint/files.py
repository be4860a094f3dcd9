"""Reading what to lint: `.py` files and notebooks' code cells, `# tapelab: ignore[CODE]` pragmas, and the
`[tool.tapelab.lint]` table of `pyproject.toml`.

A notebook's code cells are linted as one module, in order, because a cell reads the names earlier cells
bound; each finding is mapped back to its cell and line. IPython magics and shell lines are blanked (line
numbers kept), and a cell that does not parse is left out with a warning rather than hiding the others.
"""
from __future__ import annotations

import ast
import fnmatch
import io
import json
import re
import tokenize
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from tapelab.errors import UsageError
from tapelab.lint.model import CHECKERS, RULES, Finding, UnknownRule, find_rule

__all__ = ["Config", "load_config", "rules_named", "lint_tree", "lint_source", "lint_text", "lint_file", "expand", "pragmas"]

_PRAGMA = re.compile(r"#\s*tapelab:\s*ignore\[([^\]]*)\]")


@dataclass(frozen=True)
class Config:
    """Which rules run (`select`, `ignore`: numbers or cause codes) and which paths are skipped (`exclude`)."""

    select: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()

    def enabled(self, code: str) -> bool:
        """Whether the rule with cause code `code` runs under this configuration (`select` and `ignore` hold
        cause codes, as `rules_named` makes them, or rule numbers)."""
        names = {code, RULES[code].number}
        return (not self.select or bool(names & self.select)) and not names & self.ignore

    def narrowed(self, select: Iterable[str] | None = None, extend: Iterable[str] = (),
                 ignore: Iterable[str] = ()) -> "Config":
        """This configuration with the command line's `--select` (replaces), `--extend-select` (adds to the
        selection) and `--ignore` (adds to the ignored) applied, as Ruff applies them."""
        chosen = self.select if select is None else rules_named(select)
        if extend and chosen:  # an empty selection is every rule already
            chosen = chosen | rules_named(extend)
        return replace(self, select=chosen, ignore=self.ignore | rules_named(ignore))

    def excluded(self, path: Path) -> bool:
        """Whether `path` matches an `exclude` glob (against the whole path or any of its parts)."""
        text = path.as_posix()
        return any(fnmatch.fnmatch(text, g) or any(fnmatch.fnmatch(p, g) for p in path.parts) for g in self.exclude)


def rules_named(values: Iterable[str]) -> frozenset[str]:
    """The cause codes of the rules `values` name: a number (`TPL101`), a cause code (`not-watched`) or a
    prefix of numbers (`TPL`, `TPL1`, `TPL20`), as Ruff selects; UnknownRule for a name no rule has."""
    chosen: set[str] = set()
    for value in values:
        prefix = [r.code for r in RULES.values() if r.number.startswith(value.upper())] if value[:3].upper() == \
            "TPL" else []
        chosen.update(prefix or [find_rule(value).code])  # an unknown name is a configuration error, said at once
    return frozenset(chosen)


class ConfigError(UsageError, ValueError):
    """The `[tool.tapelab.lint]` table cannot be used: pyproject.toml does not parse, or names an unknown rule
    or key."""


_KEYS = frozenset({"select", "ignore", "exclude"})


def load_config(start: Path) -> Config:
    """The `[tool.tapelab.lint]` table of the nearest `pyproject.toml` at or above `start` (defaults if none);
    ConfigError when it cannot be used."""
    for folder in [start.resolve(), *start.resolve().parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                table = tomllib.loads(candidate.read_text()).get("tool", {}).get("tapelab", {}).get("lint", {})
                unknown = sorted(set(table) - _KEYS)
                if unknown:
                    raise ValueError(f"unknown key {', '.join(map(repr, unknown))}; the keys are "
                                     f"{', '.join(sorted(_KEYS))}")
                return Config(rules_named(table.get("select", [])), rules_named(table.get("ignore", [])),
                              tuple(table.get("exclude", [])))
            except (ValueError, UnknownRule) as error:  # TOMLDecodeError is a ValueError
                raise ConfigError(f"[tool.tapelab.lint] in pyproject.toml: {error}") from None
    return Config()


def pragmas(source: str) -> dict[int, set[str]]:
    """Line -> codes named by `# tapelab: ignore[CODE, ...]` comments on that line (real comments only)."""
    found: dict[int, set[str]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT and (match := _PRAGMA.search(token.string)):
                found.setdefault(token.start[0], set()).update(c.strip() for c in match.group(1).split(",") if c.strip())
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def _ignored(finding: Finding, marks: dict[int, set[str]]) -> bool:
    return bool(marks.get(finding.line, set()) & {finding.code, finding.number})


def lint_tree(tree: ast.Module, source: str, path: str = "<string>", config: Config = Config()) -> list[Finding]:
    """Findings of every enabled rule in the parsed `tree` of `source`, pragmas applied (flake8 hands over the
    tree it parsed; `lint_source` parses its own)."""
    checks = [check for needs, check in CHECKERS if any(word in source for word in needs)]
    marks = pragmas(source) if "tapelab:" in source else {}
    found = {(f.line, f.col, f.code): replace(f, path=path) for check in checks for f in check(tree)}
    return sorted((f for f in found.values() if config.enabled(f.code) and not _ignored(f, marks)),
                  key=lambda f: (f.line, f.col, f.number))


def lint_source(source: str, path: str = "<string>", config: Config = Config()) -> list[Finding]:
    """Findings of every enabled rule in Python `source`, pragmas applied; SyntaxError if it does not parse."""
    if not any(word in source for needs, _ in CHECKERS for word in needs):
        return []  # the cheap gate: most files of a large tree name no tape and no Keras 2 idiom
    return lint_tree(ast.parse(source, filename=path), source, path, config)


@dataclass
class _Cells:
    source: str = ""
    lines: list[tuple[int, int]] = field(default_factory=list)  # module line -> (cell position, line in cell)


def code_cells(notebook: dict) -> list[dict]:
    """A notebook's code cells, in order (a finding's `cell` is a 1-based position in this list)."""
    return [c for c in notebook.get("cells", []) if c.get("cell_type") == "code"]


def cell_source(cell: dict) -> str:
    """A cell's source as one string (notebooks store it as a string or a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def cell_code(source: str) -> str:
    """A cell's source as Python: IPython magic and shell lines blanked, line numbers kept."""
    return "\n".join(("" if line.lstrip().startswith(("%", "!")) else line) for line in source.split("\n"))


def _notebook(text: str, path: str) -> tuple[_Cells, list[str]]:
    cells, warnings = _Cells(), []
    for position, cell in enumerate(code_cells(json.loads(text)), start=1):
        body = cell_code(cell_source(cell))
        try:
            ast.parse(body)
        except SyntaxError as error:
            warnings.append(f"{path}: cell {position}: not linted, it does not parse ({error.msg}, line {error.lineno})")
            continue
        cells.source += body + "\n"
        cells.lines += [(position, number) for number in range(1, body.count("\n") + 2)]
    return cells, warnings


_LINE = re.compile(r"\bline (\d+)\b")


def _in_cells(finding: Finding, cells: _Cells) -> Finding:
    """`finding` with its line, its edit's lines, and every "line N" its message cites, mapped from the joined
    cells to a cell."""
    cell, line = cells.lines[finding.line - 1]
    edit = finding.edit and replace(finding.edit, line=cells.lines[finding.edit.line - 1][1],
                                    end_line=cells.lines[finding.edit.end_line - 1][1])

    def cite(match: re.Match) -> str:
        other, at = cells.lines[int(match.group(1)) - 1]
        return f"line {at}" if other == cell else f"cell {other}, line {at}"

    return replace(finding, cell=cell, line=line, message=_LINE.sub(cite, finding.message), edit=edit)


def lint_text(text: str, path: str, config: Config = Config()) -> tuple[list[Finding], list[str]]:
    """Findings in the text of a `.py` file or (when `path` ends in `.ipynb`) a notebook, and warnings about
    cells or files that could not be parsed."""
    try:
        if not path.endswith(".ipynb"):
            return lint_source(text, path, config), []
        cells, warnings = _notebook(text, path)
        found = lint_source(cells.source, path, config)
    except (SyntaxError, ValueError, RecursionError) as error:
        return [], [f"{path}: not linted, it does not parse ({error})"]
    return [_in_cells(f, cells) for f in found], warnings


def lint_file(path: Path, config: Config = Config()) -> tuple[list[Finding], list[str]]:
    """Findings in one `.py` file or notebook, and warnings about what could not be read or parsed."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return [], [f"{path}: not linted, it cannot be read ({error})"]
    return lint_text(text, str(path), config)


def expand(paths: Iterable[Path], config: Config) -> Iterator[Path]:
    """The `.py` and `.ipynb` files named, or found under the folders named, minus excluded ones."""
    for path in paths:
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in (".py", ".ipynb"))
        for candidate in candidates:
            if not config.excluded(candidate) and ".ipynb_checkpoints" not in candidate.parts:
                yield candidate
