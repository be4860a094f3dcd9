"""The `flake8.extension` entry point: flake8 set-ups pick up the TPL rules without running `tapelab lint`.

flake8 hands a tree plugin the module it parsed (`tree`) and the file's lines; the plugin runs the same
rules on that tree, keeps `# tapelab: ignore[...]` pragmas working (flake8's own `# noqa: TPL101` works as
well), and reports each finding as flake8 wants it: `(line, column, "TPL101 message", type)`.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from importlib.metadata import version

from tapelab.lint.files import lint_tree

__all__ = ["Plugin"]


class Plugin:
    """A flake8 tree plugin for the `tapelab lint` rules (codes TPL1xx and TPL2xx)."""

    name = "tapelab-lint"
    version = version("tapelab")

    def __init__(self, tree: ast.Module, lines: list[str], filename: str = "<string>") -> None:
        self.tree, self.source, self.filename = tree, "".join(lines), filename

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        """One `(line, column, message, type)` per finding; the message starts with the rule's number."""
        for found in lint_tree(self.tree, self.source, self.filename):
            yield found.line, found.col, f"{found.number} {found.message} [{found.code}]", type(self)
