"""What the user's source shows, for the facts a recorded run cannot: names, bindings and call text.

`blocking_call` finds the call in a function's source that blocks gradients to a name (the exercise
checkers quote it). The scope helpers read only the scope that binds a name (the caller's function,
or its module or notebook cell), never a whole file, so an unrelated `x = x + 1` elsewhere is not read.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import re
import textwrap
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Callable

__all__ = ["Binding", "blocking_call", "bindings", "free_values", "sliced_arguments"]

# ops with no gradient at all, or only integer outputs (`sign` has a gradient, zero; `top_k` values have one)
_NON_DIFF = {"argmax", "argmin", "round", "floor", "ceil", "equal", "not_equal", "greater",
             "greater_equal", "less", "less_equal", "argsort", "unique"}
_STATE = {"assign", "assign_add", "assign_sub", "scatter_update", "scatter_add"}
_NP_NAMES = {"np", "numpy"}


def blocking_call(fn: Callable, name: str) -> tuple[str, str] | None:
    """The first call in `fn`'s source that blocks gradients to `name`, as (catalogue code, call text), if any."""
    return _Blockers.of(fn).blocker(name)


@dataclass
class _Blockers:
    """Calls in a function's source that block gradients, and the names each one consumes."""

    deps: dict[str, set[str]] = field(default_factory=dict)
    calls: list[tuple[str, str, set[str]]] = field(default_factory=list)  # (cause, text, names)

    @classmethod
    def of(cls, fn: Callable) -> "_Blockers":
        found = cls()
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError, SyntaxError, IndentationError):
            return found
        found._scan(tree)
        return found

    def _scan(self, node: ast.AST) -> None:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and getattr(node, "value", None):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            used = self._closure(node.value) | (names if isinstance(node, ast.AugAssign) else set())
            for target in names:
                self.deps[target] = used
        if isinstance(node, ast.Call):
            self._note_call(node)
        for child in ast.iter_child_nodes(node):
            self._scan(child)

    def _closure(self, node: ast.AST) -> set[str]:
        found = set()
        for name in _names(node):
            found |= {name} | self.deps.get(name, set())
        return found

    def _note_call(self, node: ast.Call) -> None:
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        base = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        args = set().union(*(self._closure(a) for a in node.args + [k.value for k in node.keywords]), set())
        cause = None
        if attr == "stop_gradient":
            cause = "stop-gradient"
        elif base in _NP_NAMES or attr == "numpy":
            cause = "numpy-in-path"
            if attr == "numpy" and isinstance(func, ast.Attribute):
                args |= self._closure(func.value)
        elif attr in _NON_DIFF:
            cause = "non-differentiable"
        elif attr == "cast" and re.search(r"int|bool", ast.unparse(node.args[1]) if len(node.args) > 1 else
                                          " ".join(ast.unparse(k.value) for k in node.keywords)):
            cause = "non-differentiable"
        elif attr in _STATE and isinstance(func, ast.Attribute):
            cause = "state-change"
        if cause:
            text = ast.unparse(node)
            self.calls.append((cause, text if len(text) < 60 else text[:57] + "...", args))

    def blocker(self, name: str) -> tuple[str, str] | None:
        plain = name.split("/")[-1].split("[")[0]
        for cause, text, used in self.calls:
            if name in used or plain in used:
                return cause, text
        return None


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def free_values(fn: Callable) -> dict[str, Any]:
    """The globals and closure values `fn` refers to, by name."""
    try:
        found = inspect.getclosurevars(fn)
    except (TypeError, ValueError):
        return {}
    return {**found.globals, **found.nonlocals}


@dataclass(frozen=True)
class Binding:
    """One assignment to a name in a scope: its line, the names it reads and its source text."""

    lineno: int
    reads: frozenset
    text: str
    makes_variable: bool  # the value is a `...Variable(...)` call


def _scope_statements(filename: str, firstlineno: int, is_module: bool) -> list[ast.stmt]:
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except SyntaxError:
        return []
    if is_module:
        return tree.body
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                node.lineno == firstlineno or any(d.lineno == firstlineno for d in node.decorator_list)):
            return node.body
    return []


def _own_nodes(statements: list[ast.stmt]):
    """Every node of the scope, not descending into nested functions, lambdas or classes."""
    stack = list(reversed(statements))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _enclosing_statements(fn: Callable) -> list[ast.stmt]:
    """The body of the function that defines `fn` (its closure's scope), else `fn`'s module or cell."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    try:
        tree = ast.parse("".join(linecache.getlines(code.co_filename)))
    except SyntaxError:
        return []
    line, body, start = code.co_firstlineno, tree.body, 0
    for node in ast.walk(tree):
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno < line <= node.end_lineno
                and node.lineno > start):
            body, start = node.body, node.lineno
    return body


def bindings(frame: FrameType, name: str, fn: Callable | None = None) -> list[Binding]:
    """The assignments to `name` in the scope of `frame`'s code (and of the function that defines `fn`,
    for a name in `fn`'s closure), in source order."""
    code = frame.f_code
    statements = _scope_statements(code.co_filename, code.co_firstlineno, code.co_name == "<module>")
    if fn is not None:
        statements = statements + [s for s in _enclosing_statements(fn) if s not in statements]
    found = []
    for node in _own_nodes(statements):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            reads = _names(value) | ({name} if isinstance(node, ast.AugAssign) else set())
            makes = isinstance(value, ast.Call) and ast.unparse(value.func).endswith("Variable")
            found.append(Binding(node.lineno, frozenset(reads), ast.unparse(node), makes))
    return sorted(set(found), key=lambda b: b.lineno)


def sliced_arguments(frame: FrameType, namespace: dict[str, Any]) -> dict[int, tuple[str, str]]:
    """Sources in the `diagnose(...)` call at `frame` written as a slice of a variable: index -> (text, variable name)."""
    try:
        positions = inspect.getframeinfo(frame).positions
        lines = linecache.getlines(frame.f_code.co_filename)[positions.lineno - 1:positions.end_lineno]
        lines[-1] = lines[-1][:positions.end_col_offset]
        lines[0] = lines[0][positions.col_offset:]
        call = ast.parse("".join(lines).strip(), mode="eval").body
    except (AttributeError, IndexError, TypeError, SyntaxError, ValueError):
        return {}
    if not isinstance(call, ast.Call):
        return {}
    given = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "variables"), None)
    elements = given.values if isinstance(given, ast.Dict) else getattr(given, "elts", [])
    found = {}
    for index, element in enumerate(elements):
        base = element.value if isinstance(element, ast.Subscript) else (
            element.args[0] if isinstance(element, ast.Call) and element.args else None)
        if isinstance(base, ast.Name) and hasattr(namespace.get(base.id), "assign"):
            found[index] = (ast.unparse(element), base.id)
    return found
