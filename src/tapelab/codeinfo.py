"""Facts about a student's function read from its source, used to name the likely mistake.

Everything here is best effort: a function without retrievable source yields empty facts,
and the checkers then fall back on what the returned values show.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["CodeFacts"]


def _is_tape_with(node: ast.With) -> bool:
    return any("GradientTape" in ast.unparse(item.context_expr) for item in node.items)


def _assigned_names(node: ast.AST) -> set[str]:
    names = set()
    for target in getattr(node, "targets", [getattr(node, "target", None)]):
        if target is not None:
            names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


@dataclass
class CodeFacts:
    """What a function's source does, as far as the tape is concerned."""

    found: bool = False
    calls: Counter = field(default_factory=Counter)
    inside_tape: set[str] = field(default_factory=set)
    outside_tape: set[str] = field(default_factory=set)
    tapes: int = 0

    @classmethod
    def of(cls, fn) -> "CodeFacts":
        """Facts for `fn`; empty (found=False) when its source cannot be read."""
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError, SyntaxError, IndentationError):
            return cls()
        facts = cls(found=True)
        facts._visit(tree, in_tape=False)
        return facts

    def _visit(self, node: ast.AST, in_tape: bool) -> None:
        if isinstance(node, ast.With) and _is_tape_with(node):
            self.tapes += 1
            in_tape = True
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            self.calls[name] += 1
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            (self.inside_tape if in_tape else self.outside_tape).update(_assigned_names(node))
        for child in ast.iter_child_nodes(node):
            self._visit(child, in_tape)

    def computed_outside_tape(self, name: str) -> bool:
        """Whether `name` is assigned only outside every `with tf.GradientTape()` block."""
        return self.found and self.tapes > 0 and name in self.outside_tape and name not in self.inside_tape

    def calls_to(self, name: str) -> int:
        return self.calls.get(name, 0)
