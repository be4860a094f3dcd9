"""Reading what to lint: `.py` files and notebooks' code cells, the comments that silence findings
(`lint/suppress.py`), and the `[tool.tapelab.lint]` table of `pyproject.toml`.

A notebook's code cells are linted as one module, in order, because a cell reads the names earlier cells
bound; each finding is mapped back to its cell and line. IPython magics and shell lines are blanked (line
numbers kept), and a cell that does not parse is left out with a warning rather than hiding the others.
"""
from __future__ import annotations

import ast
import fnmatch
import json
import re
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from tapelab.errors import UsageError
from tapelab.lint.model import CHECKERS, RULES, Finding, UnknownRule, define, find_rule
from tapelab.lint.suppress import Suppressions

__all__ = ["Config", "load_config", "rules_named", "lint_tree", "lint_source", "lint_text", "lint_file", "expand"]


@dataclass(frozen=True)
class Config:
    """Which rules run (`select`, `ignore`: numbers or cause codes) and which paths are skipped (`exclude`)."""

    select: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()
    per_file: tuple[tuple[str, frozenset[str]], ...] = ()  # (glob, cause codes ignored in the files it matches)

    def for_path(self, path: str) -> "Config":
        """This configuration with the `per-file-ignores` whose glob matches `path` added to `ignore`."""
        extra = frozenset(c for glob, codes in self.per_file if _matches(Path(path), glob) for c in codes)
        return replace(self, ignore=self.ignore | extra) if extra else self

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


def _matches(path: Path, glob: str) -> bool:
    """Whether `glob` matches `path` as given or any trailing part of it (`tests/*` matches `/repo/tests/a.py`)."""
    parts = path.parts
    return any(fnmatch.fnmatch("/".join(parts[i:]), glob) for i in range(len(parts)))


def rules_named(values: Iterable[str]) -> frozenset[str]:
    """The cause codes of the rules `values` name: a number (`TPL101`), a cause code (`not-watched`) or a
    prefix of numbers (`TPL`, `TPL1`, `TPL20`), as Ruff selects; UnknownRule for a name no rule has."""
    chosen: set[str] = set()
    for value in values:
        prefix = [r.code for r in RULES.values() if r.number.startswith(value.upper())] if value[:3].upper() == \
            "TPL" else []
        chosen.update(prefix or [find_rule(value).code])  # an unknown name is a configuration error, said at once
    return frozenset(chosen)


def _named_in(key: str, names: object) -> frozenset[str]:
    if not isinstance(names, list):
        raise ValueError(f"{key} must be a list of rules")
    try:
        return rules_named(names)
    except UnknownRule as error:
        raise ValueError(f"{key}: {error.args[0]}") from None


class ConfigError(UsageError, ValueError):
    """The `[tool.tapelab.lint]` table cannot be used: pyproject.toml does not parse, or names an unknown rule
    or key."""


_KEYS = frozenset({"select", "ignore", "exclude", "per-file-ignores"})


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
                per_file = table.get("per-file-ignores", {})
                if not isinstance(per_file, dict):
                    raise ValueError("per-file-ignores must be a table of glob = [rules]")
                return Config(rules_named(table.get("select", [])), rules_named(table.get("ignore", [])),
                              tuple(table.get("exclude", [])), tuple(
                                  (glob, _named_in(f"per-file-ignores {glob!r}", names)) for glob, names in per_file.items()))
            except (ValueError, UnknownRule) as error:  # TOMLDecodeError is a ValueError
                raise ConfigError(f"[tool.tapelab.lint] in pyproject.toml: {error}") from None
    return Config()


def lint_tree(tree: ast.Module, source: str, path: str = "<string>", config: Config = Config()) -> list[Finding]:
    """Findings of every enabled rule in the parsed `tree` of `source`, pragmas applied (flake8 hands over the
    tree it parsed; `lint_source` parses its own)."""
    checks = [check for needs, check in CHECKERS if any(word in source for word in needs)]
    quiet = Suppressions.read(source)
    found = {(f.line, f.col, f.code): replace(f, path=path) for check in checks for f in check(tree)}
    return sorted((f for f in found.values() if config.enabled(f.code) and not quiet.silences(f)),
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


define("TPL001", "syntax-error", """
**What it does**: reports a file, or a notebook cell, that Python cannot parse, at the place the parser
stops (as Ruff reports its own syntax errors); the run exits 1. In a notebook the other cells are still
linted. A file that cannot be read at all (not UTF-8, no permission) is a warning on stderr instead.

**Why is this bad?** Code that does not parse cannot run, and no other rule can look at it: without this
finding the file would pass silently.

**Example**
```python
with tf.GradientTape() as tape
    y = x * x
```

**Use instead**
```python
with tf.GradientTape() as tape:
    y = x * x
```
""")


def _unparsed(error: SyntaxError, path: str, cell: int | None = None) -> Finding:
    return Finding(RULES["syntax-error"].number, "syntax-error", f"does not parse: {error.msg}",
                   error.lineno or 1, max((error.offset or 1) - 1, 0), path, cell)


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


def _notebook(text: str, path: str) -> tuple[_Cells, list[Finding]]:
    cells, broken = _Cells(), []
    for position, cell in enumerate(code_cells(json.loads(text)), start=1):
        body = cell_code(cell_source(cell))
        try:
            ast.parse(body)
        except SyntaxError as error:
            broken.append(_unparsed(error, path, position))
            continue
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

    return replace(finding, cell=cell, line=line, message=_LINE.sub(cite, finding.message), edit=edit)


def lint_text(text: str, path: str, config: Config = Config()) -> tuple[list[Finding], list[str]]:
    """Findings in the text of a `.py` file or (when `path` ends in `.ipynb`) a notebook, a `syntax-error`
    finding for a file or cell that does not parse, and warnings about a notebook that is not JSON."""
    config = config.for_path(path)
    keep = config.enabled("syntax-error")
    if not path.endswith(".ipynb"):
        try:
            return lint_source(text, path, config), []
        except SyntaxError as error:
            return [_unparsed(error, path)] if keep else [], []
        except (ValueError, RecursionError) as error:  # a null byte; nesting too deep for the parser
            return [], [f"{path}: not linted, it cannot be parsed ({error})"]
    try:
        cells, broken = _notebook(text, path)
        found = lint_source(cells.source, path, config)
    except (SyntaxError, ValueError, RecursionError) as error:
        return [], [f"{path}: not linted, it is not a notebook Python can read ({error})"]
    return (broken if keep else []) + [_in_cells(f, cells) for f in found], []


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
