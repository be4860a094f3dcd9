"""How a reference to a class is used in one module: whether it can break at run time or only names it.

Keras 3 still defines some Keras 2 names as stand-ins that raise only when used for real: every
`optimizers.legacy.X` is one class whose constructor raises. Comparing with it (`==`, `is`), testing
`isinstance`/`issubclass` against it, or naming it in a type annotation works, and is merely vacuous; building
it, subclassing it, or handing it on (as an argument, in a list or dict, returned) is what breaks. A name bound
to such a reference (`ADAM = tf.keras.optimizers.legacy.Adam`, or imported from a legacy module) is judged by
its own uses in the module.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator

from tapelab.lint.tapes import nodes

__all__ = ["Uses"]

_WRAPPERS = (ast.Tuple, ast.Subscript, ast.BinOp, ast.Starred)  # `(A, B)`, `List[A]`, `A | B`, `*A`


class Uses:
    """The parents of every node of `tree`, and the loads of every name, to judge a reference's uses."""

    def __init__(self, tree: ast.Module):
        self.parents: dict[int, ast.AST] = {}
        self.loads: dict[str, list[ast.Name]] = {}
        for node in nodes(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.loads.setdefault(node.id, []).append(node)

    def chain(self, node: ast.AST) -> ast.AST:
        """The whole attribute chain `node` begins (`legacy` -> `legacy.Adam`)."""
        while isinstance(parent := self.parents.get(id(node)), ast.Attribute) and parent.value is node:
            node = parent
        return node

    def breaks(self, node: ast.AST, depth: int = 0) -> bool:
        """Whether the reference `node` is used in a way that runs it for real (see the module docstring)."""
        child, parent = node, self.parents.get(id(node))
        while isinstance(parent, _WRAPPERS):
            child, parent = parent, self.parents.get(id(parent))
        if isinstance(parent, ast.Compare) or self._annotation(child, parent):
            return False
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in (
                "isinstance", "issubclass") and child in parent.args[1:]:
            return False
        if isinstance(parent, ast.Assign) and parent.value is child and depth < 3:
            names = [t.id for t in parent.targets if isinstance(t, ast.Name)]
            if len(names) == len(parent.targets):  # an alias: judged by what the module does with it
                return any(self.breaks(self.chain(use), depth + 1) for name in names for use in self.loads.get(name, []))
        return True

    def imported(self, node: ast.ImportFrom) -> Iterator[str]:
        """The names an import binds that the module goes on to use in a way that breaks."""
        for alias in node.names:
            name = alias.asname or alias.name
            if any(self.breaks(self.chain(use)) for use in self.loads.get(name, [])):
                yield name

    def _annotation(self, child: ast.AST, parent: ast.AST | None) -> bool:
        while isinstance(parent, _WRAPPERS + (ast.Attribute,)):
            child, parent = parent, self.parents.get(id(parent))
        return (isinstance(parent, ast.arg) and parent.annotation is child) or (
            isinstance(parent, ast.AnnAssign) and parent.annotation is child) or (
            isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and parent.returns is child)
