"""The hidden part of an nbgrader test cell: the lines between `### BEGIN HIDDEN TESTS` and
`### END HIDDEN TESTS` (an unclosed region runs to the end of the cell).

One splitter for every place that must tell the two apart: the executor runs the visible part in
the notebook and the hidden part later, in an execution whose outputs nobody receives; feedback
shows the visible part only.
"""
from __future__ import annotations

import textwrap

__all__ = ["BEGIN", "END", "split"]

BEGIN, END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"


def split(source: str) -> tuple[str, str]:
    """(visible, hidden) source of a cell; the marker lines belong to neither. `hidden` is "" when
    the cell has no hidden region."""
    visible: list[str] = []
    hidden: list[str] = []
    inside = False
    for line in source.split("\n"):
        if BEGIN in line:
            inside = True
        elif END in line:
            inside = False
        else:
            (hidden if inside else visible).append(line)
    hidden_text = textwrap.dedent("\n".join(hidden)).strip("\n")
    return "\n".join(visible).rstrip("\n"), hidden_text
