"""Generate mutants of an answer: the transforms of transforms.py applied one site at a time.

Each transform yields one mutant per applicable site, named `<kind>@<line>:<col>` after the node it
changes, or the operator token for operator mutations (line 1-based, column 0-based as in `ast`,
both in the answer without solution markers). Only sites inside the nbgrader solution region are
mutated: the rest is the stub students are given. Nothing here imports TensorFlow.
"""
from __future__ import annotations

import ast
import copy
import difflib
from dataclasses import dataclass

from .transforms import TAPE_KINDS, TRANSFORMS

__all__ = ["Mutant", "generate", "TAPE_KINDS", "base_kind"]


@dataclass(frozen=True)
class Mutant:
    """One mutated answer: its name, kind (name without position), source and a one-line diff."""

    name: str
    code: str
    diff: str

    @property
    def kind(self) -> str:
        return self.name.split("@", 1)[0]

    @property
    def tape_specific(self) -> bool:
        return base_kind(self.kind) in TAPE_KINDS


def base_kind(kind: str) -> str:
    """`wrong_target(y)` -> `wrong_target`."""
    return kind.split("(", 1)[0]


def generate(code: str, region: set[int] | None = None) -> list[Mutant]:
    """Every mutant of `code` whose site lies on a line in `region` (all lines if None), deduplicated.

    Mutants are in source order (line, column, kind); one whose code equals another's, or the
    reference's, is dropped, the first name kept.
    """
    tree = ast.parse(code)
    order = {id(node): i for i, node in enumerate(ast.walk(tree))}
    reference = ast.unparse(tree)
    lines = code.splitlines()
    sites = [(site[0], site[1], site[2], _position(lines, *site[1:2], *site[3:]))
             for transform in TRANSFORMS for site in transform(tree)]
    sites = [s for s in sites if region is None or s[3][0] in region]
    sites.sort(key=lambda s: (s[3], s[0]))
    seen, mutants = {reference}, []
    for kind, node, edit, (line, col) in sites:
        mutated = copy.deepcopy(tree)
        nodes = list(ast.walk(mutated))
        edit(nodes[order[id(node)]], _parents(mutated))
        text = ast.unparse(ast.fix_missing_locations(mutated))
        if text in seen:
            continue
        seen.add(text)
        mutants.append(Mutant(f"{kind}@{line}:{col}", text + "\n", _diff(reference, text)))
    names = [m.name for m in mutants]
    assert len(names) == len(set(names)), f"duplicate mutant names: {names}"
    return mutants


def _position(lines: list[str], node: ast.AST, after: ast.AST | None = None) -> tuple[int, int]:
    """Where a site is: an operator's own token (the first after `after`, by default a `BinOp`'s
    left operand or an `AugAssign`'s target), else the node's start."""
    if after is None and isinstance(node, ast.BinOp):
        after = node.left
    elif after is None and isinstance(node, ast.AugAssign):
        after = node.target
    if after is None:
        return node.lineno, node.col_offset
    line, col = after.end_lineno, after.end_col_offset
    while line <= len(lines):
        text = lines[line - 1]
        while col < len(text) and text[col] in " \t)\\":
            col += 1
        if col < len(text) and text[col] != "#":
            return line, col
        line, col = line + 1, 0
    return node.lineno, node.col_offset


def _diff(before: str, after: str) -> str:
    """The changed lines of the unparsed code, on one line: `-old | +new`."""
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return " | ".join(l.rstrip() for l in lines if l[:1] in "+-" and l[:3] not in ("+++", "---"))


def _parents(tree: ast.AST) -> dict:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
