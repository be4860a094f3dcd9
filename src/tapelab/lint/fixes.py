"""`tapelab lint --fix` and `--diff`: apply the edits findings carry to `.py` files and notebooks.

Edits of one round must not overlap (an overlapping one waits); after each round the text is linted again,
since an edit can move or reveal others, until no fixable finding is left or `ROUNDS` have run. A round whose
edits would make a file (or a notebook cell) stop parsing is dropped, and the file is left as the last round
that parsed left it. A notebook's cells are edited in its JSON and the notebook is written back as nbformat
writes it (indent 1, keys in their order, non-ASCII kept), everything but the edited sources untouched.
"""
from __future__ import annotations

import ast
import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tapelab.lint.cells import cell_code
from tapelab.lint.files import Config, cell_source, code_cells, expand, lint_file, lint_text
from tapelab.lint.model import Edit, Finding

__all__ = ["ROUNDS", "Fixed", "apply_edits", "fix_text", "fix_file", "fix_paths"]

ROUNDS = 4


def apply_edits(source: str, edits: Iterable[Edit]) -> tuple[str, int]:
    """`source` with the edits applied, leaving out any that overlaps one before it; and how many were applied."""
    lines = source.split("\n")  # the lines `ast` numbers (its columns are UTF-8 bytes of one line)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + len(lines[line - 1].encode()[:col].decode())

    spans = sorted({(offset(e.line, e.col), offset(e.end_line, e.end_col), e.text) for e in edits})
    parts, at, applied = [], 0, 0
    for start, end, text in spans:
        if start < at:
            continue  # overlaps an edit applied in this round: the next round lints again and retries
        parts += [source[at:start], text]
        at, applied = end, applied + 1
    return "".join(parts) + source[at:], applied


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def _fix_notebook(text: str, findings: list[Finding]) -> tuple[str, int] | None:
    """The notebook `text` with the findings' edits applied to their cells; None if a cell would not parse."""
    notebook, applied = json.loads(text), 0
    cells = code_cells(notebook)
    for position in sorted({f.cell for f in findings}):
        cell = cells[position - 1]
        source, count = apply_edits(cell_source(cell), [f.edit for f in findings if f.cell == position])
        code = cell_code(source)
        if code is not None and not _parses(code):
            return None
        cell["source"] = source.splitlines(keepends=True) if isinstance(cell.get("source"), list) else source
        applied += count
    return json.dumps(notebook, indent=1, ensure_ascii=False) + ("\n" if text.endswith("\n") else ""), applied


def _fix_round(text: str, path: str, findings: list[Finding]) -> tuple[str, int] | None:
    """`text` with one round of the findings' edits applied; None if the result would not parse."""
    if path.endswith(".ipynb"):
        return _fix_notebook(text, findings)
    fixed, applied = apply_edits(text, [f.edit for f in findings])
    return (fixed, applied) if _parses(fixed) else None


@dataclass
class Fixed:
    """One file before and after its fixes, how many findings were fixed, and what remains to report."""

    path: str
    before: str
    after: str
    fixed: int = 0
    findings: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def diff(self) -> str:
        """A unified diff of the fixes: of the file, or of each changed code cell (`nb.ipynb:cell 3`)."""
        if self.path.endswith(".ipynb") and self.before != self.after:
            pairs = zip(code_cells(json.loads(self.before)), code_cells(json.loads(self.after)))
            changes = [(f"{self.path}:cell {n}", cell_source(a), cell_source(b))
                       for n, (a, b) in enumerate(pairs, start=1) if a != b]
        else:
            changes = [(self.path, self.before, self.after)]
        lines = [line for label, a, b in changes for line in difflib.unified_diff(
            a.splitlines(keepends=True), b.splitlines(keepends=True), label, label)]
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def fix_text(text: str, path: str, config: Config = Config()) -> Fixed:
    """The text of a `.py` file or notebook with every fixable finding fixed, and what remains in it."""
    result = Fixed(path, text, text)
    result.findings, result.warnings = lint_text(text, path, config)
    for _ in range(ROUNDS):
        fixable = [f for f in result.findings if f.edit is not None]
        if not fixable:
            break
        done = _fix_round(result.after, path, fixable)
        if done is None:
            n = len(fixable)
            result.warnings.append(f"{path}: not fixed: the fix{'es' if n != 1 else ''} of {n} finding"
                                   f"{'s' if n != 1 else ''} would make it stop parsing (a bug of tapelab lint: "
                                   "please report it)")
            break
        result.after, applied = done
        result.fixed += applied
        result.findings, result.warnings = lint_text(result.after, path, config)
    return result


def fix_file(path: Path, config: Config = Config(), write: bool = False) -> Fixed:
    """`fix_text` on one file (its line endings kept), writing the fixed text back when `write` is set."""
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:  # reported as `tapelab lint` reports it (TPL002), and not fixed
        return Fixed(str(path), "", "", findings=lint_file(path, config)[0],
                     warnings=[f"{path}: not fixed, it cannot be read ({error})"])
    result = fix_text(text, str(path), config)
    if write and result.after != text:
        path.write_bytes(result.after.encode("utf-8"))
    return result


def fix_paths(paths: Iterable[Path], config: Config = Config(), write: bool = False) -> list[Fixed]:
    """`fix_file` on every file under `paths` (as `tapelab lint` finds them)."""
    return [fix_file(path, config, write) for path in expand(paths, config)]
