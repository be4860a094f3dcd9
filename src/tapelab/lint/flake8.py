"""The `flake8.extension` entry point: flake8 set-ups pick up the TPL rules without running `tapelab lint`.

flake8 hands a tree plugin the module it parsed (`tree`) and the file's lines; the plugin runs the same
rules on that tree and reports each finding as flake8 wants it: `(line, column, "TPL101 message", type)`.
The comments that silence a finding are read as `tapelab lint` reads them (`suppress`): flake8 applies a
line's `# noqa` and skips a `# flake8: noqa` file itself, and the plugin adds what flake8 does not know,
`# tapelab: noqa`, `# ruff: noqa` and the `# tapelab: ignore[...]` pragmas. Under `--disable-noqa` only
the pragmas apply, as flake8 then ignores every `noqa`.
"""
from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from importlib.metadata import version

from tapelab.lint.files import lint_tree

__all__ = ["Plugin"]


class Plugin:
    """A flake8 tree plugin for the `tapelab lint` rules (codes TPL1xx and TPL2xx)."""

    name = "tapelab-lint"
    version = version("tapelab")
    noqa = True  # False under flake8's --disable-noqa (parse_options)

    def __init__(self, tree: ast.Module, lines: list[str], filename: str = "<string>") -> None:
        self.tree, self.source, self.filename = tree, "".join(lines), filename

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        """flake8 hands every plugin its options once: keep whether `noqa` comments count."""
        cls.noqa = not options.disable_noqa

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        """One `(line, column, message, type)` per finding; the message starts with the rule's number."""
        for found in lint_tree(self.tree, self.source, self.filename, noqa=self.noqa):
            yield found.line, found.col, f"{found.number} {found.message} [{found.code}]", type(self)
