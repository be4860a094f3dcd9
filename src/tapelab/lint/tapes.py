"""Where the tapes are in one scope: `with tf.GradientTape(...) as tape` blocks, their flags and the
`gradient`/`jacobian`/`watch` calls made on them. Pure syntax over Python's `ast`: a scope is a module
body or one function body (nested functions are scopes of their own), so names are followed only where
Python binds them.
"""
from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["Scope", "Tape", "Call", "scopes", "statements", "dotted", "flag", "calls_in", "nodes", "GRADIENT_METHODS"]

GRADIENT_METHODS = frozenset({"gradient", "jacobian", "batch_jacobian"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@functools.lru_cache(maxsize=1)
def nodes(tree: ast.Module) -> tuple[ast.AST, ...]:
    """Every node of the module `tree`, in `ast.walk`'s order, walked once however many rules and helpers go
    over the module (the cache holds the last module linted)."""
    return tuple(ast.walk(tree))


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of names and attributes, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def calls_in(node: ast.AST) -> Iterator[ast.Call]:
    """Every call in `node` that belongs to its scope (not inside a nested function or lambda)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Call):
            yield current
        stack.extend(child for child in ast.iter_child_nodes(current) if not isinstance(child, _FUNCTIONS))


def _is_tape_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and (dotted(node.func) or "").split(".")[-1] == "GradientTape"


def flag(call: ast.Call, name: str) -> bool | None:
    """A keyword flag written as a literal True/False; None when absent or not a literal."""
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value.value if isinstance(keyword.value, ast.Constant) else None
    return False if name == "persistent" and not call.args else None


@dataclass
class Tape:
    """One tape object: bound by `as name` (or `name = tf.GradientTape()`), its `with` blocks and calls."""

    name: str
    persistent: bool | None  # None when the flag is not a literal
    bound: ast.AST  # the With (or Assign) that created it
    blocks: list[ast.With] = field(default_factory=list)
    gradients: list[ast.Call] = field(default_factory=list)
    watches: list[ast.Call] = field(default_factory=list)

    def records(self, node: ast.AST) -> bool:
        """Whether `node` lies inside one of this tape's `with` blocks (so the tape records it)."""
        return any(_inside(node, block) for block in self.blocks)


@dataclass(frozen=True)
class Call:
    """A `gradient`-family call on a known tape, its target and its sources as written."""

    tape: Tape
    node: ast.Call
    target: ast.AST | None
    sources: tuple[ast.AST, ...]


def _inside(node: ast.AST, outer: ast.AST) -> bool:
    start, end = (outer.lineno, outer.col_offset), (outer.end_lineno, outer.end_col_offset)
    return start <= (node.lineno, node.col_offset) and (node.end_lineno, node.end_col_offset) <= end


@dataclass
class Scope:
    """A module or function body, with the tapes bound in it, in source order."""

    node: ast.AST
    body: list[ast.stmt]
    tapes: list[Tape]

    def gradient_calls(self) -> Iterator[Call]:
        """Every `tape.gradient/jacobian/batch_jacobian(target, sources)` call on a tape of this scope."""
        for tape in self.tapes:
            for node in tape.gradients:
                args = list(node.args) + [k.value for k in node.keywords if k.arg in ("target", "sources")]
                target = args[0] if args else None
                source = args[1] if len(args) > 1 else None
                sources = tuple(source.elts) if isinstance(source, (ast.List, ast.Tuple)) else (
                    (source,) if source is not None else ())
                yield Call(tape, node, target, sources)


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of one scope in source order, compound ones before their bodies; no nested defs."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(stmt, name, None) or []
            for child in children:
                if isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    yield from statements(child.body)
                elif isinstance(child, ast.stmt):
                    yield from statements([child])


def _scope(node: ast.AST, body: list[ast.stmt]) -> Scope:
    tapes: list[Tape] = []
    current: dict[str, Tape] = {}
    for stmt in statements(body):
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                expr, var = item.context_expr, item.optional_vars
                if _is_tape_call(expr) and isinstance(var, ast.Name):
                    current[var.id] = Tape(var.id, flag(expr, "persistent"), stmt, [stmt])
                    tapes.append(current[var.id])
                elif isinstance(expr, ast.Name) and expr.id in current:
                    current[expr.id].blocks.append(stmt)
        elif isinstance(stmt, ast.Assign) and _is_tape_call(stmt.value):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    current[target.id] = Tape(target.id, flag(stmt.value, "persistent"), stmt)
                    tapes.append(current[target.id])
        elif isinstance(stmt, (ast.Assign, ast.For)):
            # a name rebound to something else (`tape, loss = record()`) no longer holds the tape it held
            for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        current.pop(name.id, None)
        for call in _own_calls(stmt):
            if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
                tape = current.get(call.func.value.id)
                if tape is not None and call.func.attr in GRADIENT_METHODS:
                    tape.gradients.append(call)
                elif tape is not None and call.func.attr == "watch":
                    tape.watches.append(call)
    return Scope(node, body, tapes)


def _own_calls(stmt: ast.stmt) -> Iterator[ast.Call]:
    """The calls of a statement itself, not of the statements nested in its body."""
    if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
        return
    parts: list[ast.AST] = []
    for name, value in ast.iter_fields(stmt):
        if name in ("body", "orelse", "finalbody", "handlers", "cases"):
            continue
        parts.extend(value if isinstance(value, list) else [value])
    for part in parts:
        if isinstance(part, ast.AST):
            yield from sorted(calls_in(part), key=lambda c: (c.lineno, c.col_offset))


@functools.lru_cache(maxsize=1)
def scopes(tree: ast.Module) -> tuple[Scope, ...]:
    """The module body and every function body in it, each as a scope with its tapes (built once per module,
    however many rule families read them; the cache holds the last module linted)."""
    return (_scope(tree, tree.body), *(_scope(node, node.body) for node in nodes(tree)
                                       if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))))
