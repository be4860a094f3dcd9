"""A notebook's code cell as Python, read as IPython reads it before running it.

IPython turns magics (`%time`, `%%bash`), shell escapes (`!pip install`, `files = !ls`) and help requests
(`tf.GradientTape?`) into Python calls before the kernel runs a cell; a linter must do the same, or it calls
the official tutorials broken. Where IPython is installed (the course's environment) its own transformer,
`IPython.core.inputtransformer2.TransformerManager`, does it; the linter alone depends on nothing, so without
IPython such lines are blanked. Line numbers never change: a finding's `cell N:line` is the line Jupyter shows.

A cell that is not Python at all (`%%bash`, `%%writefile`, `%%html`...) is skipped, as Ruff skips it; the cell
magics whose body is Python (`%%time`, `%%capture`...) have their first line blanked and their body linted. A
line magic whose remainder is one Python statement (`%time y = f(x)`) keeps that statement, the magic's name
blanked, so it is linted in place.
"""
from __future__ import annotations

import functools

__all__ = ["cell_code", "read_cell"]

# Cell magics whose body IPython runs as Python code (Ruff lints these too).
PYTHON_CELL_MAGICS = frozenset({"capture", "debug", "prun", "pypy", "python", "python3", "time", "timeit"})
_STATEMENT_MAGICS = ("%time ", "%timeit ", "%prun ", "%debug ")


def _magic_line(line: str) -> bool:
    """Whether IPython would rewrite `line`: a magic, a shell escape, a help request, `x = !cmd`."""
    text = line.strip()
    if not text or text.startswith("#"):
        return False
    if text[0] in "%!?" or text.endswith("?"):
        return True
    head, sep, rest = text.partition("=")
    return bool(sep) and rest.lstrip()[:1] in ("!", "%") and head.strip().isidentifier()


def _keep_statement(line: str) -> tuple[str, int]:
    """`%time y = f(x)` as `y = f(x)` at the magic's indentation, and how many columns the statement moved."""
    text = line.lstrip()
    for magic in _STATEMENT_MAGICS:
        statement = text[len(magic):].lstrip()
        if text.startswith(magic) and statement and not statement.startswith("-"):
            return line[: len(line) - len(text)] + statement, len(text) - len(statement)
    return line, 0


@functools.lru_cache(maxsize=1)
def _transformer():
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # the linter alone: no IPython
        return None
    return TransformerManager()


def _as_ipython(lines: list[str]) -> list[str]:
    """The lines as IPython's transformer rewrites them, or with magic lines blanked where IPython is absent or
    its rewrite would move lines."""
    transformer = _transformer()
    if transformer is not None:
        try:
            rewritten = transformer.transform_cell("\n".join(lines)).split("\n")
        except (SyntaxError, ValueError, IndexError):  # IPython's own tokenizer gave up: Python reports it
            rewritten = []
        if rewritten and rewritten[-1] == "":
            rewritten.pop()
        if len(rewritten) == len(lines):
            return rewritten
    return ["" if _magic_line(line) else line for line in lines]


def cell_code(source: str) -> str | None:
    """A code cell's source as the Python IPython runs, its lines where Jupyter numbers them; None for a cell
    whose body is not Python (a cell magic such as `%%bash`)."""
    return read_cell(source)[0]


def read_cell(source: str) -> tuple[str | None, dict[int, int]]:
    """`cell_code`, and for each line (1-based) whose statement moved left, by how many columns."""
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = lines[first].lstrip()[2:].split(maxsplit=1)
        if not name or name[0] not in PYTHON_CELL_MAGICS:
            return None, {}
        lines[first] = ""
    kept = [_keep_statement(line) for line in lines]
    lines = [line for line, _ in kept]
    shifts = {number: shift for number, (_, shift) in enumerate(kept, start=1) if shift}
    if not any(_magic_line(line) for line in lines):
        return "\n".join(lines), shifts
    return "\n".join(_as_ipython(lines)), shifts
