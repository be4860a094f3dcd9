"""Reading what to lint: `.py` files and notebooks' code cells, what their comments silence (`suppress`), and
the `[tool.tapelab.lint]` table of `pyproject.toml`.

A notebook's code cells are linted as one module, in order, because a cell reads the names earlier cells
bound; each finding is mapped back to its cell and line. Cells are read as IPython reads them (`cells`):
magics and shell lines are not syntax errors, a cell in another language (`%%bash`) is skipped. Every file is
parsed whatever names it holds; a file or cell that does not parse is a TPL001 finding at the error (a broken
cell is left out, the others are linted), a file that cannot be read a TPL002 finding (`file_rules`).
"""
from __future__ import annotations

import ast
import fnmatch
import functools
import json
import os
import re
import symtable
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from tapelab.errors import UsageError
from tapelab.lint.cells import read_cell
from tapelab.lint.file_rules import SYNTAX_ERROR, UNREADABLE_FILE
from tapelab.lint.model import CHECKERS, RULES, Finding, rules_named
from tapelab.lint.suppress import silences

__all__ = ["Config", "load_config", "rules_named", "lint_tree", "lint_source", "lint_text", "lint_file", "expand"]


@dataclass(frozen=True)
class Config:
    """Which rules run (`select`, `ignore`: numbers or cause codes), which paths are skipped (`exclude`), and
    which rules are ignored in the files a glob matches (`per_file_ignores`, globs from the folder `root`)."""

    select: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()  # (glob, cause codes)
    root: str | None = None  # pyproject.toml's folder; None: the current folder

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
        return replace(self, select=chosen, ignore=self.ignore | _ignorable(ignore))

    def at(self, path: str | Path) -> "Config":
        """This configuration for the file at `path`: `ignore` grown by the rules of each `per_file_ignores`
        glob that matches it, as Ruff matches them: the glob against the file's name, or (joined to `root`)
        against its absolute path; `*` and `**` also cross `/`, `**/` may match no folder, and a glob
        starting with `!` applies to the files it does not match."""
        if not self.per_file_ignores:
            return self
        absolute = os.path.abspath(path)
        root = self.root or os.getcwd()
        extra = frozenset().union(*(codes for glob, codes in self.per_file_ignores
                                    if _matches(glob, os.path.basename(absolute), absolute, root)))
        return replace(self, ignore=self.ignore | extra)

    def excluded(self, path: Path) -> bool:
        """Whether `path` matches an `exclude` glob (against the whole path or any of its parts)."""
        text = path.as_posix()
        return any(fnmatch.fnmatch(text, g) or any(fnmatch.fnmatch(p, g) for p in path.parts) for g in self.exclude)


_GLOB = re.compile(r"\*\*/|\*+|\?|\[!?[^\]]+\]|\{[^{}]*\}")


@functools.lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern:
    """`pattern` as globset (Ruff's glob matcher) reads it by default, as a regular expression."""
    parts, at = [], 0
    for match in _GLOB.finditer(pattern):
        part = match.group()
        parts.append(re.escape(pattern[at:match.start()]))
        if part == "**/":
            parts.append("(?:.*/)?")
        elif part[0] == "*":
            parts.append(".*")
        elif part == "?":
            parts.append(".")
        elif part[0] == "[":
            parts.append("[^" + part[2:-1] + "]" if part[1] == "!" else part)
        else:
            parts.append("(?:" + "|".join(_glob(p).pattern for p in part[1:-1].split(",")) + ")")
        at = match.end()
    return re.compile("".join(parts) + re.escape(pattern[at:]))


def _matches(glob: str, name: str, absolute: str, root: str) -> bool:
    body = glob[1:] if glob.startswith("!") else glob
    hit = bool(_glob(body).fullmatch(name) or _glob(os.path.normpath(os.path.join(root, body))).fullmatch(absolute))
    return hit != glob.startswith("!")


def _ignorable(values: Iterable[str]) -> frozenset[str]:
    """The cause codes of the rules `values` name, to ignore; naming the syntax-error rule alone is a usage
    error, since a file that does not parse is always reported (as Ruff reports it)."""
    values = list(values)
    for value in values:
        if rules_named([value]) == {SYNTAX_ERROR.code}:
            raise UsageError(f"{value!r} cannot be ignored: a file that does not parse is always reported "
                             "(exclude the file instead)")
    return rules_named(values)


class ConfigError(UsageError, ValueError):
    """The `[tool.tapelab.lint]` table cannot be used: pyproject.toml does not parse, or names an unknown rule
    or key."""


_KEYS = frozenset({"select", "ignore", "exclude", "per-file-ignores"})


def _per_file_ignores(table: object) -> tuple[tuple[str, frozenset[str]], ...]:
    if not isinstance(table, dict) or not all(isinstance(names, list) for names in table.values()):
        raise ValueError('per-file-ignores maps globs to lists of rules, e.g. {"tests/*" = ["TPL111"]}')
    pairs = []
    for glob, names in table.items():
        try:
            pairs.append((glob, _ignorable(names)))
        except UsageError as error:
            raise ValueError(f"per-file-ignores {glob!r}: {error}") from None
    return tuple(pairs)


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
                return Config(rules_named(table.get("select", [])), _ignorable(table.get("ignore", [])),
                              tuple(table.get("exclude", [])), _per_file_ignores(table.get("per-file-ignores", {})),
                              str(folder))
            except (ValueError, UsageError) as error:  # TOMLDecodeError is a ValueError
                raise ConfigError(f"[tool.tapelab.lint] in pyproject.toml: {error}") from None
    return Config()


def lint_tree(tree: ast.Module, source: str, path: str = "<string>", config: Config = Config(),
              noqa: bool = True) -> list[Finding]:
    """Findings of every enabled rule in the parsed `tree` of `source`, minus what its comments silence:
    pragmas, and `# noqa` comments unless `noqa` is False (flake8 hands over the tree it parsed; `lint_source`
    parses its own)."""
    checks = [check for needs, check in CHECKERS if needs(source)]
    found = {(f.line, f.col, f.code): replace(f, path=path) for check in checks for f in check(tree)}
    if not found:
        return []
    hidden = silences(source, noqa)
    return sorted((f for f in found.values() if config.enabled(f.code) and not hidden.hide(f)),
                  key=lambda f: (f.line, f.col, f.number))


def lint_source(source: str, path: str = "<string>", config: Config = Config()) -> list[Finding]:
    """Findings of every enabled rule in Python `source`, pragmas applied; SyntaxError if it does not parse.
    Every source is checked for syntax; the rules' tree and walks are built only for sources that name what
    some rule needs."""
    if not any(needs(source) for needs, _ in CHECKERS):
        _check_syntax(source, path)  # the cheap gate: most files of a large tree name no tape, no Keras 2 idiom
        return []
    return lint_tree(ast.parse(source, filename=path), source, path, config)


def _check_syntax(source: str, path: str) -> None:
    """SyntaxError exactly where `ast.parse` would raise one, at half its cost on a large tree: Python's symbol
    table parses the source without building the tree's Python objects. It also rejects a few things the parser
    accepts (`nonlocal` at module level); those are handed back to `ast.parse`, which decides."""
    try:
        symtable.symtable(source, path, "exec")
    except (SyntaxError, ValueError):
        ast.parse(source, filename=path)


@dataclass
class _Cells:
    source: str = ""
    lines: list[tuple[int, int]] = field(default_factory=list)  # module line -> (cell position, line in cell)
    shifts: dict[int, int] = field(default_factory=dict)  # module line -> columns a `%time` statement moved


def _unparsed(what: str, error: SyntaxError | json.JSONDecodeError, path: str, cell: int | None = None) -> Finding:
    """TPL001 at the line and column of `error` (a SyntaxError, or the JSONDecodeError of a notebook)."""
    column = getattr(error, "offset", None) or getattr(error, "colno", None) or 1
    return Finding(SYNTAX_ERROR.number, SYNTAX_ERROR.code, f"the {what} does not parse ({error.msg}), so no rule "
                   "checked it", error.lineno or 1, column - 1, path, cell)


def code_cells(notebook: dict) -> list[dict]:
    """A notebook's code cells, in order (a finding's `cell` is a 1-based position in this list)."""
    return [c for c in notebook.get("cells", []) if c.get("cell_type") == "code"]


def cell_source(cell: dict) -> str:
    """A cell's source as one string (notebooks store it as a string or a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _notebook(text: str, path: str) -> tuple[_Cells, list[Finding]]:
    """The code cells that parse, joined, and a TPL001 finding for each cell that does not (or for the file,
    when its JSON does not parse)."""
    cells, broken = _Cells(), []
    try:
        book = json.loads(text)
    except json.JSONDecodeError as error:
        return cells, [_unparsed("notebook's JSON", error, path)]
    for position, cell in enumerate(code_cells(book), start=1):
        body, shifts = read_cell(cell_source(cell))
        if body is None:  # a cell in another language (`%%bash`, `%%writefile`): not Python, as Ruff skips it
            continue
        try:
            ast.parse(body)
        except SyntaxError as error:
            broken.append(_unparsed("cell", error, path, position))
            continue
        cells.shifts.update((len(cells.lines) + line, shift) for line, shift in shifts.items())
        cells.source += body + "\n"
        cells.lines += [(position, number) for number in range(1, body.count("\n") + 2)]
    return cells, broken


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

    return replace(finding, cell=cell, line=line, col=finding.col + cells.shifts.get(finding.line, 0),
                   message=_LINE.sub(cite, finding.message), edit=edit)


def lint_text(text: str, path: str, config: Config = Config()) -> tuple[list[Finding], list[str]]:
    """Findings in the text of a `.py` file or (when `path` ends in `.ipynb`) a notebook, the configuration's
    `per_file_ignores` for `path` applied; TPL001 where the file or a cell does not parse; a warning when the
    code nests too deeply for the rules to follow."""
    config = config.at(path)
    notebook = path.endswith(".ipynb")
    cells, found = _notebook(text, path) if notebook else (_Cells(text), [])
    try:
        found += [_in_cells(f, cells) if notebook else f for f in lint_source(cells.source, path, config)]
    except SyntaxError as error:  # in a notebook, cells that parse alone always parse together
        return [_unparsed("file", error, path)], []
    except RecursionError:
        return found, [f"{path}: not linted, it nests too deeply for the rules to follow"]
    return sorted(found, key=lambda f: (f.cell or 0, f.line, f.col, f.number)), []


def lint_file(path: Path, config: Config = Config()) -> tuple[list[Finding], list[str]]:
    """Findings in one `.py` file or notebook (TPL002 when it cannot be read), and warnings about what the rules
    could not follow."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        line = error.object[: error.start].count(b"\n") + 1 if isinstance(error, UnicodeDecodeError) else 1
        unread = Finding(UNREADABLE_FILE.number, UNREADABLE_FILE.code, f"the file cannot be read ({error}), so no "
                         "rule checked it", line, 0, str(path))
        return ([unread] if config.at(path).enabled(unread.code) else []), []
    return lint_text(text, str(path), config)


def expand(paths: Iterable[Path], config: Config) -> Iterator[Path]:
    """The `.py` and `.ipynb` files named, or found under the folders named, minus excluded ones."""
    for path in paths:
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in (".py", ".ipynb"))
        for candidate in candidates:
            if not config.excluded(candidate) and ".ipynb_checkpoints" not in candidate.parts:
                yield candidate
